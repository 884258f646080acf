package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow

import io.sparkreplicate.{Redaction, ReplicateException}

/**
 * Turns one landed message into the reader's row, or says why there is none. The reader
 * ([[ChangeRowReader]]) applies the parse mode and the accounting around it, whatever the rows are.
 */
trait RowDecoder {
  /** The one reused output row and its slots, filled by [[decode]] (on [[Outcome.Row]]) and [[corruptRow]]. */
  def out: ReaderRow
  /** Masks secrets in the corrupt-record message. */
  protected def redaction: Redaction

  /** @throws io.sparkreplicate.MalformedMessageException for a message that cannot be decoded */
  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome

  /** Whether the row [[decode]] last returned had a mask bit past its table's last column (ignored). */
  def maskBitsIgnored: Boolean = false

  final def row: InternalRow = out.row

  /** The row for a malformed message under PERMISSIVE: nulls, and the raw bytes with the reason. */
  final def corruptRow(bytes: Array[Byte], offset: Int, length: Int, error: ReplicateException, where: String): InternalRow =
    out.corruptRow(bytes, offset, length, error, where, redaction)
}

object RowDecoder {
  /** `counters` gets the waits for late metadata; the outcomes are the caller's to count. */
  def apply(spec: RowSpec, counters: ReadCounters): RowDecoder = spec match {
    case s: ReadSpec => new ChangeRowDecoder(s, counters)
    case s: MetadataSpec => new MetadataRowDecoder(s)
  }
}
