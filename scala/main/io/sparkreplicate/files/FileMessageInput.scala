package io.sparkreplicate.files

import java.io.{FileNotFoundException, IOException}

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{DecodeLimits, ErrorId, ReplicateException}
import io.sparkreplicate.catalyst.{MessageInput, ReadCounters}
import FileMessageInput.{ignored, isFileProblem}

/**
 * The landed messages of a task's splits, file after file. A file gone since planning, or one
 * that cannot be read as landed messages, is skipped and counted under `ignoreMissingFiles` /
 * `ignoreCorruptFiles` (messages already returned from it stay, as in Spark's file sources), and
 * otherwise fails the task naming it.
 */
final class FileMessageInput(splits: Seq[FileSplit], conf: Configuration, options: FileOptions,
    limits: DecodeLimits, counters: ReadCounters) extends MessageInput {
  private var remaining = splits.toList
  private var split: FileSplit = _
  private var source: MessageSource = _
  private var fileName: UTF8String = _

  override def next(): Boolean = {
    while (true) {
      if (source == null && !openNext()) return false
      val more = try source.next() catch { case e: Exception if isFileProblem(e) => skipOrFail(e) }
      if (more) return true
      if (source != null) { source.close(); source = null }
    }
    false
  }

  override def bytes: Array[Byte] = source.bytes
  override def offset: Int = source.offset
  override def length: Int = source.length
  override def describePosition: String = s"${split.path}, ${source.describePosition}"

  override def writeSource(row: InternalRow): Unit = {
    val r = source.record
    row.update(0, fileName)
    row.setLong(1, source.position)
    row.setLong(2, source.index)
    if (r.hasTopic) row.update(3, UTF8String.fromBytes(java.util.Arrays.copyOfRange(r.buffer, r.topicOffset,
      r.topicOffset + r.topicLength))) else row.setNullAt(3)
    if (r.hasPartition) row.setInt(4, r.partition) else row.setNullAt(4)
    if (r.hasOffset) row.setLong(5, r.offset) else row.setNullAt(5)
    if (r.hasTimestamp) row.setLong(6, r.timestamp * 1000L) else row.setNullAt(6)
    if (r.hasKey) row.update(7, java.util.Arrays.copyOfRange(r.buffer, r.keyOffset, r.keyOffset + r.keyLength))
    else row.setNullAt(7)
  }

  /** Opens the next split's file; a file that cannot be opened is skipped or fails the task. */
  private def openNext(): Boolean = {
    while (source == null) remaining match {
      case Nil => return false
      case next :: rest =>
        remaining = rest
        split = next
        fileName = UTF8String.fromString(next.path)
        try source = MessageSource.open(next, conf, options.valueField, limits) catch {
          case e: Exception if isFileProblem(e) => skipOrFail(e)
        }
    }
    true
  }

  /** False once the file is skipped; throws when it may not be. */
  private def skipOrFail(e: Exception): Boolean = {
    if (source != null) { source.close(); source = null }
    if (ignored(e, options)) {
      counters.skippedFiles += split.path
      false
    } else if (e.isInstanceOf[FileNotFoundException]) {
      throw new ReplicateException(ErrorId.FileMissing, s"${split.path} was listed when the query " +
        "was planned but is gone; re-run the query, or set `ignoreMissingFiles` to skip such files", e)
    } else e match {
      case r: ReplicateException => throw r
      case _ => throw new ReplicateException(ErrorId.CorruptFile, s"${split.path} cannot be read: $e. " +
        "Set `ignoreCorruptFiles` to skip unreadable files", e)
    }
  }

  override def close(): Unit = if (source != null) { source.close(); source = null }
}

object FileMessageInput {
  /** A file that cannot be read as landed messages, or one that is gone. */
  def isFileProblem(e: Exception): Boolean = e match {
    case r: ReplicateException => r.errorId == ErrorId.CorruptFile || r.errorId == ErrorId.UnknownFraming
    case _: IOException => true
    case _ => false
  }

  /** True when `ignoreMissingFiles` / `ignoreCorruptFiles` skip the file of this problem. */
  def ignored(e: Exception, options: FileOptions): Boolean =
    if (e.isInstanceOf[FileNotFoundException]) options.ignoreMissingFiles else options.ignoreCorruptFiles
}
