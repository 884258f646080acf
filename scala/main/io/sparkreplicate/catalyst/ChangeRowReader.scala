package io.sparkreplicate.catalyst

import java.io.{Closeable, FileNotFoundException, IOException}

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException, ParseMode, ReplicateException, ReplicateOptions}
import io.sparkreplicate.files.{FileSplit, MessageSource}
import ChangeRowReader.{ignored, isFileProblem}

/** What one reader saw; every landed message lands in exactly one of the outcome counters. */
final class ReadCounters {
  var messagesRead = 0L
  var rowsReturned = 0L
  var metadataMessages = 0L
  var filteredOut = 0L
  var malformed = 0L
  var dropped = 0L
  /** Rows returned whose masks had a bit past the table's last column: not an outcome of its own. */
  var maskBitsIgnored = 0L
  /** Files given up on under `ignoreCorruptFiles` / `ignoreMissingFiles` (rows read before stay). */
  val skippedFiles = scala.collection.mutable.Set.empty[String]
  /** Malformed messages per reason, by [[io.sparkreplicate.ErrorId]] name. */
  val malformedByReason = scala.collection.mutable.Map.empty[String, Long].withDefaultValue(0L)
}

/**
 * Reads the splits of one task as rows (change rows, or the metadata view's rows: the spec's
 * [[RowDecoder]] decides), applying the parse mode to malformed messages: FAILFAST raises with
 * the file and position, PERMISSIVE returns a row carrying the raw bytes and the reason,
 * DROPMALFORMED drops and counts.
 */
final class ChangeRowReader(splits: Seq[FileSplit], conf: Configuration, spec: RowSpec) extends Closeable {
  private val decoder = RowDecoder(spec)
  private val mode = spec.options.mode
  val counters = new ReadCounters
  private var remaining = splits.toList
  private var split: FileSplit = _
  private var source: MessageSource = _
  private var fileName: UTF8String = _
  private val sourceRow =
    if (decoder.out.sourceSlot >= 0) new SpecificInternalRow(OutputColumns.sourceType.map(_.dataType)) else null

  def get: InternalRow = decoder.row

  /** Every error leaving a task is redacted: file paths and reasons may carry secrets. */
  def next(): Boolean = try advance() catch { case e: ReplicateException => throw spec.options.redaction(e) }

  private def advance(): Boolean = {
    while (true) {
      if (source == null && !openNext()) return false
      val more = try source.next() catch {
        case e: MalformedMessageException =>
          // A bad frame counts as one message; the source then goes on or ends, as it can.
          counters.messagesRead += 1
          if (malformed(e, null, 0, 0)) return true
          true
        case e: Exception if isFileProblem(e) => skipOrFail(e)
      }
      if (!more) { if (source != null) source.close(); source = null }
      else if (source.length >= 0) {
        counters.messagesRead += 1
        val bytes = source.bytes
        val (offset, length) = (source.offset, source.length)
        try {
          decoder.decode(bytes, offset, length) match {
            case Outcome.Row =>
              counters.rowsReturned += 1
              if (decoder.maskBitsIgnored) counters.maskBitsIgnored += 1
              writeSource()
              return true
            case Outcome.Metadata => counters.metadataMessages += 1
            case Outcome.Filtered => counters.filteredOut += 1
          }
        } catch {
          case e: MalformedMessageException => if (malformed(e, bytes, offset, length)) return true
        }
      }
    }
    false
  }

  /** Opens the next split's file; a file that cannot be opened is skipped or fails the task. */
  private def openNext(): Boolean = {
    while (source == null) remaining match {
      case Nil => return false
      case next :: rest =>
        remaining = rest
        split = next
        fileName = UTF8String.fromString(next.path)
        try source = MessageSource.open(next, conf, spec.options.valueField, spec.options.limits) catch {
          case e: Exception if isFileProblem(e) => skipOrFail(e)
        }
    }
    true
  }

  /**
   * A file gone since planning, or one that cannot be read as landed messages: with
   * `ignoreMissingFiles` / `ignoreCorruptFiles` it is skipped and counted (messages already
   * returned from it stay, as in Spark's file sources); otherwise the task fails naming it.
   */
  private def skipOrFail(e: Exception): Boolean = {
    val missing = e.isInstanceOf[FileNotFoundException]
    if (source != null) { source.close(); source = null }
    if (ignored(e, spec.options)) {
      counters.skippedFiles += split.path
      false
    } else if (missing) {
      throw new ReplicateException(ErrorId.FileMissing, s"${split.path} was listed when the query " +
        "was planned but is gone; re-run the query, or set `ignoreMissingFiles` to skip such files", e)
    } else e match {
      case r: ReplicateException => throw r
      case _ => throw new ReplicateException(ErrorId.CorruptFile, s"${split.path} cannot be read: $e. " +
        "Set `ignoreCorruptFiles` to skip unreadable files", e)
    }
  }

  /** True when a row (the corrupt record) is to be returned, false when the message is dropped. */
  private def malformed(e: MalformedMessageException, bytes: Array[Byte], offset: Int, length: Int): Boolean = {
    counters.malformed += 1
    counters.malformedByReason(e.errorId.name) += 1
    val where = s"${split.path}, ${source.describePosition}"
    mode match {
      case ParseMode.FailFast => throw new ReplicateException(e.errorId,
        s"malformed message in $where: ${e.detail}. Set the option `mode` to PERMISSIVE to keep " +
          "malformed messages as rows, or DROPMALFORMED to count and skip them", e)
      case ParseMode.Permissive =>
        decoder.corruptRow(bytes, offset, length, e, where)
        counters.rowsReturned += 1
        writeSource()
        true
      case ParseMode.DropMalformed =>
        counters.dropped += 1
        false
    }
  }

  private def writeSource(): Unit = if (sourceRow != null) {
    val r = source.record
    sourceRow.update(0, fileName)
    sourceRow.setLong(1, source.position)
    sourceRow.setLong(2, source.index)
    if (r.hasTopic) sourceRow.update(3, UTF8String.fromBytes(java.util.Arrays.copyOfRange(r.buffer, r.topicOffset, r.topicOffset + r.topicLength)))
    else sourceRow.setNullAt(3)
    if (r.hasPartition) sourceRow.setInt(4, r.partition) else sourceRow.setNullAt(4)
    if (r.hasOffset) sourceRow.setLong(5, r.offset) else sourceRow.setNullAt(5)
    if (r.hasTimestamp) sourceRow.setLong(6, r.timestamp * 1000L) else sourceRow.setNullAt(6)
    if (r.hasKey) sourceRow.update(7, java.util.Arrays.copyOfRange(r.buffer, r.keyOffset, r.keyOffset + r.keyLength))
    else sourceRow.setNullAt(7)
    decoder.row.update(decoder.out.sourceSlot, sourceRow)
  }

  override def close(): Unit = if (source != null) { source.close(); source = null }
}

object ChangeRowReader {
  /** A file that cannot be read as landed messages, or one that is gone. */
  def isFileProblem(e: Exception): Boolean = e match {
    case r: ReplicateException => r.errorId == ErrorId.CorruptFile || r.errorId == ErrorId.UnknownFraming
    case _: IOException => true
    case _ => false
  }

  /** True when `ignoreMissingFiles` / `ignoreCorruptFiles` skip the file of this problem. */
  def ignored(e: Exception, options: ReplicateOptions): Boolean =
    if (e.isInstanceOf[FileNotFoundException]) options.ignoreMissingFiles else options.ignoreCorruptFiles
}
