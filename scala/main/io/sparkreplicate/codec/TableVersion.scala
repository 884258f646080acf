package io.sparkreplicate.codec

import org.apache.avro.Schema

/** `SCHEMA.TABLE` as Replicate's lineage names it. */
final case class TableName(schema: String, table: String) {
  override def toString: String = s"$schema.$table"
}

object TableName {
  /** Splits on the first dot only: table names may contain dots, schema names rarely do. */
  def parse(qualified: String): Option[TableName] = qualified.indexOf('.') match {
    case i if i > 0 && i < qualified.length - 1 =>
      Some(TableName(qualified.substring(0, i), qualified.substring(i + 1)))
    case _ => None
  }
}

/** One column of `tableStructure.tableColumns`. */
final case class ColumnInfo(
    name: String,
    ordinal: Int,
    sourceType: String,
    length: Int,
    precision: Int,
    scale: Int,
    primaryKeyPosition: Int,
    nullable: Boolean)

final case class Lineage(
    server: String,
    task: String,
    schema: String,
    table: String,
    tableVersion: Long,
    timestamp: String)

/**
 * One table version, as announced by one metadata message: its columns in ordinal order and the
 * Avro schema of its data messages. `origin` says where the metadata message was read from, so
 * conflicts and unknown ids can be explained.
 */
final case class TableVersion(
    schemaId: String,
    lineage: Lineage,
    columns: IndexedSeq[ColumnInfo],
    dataSchemaJson: String,
    origin: String) {

  def table: TableName = TableName(lineage.schema, lineage.table)
  def tableVersion: Long = lineage.tableVersion

  /** Key columns in key order. */
  def primaryKey: Seq[String] =
    columns.filter(_.primaryKeyPosition > 0).sortBy(_.primaryKeyPosition).map(_.name)

  @transient lazy val dataSchema: Schema = AvroSchemas.parse(dataSchemaJson)

  /** Same content, wherever it was read from. */
  def sameAs(other: TableVersion): Boolean =
    copy(origin = "") == other.copy(origin = "")
}
