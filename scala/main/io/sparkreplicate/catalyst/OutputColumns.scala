package io.sparkreplicate.catalyst

import org.apache.spark.sql.types._

import io.sparkreplicate.{DecodeOptions, ParseMode}

/**
 * The output columns of both layouts. The `header__` prefix is Replicate's own change-table
 * convention, so the result feeds MERGE flows keyed on the primary key and ordered by
 * `header__change_seq`.
 */
object OutputColumns {
  val SchemaId = "header__schema_id"
  val TableVersion = "header__table_version"
  val Operation = "header__operation"
  val ChangeSeq = "header__change_seq"
  val Timestamp = "header__timestamp"
  val StreamPosition = "header__stream_position"
  val TransactionId = "header__transaction_id"
  val TransactionEventCounter = "header__transaction_event_counter"
  val TransactionLastEvent = "header__transaction_last_event"
  val ExternalSchemaId = "header__external_schema_id"
  val ChangeMask = "header__change_mask"
  val ColumnMask = "header__column_mask"
  val ChangedColumns = "header__changed_columns"
  val PresentColumns = "header__present_columns"
  val BeforeImage = "header__before_image"
  val Source = "header__source"
  /** The lineage schema and table name of each row, in the generic (all-tables) layout. */
  val SchemaName = "header__schema_name"
  val TableName = "header__table_name"
  /** The row image of the generic layout, a VARIANT. */
  val Data = "data"
  /** Field metadata of the flat layout's key columns: their position in the primary key (1-based). */
  val PrimaryKeyPosition = "replicate.primaryKeyPosition"

  val headers: Seq[StructField] = Seq(
    SchemaId -> StringType, TableVersion -> LongType, Operation -> StringType,
    ChangeSeq -> StringType, Timestamp -> TimestampType, StreamPosition -> StringType,
    TransactionId -> StringType, TransactionEventCounter -> LongType,
    TransactionLastEvent -> BooleanType, ExternalSchemaId -> StringType,
    ChangeMask -> BinaryType, ColumnMask -> BinaryType
  ).map { case (name, t) => StructField(name, t, nullable = true) }

  /**
   * Where a row's message was: `file`, `position` (the byte its frame or container block starts
   * at) and `index` (its place in that block) for landed files, null for a Kafka read; the Kafka
   * coordinates when the landing records carry them, and always for a Kafka read.
   */
  val sourceType: StructType = StructType(Seq(
    StructField("file", StringType),
    StructField("position", LongType),
    StructField("index", LongType),
    StructField("topic", StringType),
    StructField("partition", IntegerType),
    StructField("offset", LongType),
    StructField("timestamp", TimestampType),
    StructField("key", BinaryType)))

  val corruptRecordType: StructType = StructType(Seq(
    StructField("bytes", BinaryType),
    StructField("reason", StringType, nullable = false),
    StructField("message", StringType, nullable = false)))

  /** The headers every data row has, fixed and (with `expandMasks`) expanded masks. */
  def headerColumns(options: DecodeOptions): Seq[StructField] = headers ++ (if (options.expandMasks) {
    Seq(ChangedColumns, PresentColumns).map(StructField(_, ArrayType(StringType, containsNull = false)))
  } else Nil)

  /**
   * Flat: the table's columns, the headers, the before image as a struct of the columns. Generic:
   * the schema and table names, the headers, then `data` and the before image as variants.
   */
  def schema(layout: OutputLayout, options: DecodeOptions): StructType = {
    val main = layout match {
      case t: TableLayout => t.columns ++ headerColumns(options) :+ StructField(BeforeImage, t.struct)
      case _: GenericLayout =>
        Seq(StructField(SchemaName, StringType), StructField(TableName, StringType)) ++ headerColumns(options) ++
          Seq(StructField(Data, VariantType), StructField(BeforeImage, VariantType))
    }
    StructType(main ++ readerColumns(options))
  }

  /** The columns every view ends with: `header__source` and PERMISSIVE's corrupt record, when asked. */
  def readerColumns(options: DecodeOptions): Seq[StructField] = {
    val source = if (options.includeSource) Seq(StructField(Source, sourceType)) else Nil
    val corrupt = if (options.mode == ParseMode.Permissive) {
      Seq(StructField(options.columnNameOfCorruptRecord, corruptRecordType))
    } else Nil
    source ++ corrupt
  }
}
