package io.sparkreplicate.catalyst

import org.apache.avro.Schema
import org.apache.spark.sql.types.{StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.DecodeOptions
import io.sparkreplicate.catalyst.{OutputColumns => C}
import io.sparkreplicate.codec.{SliceDecoder, TableVersion}

/**
 * A data message of one table version as a row of the generic layout. The message is decoded by
 * the flat layout's converter into a row of this version's own typed columns, which is then
 * copied over: headers as they are, the row images as variants. Only what the query selected is
 * decoded, as in the flat layout.
 */
final class GenericRecordConverter(writer: Schema, version: TableVersion, out: ReaderRow, options: DecodeOptions)
  extends MessageConverter {

  private val row = out.row
  private val layout = TableLayout.of(version.table, Seq(version), options)
  private val dataSlot = out.slot(C.Data)
  private val beforeSlot = out.slot(C.BeforeImage)
  private val headers = C.headerColumns(options).filter(f => out.slot(f.name) >= 0)

  /** The version's columns first (the `data` variant reads them from slot 0 on), then headers. */
  private val flat = new OutputRow(StructType(
    (if (dataSlot >= 0) layout.columns else Nil) ++ headers ++
      (if (beforeSlot >= 0) Seq(StructField(C.BeforeImage, layout.struct)) else Nil)), layout, corruptColumn = "")
  private val decode = new DataRecordConverter(writer, version, flat, options.typing)
  private val images = new VariantRows(layout.struct)
  private val headerCopies = new SlotCopy(flat.row, row, headers.map(h => (flat.slot(h.name), out.slot(h.name), h.dataType)))
  private val names = Seq(C.SchemaName -> version.lineage.schema, C.TableName -> version.lineage.table)
    .map { case (column, value) => (out.slot(column), UTF8String.fromString(value)) }.filter(_._1 >= 0).toArray

  override def maskBitsIgnored: Boolean = decode.maskBitsIgnored

  override def convert(in: SliceDecoder): Unit = {
    decode.convert(in)
    val from = flat.row
    headerCopies()
    var i = 0
    while (i < names.length) { row.update(names(i)._1, names(i)._2); i += 1 }
    if (dataSlot >= 0) row.update(dataSlot, images.toVariant(from))
    if (beforeSlot >= 0) {
      if (from.isNullAt(flat.beforeSlot)) row.setNullAt(beforeSlot) else row.update(beforeSlot, images.toVariant(flat.before))
    }
  }
}
