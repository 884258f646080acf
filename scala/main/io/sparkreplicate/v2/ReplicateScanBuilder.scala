package io.sparkreplicate.v2

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{OutputColumns, ReadPlan}

/** Column pruning: columns the query does not select are skipped, not decoded. */
final class ReplicateScanBuilder(plan: ReadPlan, options: Map[String, String]) extends ScanBuilder with SupportsPushDownRequiredColumns {
  private var required: StructType = plan.schema

  /**
   * Top-level columns are pruned, and so are fields of `header__before_image` (each is a column
   * to decode); the small `header__source` and corrupt-record structs are always produced whole.
   */
  override def pruneColumns(requiredSchema: StructType): Unit = {
    val full = plan.schema
    required = StructType(requiredSchema.map { field =>
      if (field.name == OutputColumns.Source || field.name == plan.options.columnNameOfCorruptRecord) full(field.name)
      else field
    })
  }
  override def build(): Scan = new ReplicateScan(plan, options, required)
}
