package io.sparkreplicate.catalyst

import org.apache.spark.sql.types.StructType

import io.sparkreplicate.{DecodeOptions, ErrorId, Layout, MessageView, ReplicateException}
import io.sparkreplicate.codec.{SchemaRegistry, TableName}

/**
 * What a query returns, decided once from the metadata known when it is planned: its columns
 * and the layout its rows are decoded into. It is separate from the inputs of one batch, so a
 * stream keeps it while its inputs (and the metadata seen) change every micro-batch.
 *
 * @param layout the table(s) read; None for the metadata view, which needs no registry either
 */
final case class QuerySchema(options: DecodeOptions, layout: Option[OutputLayout]) {
  lazy val schema: StructType = layout.fold(MetadataColumns.schema(options))(OutputColumns.schema(_, options))

  /**
   * What the executors need to decode one batch's messages with `registry` into `required`;
   * `refresh` re-reads the metadata source for messages whose metadata came late.
   */
  def rowSpec(registry: SchemaRegistry, required: StructType, filter: MessageFilter,
      refresh: Option[MetadataRefresh] = None): RowSpec =
    layout.fold[RowSpec](MetadataSpec(options, required))(ReadSpec(options, registry, _, required, filter, refresh))

  def layoutName: String = layout match {
    case Some(_: TableLayout) => Layout.Flat.name
    case Some(_) => Layout.Generic.name
    case None => MessageView.Metadata.name
  }

  /** What is read, for the table's name and the scan's description. */
  def subject: String = layout match {
    case Some(l) => l.tables.mkString(", ")
    case None => MessageView.Metadata.name + options.table.fold("")(t => s" of $t")
  }
}

object QuerySchema {

  /** The metadata view's schema, which no metadata decides. */
  def metadataView(options: DecodeOptions): QuerySchema = QuerySchema(options, layout = None)

  /**
   * The data view's schema: one table's columns (flat layout), or every table's rows (generic),
   * as the options ask and the registry allows.
   */
  def of(options: DecodeOptions, registry: SchemaRegistry): QuerySchema = {
    val tables = registry.tables.keys.toSeq.sortBy(_.toString)
    if (tables.isEmpty) throw new ReplicateException(ErrorId.NoMetadata,
      s"no metadata (MD) message was found in ${registry.origins.mkString(", ")}; set the option " +
        "`schemaTopic` to the topic that holds Replicate's metadata messages")
    val generic = options.layout == Layout.Generic ||
      (options.layout == Layout.Auto && options.table.isEmpty && tables.size > 1)
    val layout = if (generic) {
      GenericLayout(options.table.fold(tables)(wanted => Seq(selectTable(wanted, tables, registry))))
    } else {
      val table = options.table.map(selectTable(_, tables, registry)).getOrElse(tables match {
        case Seq(only) => only
        case _ => throw new ReplicateException(ErrorId.TableRequired,
          s"the metadata read from ${registry.origins.mkString(", ")} describes ${tables.size} tables " +
            s"(${tables.mkString(", ")}); set the option `table` to one of them, or `layout` to " +
            "`generic` (or `auto`) to read them all")
      })
      TableLayout.of(table, registry.tables(table), options)
    }
    QuerySchema(options, Some(layout))
  }

  /** `table` as the metadata spells it; case only matters when two tables differ by case alone. */
  private def selectTable(wanted: TableName, tables: Seq[TableName], registry: SchemaRegistry): TableName =
    tables.find(_ == wanted)
      .orElse(tables.filter(_.toString.equalsIgnoreCase(wanted.toString)) match {
        case Seq(only) => Some(only)
        case _ => None
      })
      .getOrElse(throw new ReplicateException(ErrorId.TableNotFound,
        s"table $wanted has no metadata; the registry holds ${registry.describe}: ${tables.mkString(", ")}"))
}
