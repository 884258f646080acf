package io.sparkreplicate.v2

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{MessageFilter, OutputColumns, QuerySchema}

/**
 * Column pruning: columns the query does not select are skipped, not decoded. Filter pushdown:
 * filters on the table, its version and the operation remove messages before their rows are
 * decoded ([[MessageFilter]]). The same for every source of messages.
 *
 * @param newScan the source's scan of the required columns, the filters pushed and the model of them
 */
final class ReplicateScanBuilder(query: QuerySchema, newScan: (StructType, Seq[Filter], MessageFilter) => Scan)
    extends ScanBuilder with SupportsPushDownRequiredColumns with SupportsPushDownFilters {
  private var required: StructType = query.schema
  private var pushed: Seq[Filter] = Nil
  private var filter = MessageFilter.KeepAll

  /**
   * Top-level columns are pruned, and so are fields of `header__before_image` (each is a column
   * to decode); the small `header__source` and corrupt-record structs are always produced whole.
   */
  override def pruneColumns(requiredSchema: StructType): Unit = {
    val full = query.schema
    required = StructType(requiredSchema.map { field =>
      if (field.name == OutputColumns.Source || field.name == query.options.columnNameOfCorruptRecord) full(field.name)
      else field
    })
  }

  /**
   * Every filter is also left to Spark, so the rows returned are exactly those an unpushed filter
   * would return: the pushed ones only spare the decoding of rows that would be filtered anyway.
   */
  override def pushFilters(filters: Array[Filter]): Array[Filter] = {
    val (used, model) = MessageFilter.push(filters.toSeq, query.options.mode)
    pushed = used
    filter = model
    filters
  }

  override def pushedFilters(): Array[Filter] = pushed.toArray

  override def build(): Scan = newScan(required, pushed, filter)
}
