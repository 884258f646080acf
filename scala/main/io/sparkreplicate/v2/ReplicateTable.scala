package io.sparkreplicate.v2

import java.util

import org.apache.spark.sql.connector.catalog.{SupportsRead, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.sparkreplicate.files.FilePlan

/** @param options the reader's options as given, for the Hadoop file system configuration */
final class ReplicateTable(plan: FilePlan, options: Map[String, String]) extends SupportsRead {
  override def name(): String = s"replicate ${plan.query.subject}"
  override def schema(): StructType = plan.query.schema
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    new ReplicateScanBuilder(plan.query, new ReplicateScan(plan, this.options, _, _, _))
}
