package io.sparkreplicate.files

import java.io.IOException

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.SliceDecoder

/**
 * Reads the records of an Avro object container file block by block, with the split rule of
 * Avro, Hadoop and Spark: a block belongs to the split in which the sync marker before it starts,
 * so every block is read by exactly one split.
 *
 * Every block's size is checked against the bytes left in the file and against
 * `maxBlockBytes` before it is read, its trailing sync marker is verified, and decompression is
 * bounded; a block that fails any check makes the file corrupt ([[ErrorId.CorruptFile]]). At most
 * one block is in memory, and messages are handed out as slices of it, never copied.
 */
final class AvroContainerSource(split: FileSplit, conf: Configuration, valueField: String, maxBlockBytes: Int)
  extends MessageSource {
  import ContainerHeader.SyncSize

  private val in = {
    val path = new Path(split.path)
    path.getFileSystem(conf).open(path)
  }
  private val fileLength = split.fileLength
  private val end = split.start + split.length
  private val header = try ContainerHeader.read(in, fileLength, split.path) catch { case e: Throwable => in.close(); throw e }
  private val codec = BlockCodec(header.codec).getOrElse {
    in.close()
    throw ContainerHeader.corrupt(split.path, s"its codec `${header.codec}` is not supported", null)
  }
  val record = new LandingRecord
  private val reader = try new LandingRecordReader(header.schema, valueField, split.path, record) catch {
    case e: Throwable => in.close(); throw e
  }
  private val decoder = new SliceDecoder
  private var compressed = new Array[Byte](64 * 1024)
  private val small = new Array[Byte](32)
  private var markerStart = firstMarker()
  private var blockStart = -1L
  private var leftInBlock = 0L
  private var indexInBlock = -1L

  override def next(): Boolean = {
    while (leftInBlock == 0) {
      if (blockStart >= 0 && !decoder.isEnd) throw corrupt(
        s"the block at byte $blockStart has ${decoder.remaining} bytes after its last record")
      if (!nextBlock()) return false
    }
    try reader.read(decoder) catch {
      case e: MalformedMessageException => throw corrupt(s"record ${indexInBlock + 1} of the block at " +
        s"byte $blockStart does not decode with the file's schema: ${e.detail}", e)
    }
    record.buffer = codec.output
    leftInBlock -= 1
    indexInBlock += 1
    true
  }

  /** Loads the block after `markerStart`, if this split owns it. */
  private def nextBlock(): Boolean = {
    if (markerStart < 0 || markerStart >= end || markerStart + SyncSize >= fileLength) return false
    val at = markerStart + SyncSize
    if (in.getPos != at) in.seek(at)
    val count = readVarLong(at)
    val size = readVarLong(at)
    val dataAt = in.getPos
    if (count < 0 || size < 0) throw corrupt(s"the block at byte $at declares $count records of $size bytes")
    if (dataAt + size + SyncSize > fileLength) throw corrupt(s"the block at byte $at declares $size bytes " +
      s"but only ${math.max(0, fileLength - dataAt - SyncSize)} are left before the end of the file: it is truncated")
    if (size > maxBlockBytes) throw corrupt(s"the block at byte $at has $size bytes, more than `maxMessageBytes` ($maxBlockBytes)")
    if (size > compressed.length) compressed = new Array[Byte](math.max(size.toInt, compressed.length * 2).min(maxBlockBytes))
    readAt(dataAt, compressed, size.toInt)
    readAt(dataAt + size, small, SyncSize)
    if (!java.util.Arrays.equals(small, 0, SyncSize, header.sync, 0, SyncSize)) {
      throw corrupt(s"the block at byte $at is not followed by the file's sync marker")
    }
    val length = try codec.decompress(compressed, size.toInt, maxBlockBytes) catch {
      case e: BlockCodec.TooLarge => throw corrupt(s"the block at byte $at decompresses to more than " +
        s"`maxMessageBytes` (${e.limit})", e)
      case e @ (_: IllegalArgumentException | _: IOException) =>
        throw corrupt(s"the block at byte $at does not decompress (${header.codec}): ${e.getMessage}", e)
    }
    decoder.reset(codec.output, 0, length)
    blockStart = at
    leftInBlock = count
    indexInBlock = -1
    markerStart = dataAt + size
    true
  }

  /** Start of the first sync marker at or after the split's start; -1 when none before its end. */
  private def firstMarker(): Long = {
    val headerMarker = header.length - SyncSize
    if (split.start <= headerMarker) return headerMarker
    val chunk = new Array[Byte](64 * 1024)
    var position = split.start
    while (position < end && position + SyncSize <= fileLength) {
      val wanted = math.min(chunk.length.toLong, fileLength - position).toInt
      if (in.getPos != position) in.seek(position)
      val n = MessageSource.readUpTo(in, chunk, wanted)
      var i = 0
      while (i + SyncSize <= n) {
        if (java.util.Arrays.equals(chunk, i, i + SyncSize, header.sync, 0, SyncSize)) return position + i
        i += 1
      }
      // Blocks would have been here: the file lost them after the query was planned.
      if (n < wanted) throw corrupt(s"it ends at byte ${position + n}, before the ${fileLength} bytes " +
        "it had when the query was planned")
      position += n - SyncSize + 1
    }
    -1L
  }

  /** An Avro zig-zag varint straight from the (buffered) stream. */
  private def readVarLong(blockAt: Long): Long = {
    var value = 0L
    var shift = 0
    var b = 0
    while ({
      b = in.read()
      if (b < 0) throw corrupt(s"the file ends inside the block header at byte $blockAt: it is truncated")
      if (shift > 63) throw corrupt(s"the block header at byte $blockAt is unreadable")
      value |= (b & 0x7fL) << shift
      shift += 7
      (b & 0x80) != 0
    }) ()
    (value >>> 1) ^ -(value & 1)
  }

  /**
   * Reads with the stream's own position, seeking only when it jumps: blocks are read in order,
   * and a positioned read on Hadoop's checksummed local file system opens the file anew each time.
   */
  private def readAt(position: Long, into: Array[Byte], length: Int): Unit = {
    if (in.getPos != position) in.seek(position)
    try in.readFully(into, 0, length) catch {
      case e: java.io.EOFException => throw corrupt(s"it ended while reading $length bytes at byte $position: " +
        "it is shorter than when the query was planned", e)
    }
  }

  override def bytes: Array[Byte] = record.buffer
  override def offset: Int = record.valueOffset
  override def length: Int = record.valueLength
  override def position: Long = blockStart
  override def index: Long = indexInBlock
  override def describePosition: String = s"container block at byte $blockStart, record $indexInBlock"
  override def close(): Unit = in.close()

  private def corrupt(detail: String, cause: Throwable = null) =
    new ReplicateException(ErrorId.CorruptFile, s"${split.path}: $detail", cause)
}
