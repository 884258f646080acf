package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{Redaction, ReplicateException}

/**
 * Turns one landed message into the reader's row, or says why there is none. The reader
 * ([[ChangeRowReader]]) applies the parse mode and the accounting around it, whatever the rows are.
 */
trait RowDecoder {
  /** The one reused output row, filled by [[decode]] (on [[Outcome.Row]]) and [[corruptRow]]. */
  def row: InternalRow
  /** Where `header__source` lives in [[row]]; -1 when not selected. */
  def sourceSlot: Int
  /** @throws io.sparkreplicate.MalformedMessageException for a message that cannot be decoded */
  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome
  /** The row for a malformed message under PERMISSIVE: nulls, and the raw bytes with the reason. */
  def corruptRow(bytes: Array[Byte], offset: Int, length: Int, error: ReplicateException, where: String): InternalRow
}

object RowDecoder {
  def apply(spec: RowSpec): RowDecoder = spec match {
    case s: ReadSpec => new ChangeRowDecoder(s)
    case s: MetadataSpec => new MetadataRowDecoder(s)
  }

  /**
   * Fills the corrupt-record column (when selected) of a row whose other columns are null.
   * `bytes` is null when no message could be cut out of the file (a broken frame); the raw bytes
   * are then null, and empty for an empty message.
   */
  def writeCorrupt(row: InternalRow, corruptSlot: Int, bytes: Array[Byte], offset: Int, length: Int,
      error: ReplicateException, where: String, redaction: Redaction): Unit = if (corruptSlot >= 0) {
    val raw = if (bytes == null) null else java.util.Arrays.copyOfRange(bytes, offset, offset + length)
    row.update(corruptSlot, new GenericInternalRow(Array[Any](raw,
      UTF8String.fromString(error.errorId.name), UTF8String.fromString(redaction(s"$where: ${error.detail}")))))
  }
}
