package io.sparkreplicate.catalyst

import org.apache.spark.sql.types._

import io.sparkreplicate.DecodeOptions

/**
 * The columns of the metadata view (`messages` = `metadata`): one row per metadata message.
 * The lineage `timestamp` stays the string Replicate sent: the real 6.3 sample has
 * `2018-04-13T20:13:58.289` (ISO, `T`, milliseconds, no zone), not the `yyyy-MM-dd HH:mm:ss.ffffff`
 * UTC form of the data headers, so no one parse can be trusted for it.
 */
object MetadataColumns {
  val SchemaId = "schema_id"
  val SchemaName = "schema_name"
  val TableName = "table_name"
  val TableVersion = "table_version"
  val Server = "server"
  val Task = "task"
  val Timestamp = "timestamp"
  val Columns = "columns"
  val PrimaryKey = "primary_key"
  val DataSchema = "data_schema"

  /** One entry of `columns`, from `tableStructure.tableColumns`. */
  val columnType: StructType = StructType(Seq(
    "name" -> StringType, "ordinal" -> IntegerType, "type" -> StringType, "length" -> IntegerType,
    "precision" -> IntegerType, "scale" -> IntegerType, "primary_key_position" -> IntegerType,
    "nullable" -> BooleanType
  ).map { case (name, t) => StructField(name, t, nullable = false) })

  /** Nullable throughout: a PERMISSIVE corrupt row has nulls in every column. */
  val columns: Seq[StructField] = Seq(
    SchemaId -> StringType, SchemaName -> StringType, TableName -> StringType, TableVersion -> LongType,
    Server -> StringType, Task -> StringType, Timestamp -> StringType,
    Columns -> ArrayType(columnType, containsNull = false),
    PrimaryKey -> ArrayType(StringType, containsNull = false), DataSchema -> StringType
  ).map { case (name, t) => StructField(name, t, nullable = true) }

  def schema(options: DecodeOptions): StructType = StructType(columns ++ OutputColumns.readerColumns(options))
}
