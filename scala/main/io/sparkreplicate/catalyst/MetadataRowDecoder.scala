package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.Redaction
import io.sparkreplicate.catalyst.{MetadataColumns => M}
import io.sparkreplicate.codec.{ColumnInfo, Envelope, MessageKind, MetadataMessage, SliceDecoder, TableVersion}

/**
 * The metadata view: each metadata (MD) message becomes one row, identical repeats included (it
 * shows the messages, unlike the registry, which collapses them). Data messages are filtered from
 * the envelope alone; so are the metadata messages of tables other than `table`, when it is set.
 * Metadata messages are few, so each is decoded generically ([[MetadataMessage]]).
 */
final class MetadataRowDecoder(spec: MetadataSpec) extends RowDecoder {
  val out = new ReaderRow(spec.required, spec.options.columnNameOfCorruptRecord)
  protected def redaction: Redaction = spec.options.redaction
  private val decoder = new SliceDecoder

  /** (slot, value) of each selected column; the value is in Spark's internal form, or null. */
  private val writers: Array[(Int, TableVersion => Any)] = Seq[(String, TableVersion => Any)](
    M.SchemaId -> (v => utf8(v.schemaId)),
    M.SchemaName -> (v => utf8(v.lineage.schema)),
    M.TableName -> (v => utf8(v.lineage.table)),
    M.TableVersion -> (v => v.tableVersion),
    M.Server -> (v => utf8(v.lineage.server)),
    M.Task -> (v => utf8(v.lineage.task)),
    M.Timestamp -> (v => utf8(v.lineage.timestamp)),
    M.Columns -> (v => new GenericArrayData(v.columns.map(column).toArray[Any])),
    M.PrimaryKey -> (v => new GenericArrayData(v.primaryKey.map(utf8).toArray[Any])),
    M.DataSchema -> (v => utf8(v.dataSchemaJson))
  ).map { case (name, value) => (out.slot(name), value) }.filter(_._1 >= 0).toArray

  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome = {
    val envelope = Envelope.decode(decoder, bytes, offset, length)
    if (envelope.kind == MessageKind.Data) return Outcome.Filtered
    // The origin names a metadata message in registry conflicts; a view has none to report.
    val version = MetadataMessage.decode(bytes, envelope, origin = "", spec.options.limits)
    if (spec.options.table.exists(!_.toString.equalsIgnoreCase(version.table.toString))) return Outcome.Filtered
    var i = 0
    while (i < writers.length) {
      val (s, value) = writers(i)
      out.row.update(s, value(version))
      i += 1
    }
    if (out.corruptSlot >= 0) out.row.setNullAt(out.corruptSlot)
    Outcome.Row
  }

  private def utf8(s: String): UTF8String = if (s == null) null else UTF8String.fromString(s)

  private def column(c: ColumnInfo): InternalRow = new GenericInternalRow(Array[Any](utf8(c.name), c.ordinal,
    utf8(c.sourceType), c.length, c.precision, c.scale, c.primaryKeyPosition, c.nullable))
}
