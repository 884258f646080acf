package io.sparkreplicate.files

import java.io.Closeable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkreplicate.{DecodeLimits, ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.Envelope

/**
 * The landed messages of one split, one at a time. The current message is the slice
 * `[offset, offset + length)` of `bytes`, valid until the next call to `next()`.
 *
 * A bad frame makes `next()` throw a [[MalformedMessageException]] and leaves no current
 * message (`length` is -1). A frame that cannot be right (a negative length, or one past the end
 * of the file) ends the split, since no later frame can be trusted: `next()` then returns false.
 * An intact frame that is only too large is skipped, and reading goes on after it.
 */
trait MessageSource extends Closeable {
  def next(): Boolean
  def bytes: Array[Byte]
  def offset: Int
  def length: Int
  /** Byte offset of the current container block, or of the current frame in the file. */
  def position: Long
  /** Index of the current record within its container block; 0 for other framings. */
  def index: Long
  /** Kafka coordinates of the current record; absent fields are flagged in the record. */
  def record: LandingRecord
  def describePosition: String
}

object MessageSource {
  private val AvroMagic = Array[Byte]('O', 'b', 'j', 1)

  def open(split: FileSplit, conf: Configuration, valueField: String, limits: DecodeLimits): MessageSource = {
    val path = new Path(split.path)
    // An empty file holds no message in any framing (as in Spark's file sources).
    val framing = if (split.fileLength == 0) Framing.Auto
      else if (split.framing == Framing.Auto) sniff(path, conf) else split.framing
    framing match {
      case Framing.AvroContainer => new AvroContainerSource(split, conf, valueField, limits.maxMessageBytes)
      case Framing.LengthPrefixed => new LengthPrefixedSource(split, conf, limits.maxMessageBytes)
      case Framing.WholeMessage => new WholeMessageSource(split, conf, limits.maxMessageBytes)
      case Framing.Auto => EmptySource
    }
  }

  /**
   * Tells the framing from the first bytes: `Obj\u0001` is an Avro container, `atMSG` at byte 0 a
   * bare message, `atMSG` at byte 4 a length-prefixed stream. An empty file is [[Framing.Auto]]
   * (it holds no message in any framing).
   */
  def sniff(path: Path, conf: Configuration): Framing = {
    val head = new Array[Byte](9)
    val in = path.getFileSystem(conf).open(path)
    val read = try readUpTo(in, head, head.length) finally in.close()
    if (read == 0) Framing.Auto
    else if (read >= 4 && head.take(4).sameElements(AvroMagic)) Framing.AvroContainer
    else if (Envelope.startsWithMagic(head, 0, read)) Framing.WholeMessage
    else if (read >= 9 && Envelope.startsWithMagic(head, 4, 5)) Framing.LengthPrefixed
    else throw new ReplicateException(ErrorId.UnknownFraming, s"`$path` is neither an Avro " +
      "container, a Replicate message nor a length-prefixed stream of them (it starts with " +
      s"${head.take(read).map(b => f"${b & 0xff}%02x").mkString(" ")}); set the option `framing`")
  }

  /** Reads up to `length` bytes, fewer only at the end of the stream. */
  private[files] def readUpTo(in: java.io.InputStream, buf: Array[Byte], length: Int): Int = {
    var total = 0
    var n = 0
    while (total < length && { n = in.read(buf, total, length - total); n > 0 }) total += n
    total
  }

  private object EmptySource extends MessageSource {
    def next(): Boolean = false
    def bytes: Array[Byte] = Array.emptyByteArray
    def offset: Int = 0
    def length: Int = 0
    def position: Long = 0
    def index: Long = 0
    val record = new LandingRecord
    def describePosition: String = "empty file"
    def close(): Unit = ()
  }

  private[files] def badFrame(detail: String) = new MalformedMessageException(ErrorId.BadFrame, detail)
}
