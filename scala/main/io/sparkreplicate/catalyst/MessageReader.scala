package io.sparkreplicate.catalyst

import java.io.Closeable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow

import io.sparkreplicate.{MalformedMessageException, ParseMode, ReplicateException}

/** What one reader saw; every message lands in exactly one of the outcome counters. */
final class ReadCounters {
  var messagesRead = 0L
  var rowsReturned = 0L
  var metadataMessages = 0L
  var filteredOut = 0L
  var malformed = 0L
  var dropped = 0L
  /** Rows returned whose masks had a bit past the table's last column: not an outcome of its own. */
  var maskBitsIgnored = 0L
  /**
   * Kafka records without a value (tombstones): no Replicate message, so neither read nor an
   * outcome, and never malformed; counted by the input that skips them.
   */
  var tombstones = 0L
  /** Waits for metadata that had not arrived (`metadataWait`): one per missing schema id, and their time. */
  var metadataWaits = 0L
  var metadataWaitMillis = 0L
  /** Inputs (files) given up on under `ignoreCorruptFiles` / `ignoreMissingFiles` (rows read before stay). */
  val skippedFiles = scala.collection.mutable.Set.empty[String]
  /** Malformed messages per reason, by [[io.sparkreplicate.ErrorId]] name. */
  val malformedByReason = scala.collection.mutable.Map.empty[String, Long].withDefaultValue(0L)
}

/**
 * Reads the messages of one input as rows (change rows, or the metadata view's rows: the spec's
 * [[RowDecoder]] decides), applying the parse mode to malformed messages: FAILFAST raises with
 * the position, PERMISSIVE returns a row carrying the raw bytes and the reason, DROPMALFORMED
 * drops and counts.
 */
final class MessageReader(input: MessageInput, spec: RowSpec, val counters: ReadCounters) extends Closeable {
  private val decoder = RowDecoder(spec, counters)
  private val mode = spec.options.mode
  private val sourceRow =
    if (decoder.out.sourceSlot >= 0) new SpecificInternalRow(OutputColumns.sourceType.map(_.dataType)) else null

  def get: InternalRow = decoder.row

  /** Every error leaving a task is redacted: positions and reasons may carry secrets. */
  def next(): Boolean = try advance() catch { case e: ReplicateException => throw spec.options.redaction(e) }

  private def advance(): Boolean = {
    while (true) {
      val more = try input.next() catch {
        case e: MalformedMessageException =>
          // A bad frame counts as one message; the input then goes on or ends, as it can.
          counters.messagesRead += 1
          if (malformed(e, null, 0, 0)) return true
          true
      }
      if (!more) return false
      if (input.length >= 0) {
        counters.messagesRead += 1
        val bytes = input.bytes
        val (offset, length) = (input.offset, input.length)
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

  /** True when a row (the corrupt record) is to be returned, false when the message is dropped. */
  private def malformed(e: MalformedMessageException, bytes: Array[Byte], offset: Int, length: Int): Boolean = {
    counters.malformed += 1
    counters.malformedByReason(e.errorId.name) += 1
    val where = input.describePosition
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
    input.writeSource(sourceRow)
    decoder.row.update(decoder.out.sourceSlot, sourceRow)
  }

  override def close(): Unit = input.close()
}
