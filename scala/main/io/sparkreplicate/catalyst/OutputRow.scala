package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, SpecificInternalRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{Redaction, ReplicateException}

/**
 * The one mutable row a reader fills for every message, and where each output column lives in
 * it (-1 when the query did not select the column, so nothing is decoded for it). The row is
 * reused: Spark copies it into an UnsafeRow before asking for the next one.
 *
 * A SpecificInternalRow whose string slots are [[StringSlot]]s (where the bytes lie; Spark's copy
 * makes the UTF8String as it reads one), although other row forms were measured (profile M, 2M messages,
 * `local[2]`, jars run alternately): a row of one long array and one object array, and a row
 * written directly in UnsafeRow's layout (strings appended as bytes, no UTF8String per value, the
 * before-image taken by Spark's copy in one memory copy). Neither was faster end to end (the
 * medians of three pairs of runs: the flat row 1% to 10% slower, the UnsafeRow layout 6% to 27%):
 * Spark's copy still reads every top-level string as a new UTF8String and writes it with its own
 * row writer, whatever row it reads from.
 */
class ReaderRow(val required: StructType, corruptColumn: String) {
  val row: SpecificInternalRow = StringSlot.row(required.fields.map(_.dataType).toIndexedSeq)

  def slot(name: String): Int = required.fieldNames.indexOf(name)

  val sourceSlot: Int = slot(OutputColumns.Source)
  val corruptSlot: Int = slot(corruptColumn)

  def setAllNull(): Unit = {
    var i = 0
    while (i < row.numFields) { row.setNullAt(i); i += 1 }
  }

  /**
   * The row for a malformed message: nulls, and the corrupt-record column (when selected). `bytes`
   * is null when no message could be cut out of the file (a broken frame); the raw bytes are then
   * null, and empty for an empty message.
   */
  def corruptRow(bytes: Array[Byte], offset: Int, length: Int, error: ReplicateException, where: String,
      redaction: Redaction): InternalRow = {
    setAllNull()
    if (corruptSlot >= 0) {
      val raw = if (bytes == null) null else java.util.Arrays.copyOfRange(bytes, offset, offset + length)
      row.update(corruptSlot, new GenericInternalRow(Array[Any](raw,
        UTF8String.fromString(error.errorId.name), UTF8String.fromString(redaction(s"$where: ${error.detail}")))))
    }
    row
  }
}

/**
 * The reader row of the flat layout, with the slots of the table's columns.
 *
 * `beforeColumns` is a scratch row with every table column, for `beforeData` when it must become
 * the row image (a message whose `data` is null); the selected before-image struct may be pruned
 * to fewer fields and has its own row.
 */
final class OutputRow(required: StructType, val layout: TableLayout, corruptColumn: String)
  extends ReaderRow(required, corruptColumn) {

  val columnSlots: Array[Int] = layout.columns.map(c => slot(c.name)).toArray
  val beforeSlot: Int = slot(OutputColumns.BeforeImage)
  val beforeType: StructType =
    if (beforeSlot < 0) new StructType() else required(beforeSlot).dataType.asInstanceOf[StructType]
  val before: SpecificInternalRow = StringSlot.row(beforeType.fields.map(_.dataType).toIndexedSeq)
  val beforeColumns: SpecificInternalRow = StringSlot.row(layout.columns.map(_.dataType))

  private val beforeStructSlots = layout.columns.map(c => beforeType.fieldNames.indexOf(c.name)).toArray
  private val toImage = copyColumns(row, columnSlots)
  private val toStruct = copyColumns(before, beforeStructSlots)

  /** Copies the table columns of `beforeColumns` into the row image, the rare `data` = null case. */
  def beforeColumnsAsImage(): Unit = toImage()

  /** Copies `beforeColumns` into the (maybe pruned) before-image struct. */
  def beforeColumnsAsStruct(): Unit = toStruct()

  /** The copy of `beforeColumns` into `to`, column i into its slot `slots(i)` (none where -1). */
  private def copyColumns(to: SpecificInternalRow, slots: Array[Int]): SlotCopy =
    new SlotCopy(beforeColumns, to,
      slots.indices.filter(slots(_) >= 0).map(i => (i, slots(i), layout.columns(i).dataType)))
}
