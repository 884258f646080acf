package io.sparkreplicate.v2

import java.util

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{LocalScan, Scan, ScanBuilder}
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.{LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * `spark.read.format("replicate-metrics").load()`: the counts of the last replicate scan the
 * session executed ([[ReplicateReadMetrics]]) as one row with a column per metric, or no row
 * before the first read. A data source rather than a JVM call, so that it works over Spark
 * Connect as on a classic session; the row is made on the driver, with no job.
 */
final class ReplicateReadMetricsSource extends TableProvider with DataSourceRegister {
  override def shortName(): String = "replicate-metrics"
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = ReplicateReadMetricsSource.schema
  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table = new ReplicateReadMetricsSource.LastRead
}

private object ReplicateReadMetricsSource {
  val schema: StructType =
    StructType(ReplicateMetrics.all.map(metric => StructField(metric.name(), LongType, nullable = false)))

  final class LastRead extends SupportsRead with ScanBuilder with LocalScan {
    override def name(): String = "replicate last read metrics"
    override def schema(): StructType = ReplicateReadMetricsSource.schema
    override def readSchema(): StructType = ReplicateReadMetricsSource.schema
    override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.BATCH_READ)
    override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = this
    override def build(): Scan = this

    override def rows(): Array[InternalRow] = {
      val counts = ReplicateReadMetrics.lastRead(SparkSession.active)
      if (counts.isEmpty) Array.empty
      else Array(InternalRow.fromSeq(schema.fieldNames.toSeq.map(counts)))
    }
  }
}
