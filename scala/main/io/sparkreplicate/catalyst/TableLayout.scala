package io.sparkreplicate.catalyst

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.types.{DataType, StructField, StructType}

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.codec.{TableName, TableVersion}

/**
 * The columns of one table across all the versions being read: the latest version's columns in
 * ordinal order, then columns that later versions dropped, each typed to hold every version's
 * values. Rows of a version that lacks a column read it as null.
 */
final case class TableLayout(table: TableName, columns: IndexedSeq[StructField]) {
  private val indexByName = columns.map(_.name).zipWithIndex.toMap
  def indexOf(column: String): Int = indexByName.getOrElse(column, -1)
  def struct: StructType = StructType(columns)
}

object TableLayout {

  def of(table: TableName, versions: Seq[TableVersion]): TableLayout = {
    val newestFirst = versions.sortBy(-_.tableVersion)
    val typed = newestFirst.map(v => v -> columnTypes(v))
    val order = typed.flatMap { case (_, cols) => cols.map(_._1) }.distinct
    val columns = order.map { name =>
      val seen = typed.flatMap { case (v, cols) => cols.find(_._1 == name).map(c => (v, c._2)) }
      val merged = seen.tail.foldLeft(seen.head._2) { case (acc, (v, t)) =>
        AvroTypes.widen(acc, t).getOrElse(throw new ReplicateException(ErrorId.IncompatibleVersions,
          s"column `$name` of $table is ${t.simpleString} in version ${v.tableVersion} " +
            s"(schema id ${v.schemaId}) but ${seen.head._2.simpleString} in version " +
            s"${seen.head._1.tableVersion} (schema id ${seen.head._1.schemaId}); read the versions " +
            "separately by pointing `schemaTopic` at one of them"))
      }
      StructField(name, merged, nullable = true)
    }
    TableLayout(table, columns.toIndexedSeq)
  }

  /** Column name → Spark type, in ordinal order; the names come from the metadata message. */
  private def columnTypes(version: TableVersion): Seq[(String, DataType)] = {
    val data = version.dataSchema.getField("data")
    if (data == null) throw new ReplicateException(ErrorId.BadMetadata,
      s"the data schema of ${version.table} (schema id ${version.schemaId}) has no `data` field")
    val record = io.sparkreplicate.codec.AvroSchemas.unwrapNullable(data.schema)
    val avroFields = record.getFields.asScala.map(f => f.name -> f.schema).toMap
    version.columns.map { column =>
      val schema = avroFields.getOrElse(column.name, throw new ReplicateException(
        ErrorId.BadMetadata, s"column `${column.name}` of ${version.table} (schema id " +
          s"${version.schemaId}) is in `tableColumns` but not in the data schema"))
      column.name -> AvroTypes.sparkType(schema, column.name)
    }
  }
}
