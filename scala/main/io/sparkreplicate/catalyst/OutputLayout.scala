package io.sparkreplicate.catalyst

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.types.{DataType, Metadata, MetadataBuilder, StructField, StructType}

import io.sparkreplicate.{DecodeOptions, ErrorId, ReplicateException, SchemaEvolution}
import io.sparkreplicate.codec.{AvroSchemas, TableName, TableVersion}

/** The shape of a read's rows: one table's typed columns, or every table's rows as variants. */
sealed trait OutputLayout extends Serializable {
  /** The tables whose data messages become rows. */
  def tables: Seq[TableName]
}

/**
 * All tables at once: one row per data message, whatever its table, with the table's name and
 * the row images as VARIANT values typed by the message's own table version.
 */
final case class GenericLayout(tables: Seq[TableName]) extends OutputLayout

/**
 * The columns of one table across all the versions being read, each typed to hold every
 * version's values. Rows of a version that lacks a column read it as null.
 */
final case class TableLayout(table: TableName, columns: IndexedSeq[StructField]) extends OutputLayout {
  def tables: Seq[TableName] = Seq(table)
  private val indexByName = columns.map(_.name).zipWithIndex.toMap
  def indexOf(column: String): Int = indexByName.getOrElse(column, -1)
  def struct: StructType = StructType(columns)

  /**
   * What keeps a version learnt after the columns were chosen from being read into them without
   * loss: its columns that are not here, or whose values these columns' types cannot hold.
   */
  def misfits(version: TableVersion, typing: ColumnTyping): Seq[String] =
    TableLayout.columnTypes(version, typing).flatMap { case (name, t) =>
      val i = indexOf(name)
      if (i < 0) Some(s"new column `$name` ${t.simpleString}")
      else {
        val held = columns(i).dataType
        if (Widening.widen(held, t, typing.widenToString).contains(held)) None
        else Some(s"column `$name` is ${t.simpleString}, read as ${held.simpleString}")
      }
    }
}

object TableLayout {

  /**
   * Under `schemaEvolution` = merge: the latest version's columns in ordinal order, then columns
   * that later versions dropped, newest drop first. Under `latest`: the latest version's columns
   * only. Under `fail`: the one version, or an error naming them all.
   */
  def of(table: TableName, versions: Seq[TableVersion], options: DecodeOptions): TableLayout = {
    val newestFirst = versions.sortBy(-_.tableVersion)
    if (options.schemaEvolution == SchemaEvolution.Fail && versions.size > 1) throw new ReplicateException(
      ErrorId.SchemaEvolved, s"$table has ${versions.size} versions in the metadata read " +
        s"(${newestFirst.reverse.map(v => s"version ${v.tableVersion}: schema id ${v.schemaId}").mkString(", ")}) " +
        "and `schemaEvolution` is `fail`; set it to `merge` to read all versions' columns, or to " +
        "`latest` for the newest version's columns")
    val typed = newestFirst.map(v => v -> columnTypes(v, options.typing))
    val names = typed.flatMap { case (_, cols) => cols.map(_._1) }.distinct
    val kept = if (options.schemaEvolution == SchemaEvolution.Latest) typed.head._2.map(_._1) else names
    TableLayout(table, kept.map(name => StructField(name, merged(table, name, typed, options.typing.widenToString),
      nullable = true, keyMetadata(name, newestFirst))).toIndexedSeq)
  }

  /**
   * The column's `primaryKeyPosition` in the newest version that has it, carried in the field's
   * metadata so that the change-applying helpers find the keys from the schema alone.
   */
  private def keyMetadata(name: String, newestFirst: Seq[TableVersion]): Metadata =
    newestFirst.iterator.flatMap(_.columns).find(_.name == name).map(_.primaryKeyPosition).filter(_ > 0)
      .fold(Metadata.empty)(new MetadataBuilder().putLong(OutputColumns.PrimaryKeyPosition, _).build())

  /** The one type that holds the column's values in every version that has it. */
  private def merged(table: TableName, name: String, typed: Seq[(TableVersion, Seq[(String, DataType)])],
      toString: Boolean): DataType = {
    val seen = typed.flatMap { case (v, cols) => cols.find(_._1 == name).map(c => (v, c._2)) }
    val (newest, newestType) = seen.head
    seen.tail.foldLeft(newestType) { case (acc, (v, t)) =>
      Widening.widen(acc, t, toString).getOrElse(throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` of $table is ${t.simpleString} in version ${v.tableVersion} " +
          s"(schema id ${v.schemaId}) but ${newestType.simpleString} in version " +
          s"${newest.tableVersion} (schema id ${newest.schemaId}); set `widenToString` to read it " +
          "as a string, or read the versions separately by pointing `schemaTopic` at one of them"))
    }
  }

  /** Column name → Spark type in one version, in ordinal order; the names come from the metadata message. */
  def columnTypes(version: TableVersion, typing: ColumnTyping): Seq[(String, DataType)] = {
    val data = version.dataSchema.getField("data")
    if (data == null) throw new ReplicateException(ErrorId.BadMetadata,
      s"the data schema of ${version.table} (schema id ${version.schemaId}) has no `data` field")
    val record = AvroSchemas.unwrapNullable(data.schema)
    val avroFields = record.getFields.asScala.map(f => f.name -> f.schema).toMap
    version.columns.map { column =>
      val schema = avroFields.getOrElse(column.name, throw new ReplicateException(
        ErrorId.BadMetadata, s"column `${column.name}` of ${version.table} (schema id " +
          s"${version.schemaId}) is in `tableColumns` but not in the data schema"))
      column.name -> typing.sparkType(schema, column)
    }
  }
}
