package io.sparkreplicate.files

import java.io.ByteArrayInputStream
import java.nio.ByteBuffer
import java.util.zip.{CRC32, DataFormatException, Inflater}

import com.github.luben.zstd.ZstdInputStream
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorInputStream
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream
import org.xerial.snappy.Snappy

/**
 * Decompresses container blocks into a reused buffer, never beyond `maxBytes`: a block whose
 * content would be larger is refused before (snappy, whose header states the size) or while
 * (deflate, zstandard, bzip2, xz) it is inflated, so a corrupt or hostile block cannot exhaust
 * memory. These are the codecs Avro defines; the libraries are the ones Spark ships.
 */
sealed trait BlockCodec {
  /** Decompressed bytes are `[0, returned length)` of `output`. */
  def decompress(input: Array[Byte], length: Int, maxBytes: Int): Int
  def output: Array[Byte]
}

object BlockCodec {
  final class TooLarge(val limit: Int) extends RuntimeException(s"decompressed block exceeds $limit bytes")

  def apply(name: String): Option[BlockCodec] = name match {
    case "null" => Some(new Identity)
    case "deflate" => Some(new Deflate)
    case "snappy" => Some(new SnappyBlocks)
    case "zstandard" => Some(new Streaming(new ZstdInputStream(_)))
    case "bzip2" => Some(new Streaming(new BZip2CompressorInputStream(_)))
    case "xz" => Some(new Streaming(new XZCompressorInputStream(_)))
    case _ => None
  }

  private abstract class Growing extends BlockCodec {
    var output: Array[Byte] = new Array[Byte](64 * 1024)
    protected def ensure(size: Int, maxBytes: Int): Unit = {
      if (size > maxBytes) throw new TooLarge(maxBytes)
      if (size > output.length) output = java.util.Arrays.copyOf(output, math.max(size, math.min(maxBytes, output.length * 2)))
    }
  }

  private final class Identity extends BlockCodec {
    var output: Array[Byte] = Array.emptyByteArray
    def decompress(input: Array[Byte], length: Int, maxBytes: Int): Int = { output = input; length }
  }

  /** Avro's deflate is raw deflate (no zlib header). */
  private final class Deflate extends Growing {
    private val inflater = new Inflater(true)
    def decompress(input: Array[Byte], length: Int, maxBytes: Int): Int = {
      inflater.reset()
      inflater.setInput(input, 0, length)
      var size = 0
      while (!inflater.finished()) {
        if (size == output.length) ensure(size + 1, maxBytes)
        val n = try inflater.inflate(output, size, output.length - size) catch {
          case e: DataFormatException => throw new IllegalArgumentException(s"bad deflate data: ${e.getMessage}", e)
        }
        if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
          throw new IllegalArgumentException("deflate data ends early")
        }
        size += n
      }
      size
    }
  }

  /** Avro's snappy blocks end with the CRC32 of the uncompressed data, big-endian. */
  private final class SnappyBlocks extends Growing {
    private val crc = new CRC32
    def decompress(input: Array[Byte], length: Int, maxBytes: Int): Int = {
      if (length < 4) throw new IllegalArgumentException("snappy block shorter than its checksum")
      val size = Snappy.uncompressedLength(input, 0, length - 4)
      ensure(size, maxBytes)
      Snappy.uncompress(input, 0, length - 4, output, 0)
      crc.reset()
      crc.update(output, 0, size)
      if (ByteBuffer.wrap(input, length - 4, 4).getInt != crc.getValue.toInt) {
        throw new IllegalArgumentException("snappy block checksum mismatch")
      }
      size
    }
  }

  /** Codecs read as a stream, stopped as soon as the output would pass the limit. */
  private final class Streaming(open: java.io.InputStream => java.io.InputStream) extends Growing {
    def decompress(input: Array[Byte], length: Int, maxBytes: Int): Int = {
      val in = open(new ByteArrayInputStream(input, 0, length))
      try {
        var size = 0
        var n = 0
        while (n >= 0) {
          if (size == output.length) ensure(size + 1, maxBytes)
          n = in.read(output, size, output.length - size)
          if (n > 0) size += n
        }
        size
      } finally in.close()
    }
  }
}
