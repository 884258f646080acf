package io.sparkreplicate.v2

import org.apache.spark.sql.connector.read.{Scan, ScanBuilder, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.ReadPlan

/** Column pruning: columns the query does not select are skipped, not decoded. */
final class ReplicateScanBuilder(plan: ReadPlan, options: Map[String, String]) extends ScanBuilder with SupportsPushDownRequiredColumns {
  private var required: StructType = plan.schema

  override def pruneColumns(requiredSchema: StructType): Unit = required = requiredSchema
  override def build(): Scan = new ReplicateScan(plan, options, required)
}
