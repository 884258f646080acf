package io.sparkreplicate.v2

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{MessageFilter, OutputColumns}
import io.sparkreplicate.files.FilePlan

/**
 * Column pruning: columns the query does not select are skipped, not decoded. Filter pushdown:
 * filters on the table, its version and the operation remove messages before their rows are
 * decoded ([[MessageFilter]]).
 */
final class ReplicateScanBuilder(plan: FilePlan, options: Map[String, String]) extends ScanBuilder
    with SupportsPushDownRequiredColumns with SupportsPushDownFilters {
  private var required: StructType = plan.query.schema
  private var pushed: Seq[Filter] = Nil
  private var filter = MessageFilter.KeepAll

  /**
   * Top-level columns are pruned, and so are fields of `header__before_image` (each is a column
   * to decode); the small `header__source` and corrupt-record structs are always produced whole.
   */
  override def pruneColumns(requiredSchema: StructType): Unit = {
    val full = plan.query.schema
    required = StructType(requiredSchema.map { field =>
      if (field.name == OutputColumns.Source || field.name == plan.query.options.columnNameOfCorruptRecord) full(field.name)
      else field
    })
  }

  /**
   * Every filter is also left to Spark, so the rows returned are exactly those an unpushed filter
   * would return: the pushed ones only spare the decoding of rows that would be filtered anyway.
   */
  override def pushFilters(filters: Array[Filter]): Array[Filter] = {
    val (used, model) = MessageFilter.push(filters.toSeq, plan.query.options.mode)
    pushed = used
    filter = model
    filters
  }

  override def pushedFilters(): Array[Filter] = pushed.toArray

  override def build(): Scan = new ReplicateScan(plan, options, required, pushed, filter)
}
