package io.sparkreplicate.files

import scala.util.control.NonFatal

import org.apache.avro.file.{DataFileReader, SeekableInput}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, Path}

import io.sparkreplicate.{ErrorId, ReplicateException}

/**
 * Reads the records of an Avro container file whose blocks start inside the split, the same
 * rule Hadoop and Spark use, so that every block is read by exactly one split. At most one
 * block is held in memory.
 */
final class AvroContainerSource(split: FileSplit, conf: Configuration, valueField: String)
  extends MessageSource {

  private val reader = {
    val path = new Path(split.path)
    val input = new HadoopSeekableInput(path.getFileSystem(conf).open(path), split.fileLength)
    try {
      val r = new DataFileReader[LandingRecord](input, new LandingRecordReader(valueField, split.path))
      r.sync(split.start)
      r
    } catch {
      case e: ReplicateException => input.close(); throw e
      case NonFatal(e) => input.close(); throw corrupt(s"cannot read the container header: ${e.getMessage}", e)
    }
  }
  private val end = split.start + split.length
  val record = new LandingRecord
  private var blockStart = -1L
  private var indexInBlock = -1L

  override def next(): Boolean = {
    val more = try reader.hasNext && !reader.pastSync(end) catch {
      case NonFatal(e) => throw corrupt(s"block after byte ${reader.previousSync()} is corrupt: ${e.getMessage}", e)
    }
    if (more) {
      try reader.next(record) catch {
        case e: ReplicateException => throw e
        case NonFatal(e) => throw corrupt(s"record $indexInBlock of the block at byte " +
          s"${reader.previousSync()} does not decode: ${e.getMessage}", e)
      }
      if (reader.previousSync() != blockStart) { blockStart = reader.previousSync(); indexInBlock = 0 }
      else indexInBlock += 1
    }
    more
  }

  override def bytes: Array[Byte] = record.value.array()
  override def offset: Int = record.value.arrayOffset() + record.value.position()
  override def length: Int = if (record.valueIsNull) 0 else record.value.remaining()
  override def position: Long = blockStart
  override def index: Long = indexInBlock
  override def describePosition: String = s"container block at byte $blockStart, record $indexInBlock"
  override def close(): Unit = reader.close()

  private def corrupt(detail: String, cause: Throwable) =
    new ReplicateException(ErrorId.CorruptFile, s"${split.path}: $detail", cause)
}

/** Avro's random-access input over a Hadoop stream. */
private final class HadoopSeekableInput(in: FSDataInputStream, fileLength: Long) extends SeekableInput {
  override def seek(p: Long): Unit = in.seek(p)
  override def tell(): Long = in.getPos
  override def length(): Long = fileLength
  override def read(b: Array[Byte], off: Int, len: Int): Int = in.read(b, off, len)
  override def close(): Unit = in.close()
}
