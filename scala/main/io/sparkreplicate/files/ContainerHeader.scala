package io.sparkreplicate.files

import java.nio.charset.StandardCharsets

import org.apache.avro.Schema
import org.apache.hadoop.fs.FSDataInputStream

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.SliceDecoder

/**
 * The header of an Avro object container file: `Obj\u0001`, a map of metadata (the schema and the
 * codec), and the 16-byte sync marker that ends the header and every block.
 *
 * @param length bytes of the header, sync marker included: the first block starts there
 */
final case class ContainerHeader(schema: Schema, codec: String, sync: Array[Byte], length: Int)

object ContainerHeader {
  val Magic: Array[Byte] = Array('O', 'b', 'j', 1)
  val SyncSize = 16
  /** Headers are small; one larger than this is not a container file we can trust. */
  private val MaxHeaderBytes = 16 << 20

  /**
   * Reads the header, growing the read until it is complete or the file ends; a file that has
   * become shorter than when the query was planned is read as far as it goes.
   */
  def read(in: FSDataInputStream, fileLength: Long, path: String): ContainerHeader = {
    val most = math.min(fileLength, MaxHeaderBytes).toInt
    var size = math.min(most, 64 * 1024)
    while (true) {
      val bytes = new Array[Byte](size)
      in.seek(0L)
      val read = MessageSource.readUpTo(in, bytes, size)
      try return parse(java.util.Arrays.copyOf(bytes, read), path)
      catch {
        case e: MalformedMessageException if e.errorId == ErrorId.Truncated && read == size && size < most =>
          size = math.min(most.toLong, size.toLong * 4).toInt
        case e: MalformedMessageException if read < size =>
          throw corrupt(path, s"it is shorter than when the query was planned: ${e.detail}", e)
        case e: MalformedMessageException => throw corrupt(path, s"its header is unreadable: ${e.detail}", e)
      }
    }
    throw new IllegalStateException("unreachable")
  }

  private def parse(bytes: Array[Byte], path: String): ContainerHeader = {
    if (bytes.length < Magic.length || !bytes.take(Magic.length).sameElements(Magic)) {
      throw corrupt(path, "it does not start with the Avro container magic `Obj\\u0001`", null)
    }
    val in = new SliceDecoder().reset(bytes, Magic.length, bytes.length - Magic.length)
    in.fieldIndex = SliceDecoder.ContainerMetadata
    val meta = Map.newBuilder[String, Array[Byte]]
    var n = in.readMapStart()
    while (n > 0) {
      var i = 0L
      while (i < n) {
        val key = in.readString()
        val length = in.readLength()
        val value = java.util.Arrays.copyOfRange(bytes, in.arrayOffset, in.arrayOffset + length)
        in.skipFixed(length)
        meta += key -> value
        i += 1
      }
      n = in.mapNext()
    }
    val sync = new Array[Byte](SyncSize)
    in.readFixed(sync, 0, SyncSize)
    val entries = meta.result()
    val schemaJson = entries.getOrElse("avro.schema", throw corrupt(path, "its header has no `avro.schema`", null))
    val schema = try new Schema.Parser().parse(new String(schemaJson, StandardCharsets.UTF_8)) catch {
      case e: RuntimeException => throw corrupt(path, s"its header's schema does not parse: ${e.getMessage}", e)
    }
    val codec = entries.get("avro.codec").map(new String(_, StandardCharsets.UTF_8)).getOrElse("null")
    ContainerHeader(schema, codec, sync, Magic.length + in.position)
  }

  private[files] def corrupt(path: String, detail: String, cause: Throwable) =
    new ReplicateException(ErrorId.CorruptFile, s"$path is not a readable Avro container file: $detail", cause)
}
