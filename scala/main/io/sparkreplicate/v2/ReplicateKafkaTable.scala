package io.sparkreplicate.v2

import java.util

import org.apache.spark.sql.connector.catalog.{SupportsRead, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.sparkreplicate.kafka.KafkaPlan

/** Replicate's topics on Kafka, read in batch and as a stream through Spark's own Kafka source. */
final class ReplicateKafkaTable(plan: KafkaPlan) extends SupportsRead {
  override def name(): String = s"replicate ${plan.query.subject} from Kafka ${plan.options.describe}"
  override def schema(): StructType = plan.query.schema
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder =
    new ReplicateScanBuilder(plan.query, new ReplicateKafkaScan(plan, _, _, _))
}
