package io.sparkreplicate.v2

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReader, PartitionReaderFactory, Scan}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{MessageFilter, MessageReader, ReadCounters, RowSpec}
import io.sparkreplicate.kafka.{KafkaMessageInput, KafkaPlan}
import io.sparkreplicate.sql.SessionBinding

/**
 * A read of Kafka: Spark's own Kafka scan decides the input partitions and the offsets (batch
 * bounds, micro-batches, admission control, checkpoints, data loss), and each task decodes the
 * records Spark's Kafka reader returns. No consumer and no offset of the connector's own: it only
 * gives Spark's scan defaults the read did not set, records per poll
 * ([[io.sparkreplicate.kafka.KafkaOptions.streamSource]]) and, for a batch, enough input partitions
 * to keep every core busy ([[io.sparkreplicate.kafka.KafkaOptions.batchSource]]).
 *
 * @param pushed the filters `filter` was built from, for EXPLAIN
 */
final class ReplicateKafkaScan(plan: KafkaPlan, required: StructType, pushed: Seq[Filter], filter: MessageFilter)
    extends Scan {
  private lazy val kafka: Scan = SparkKafkaSource.scan(plan.options.streamSource)

  override def readSchema(): StructType = required

  override def description(): String =
    s"Replicate [${plan.query.subject}, layout=${plan.query.layoutName}, " +
      s"pushedFilters=${pushed.mkString("[", ", ", "]")}, mode=${plan.query.options.mode.name}, " +
      s"kafka=${plan.options.describe}]"

  override def toBatch: Batch = new DecodedKafkaBatch(
    SparkKafkaSource.scan(plan.options.batchSource(SessionBinding.cores(SparkSession.active))).toBatch, decoding)

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream =
    DecodedKafkaStream(kafka.toMicroBatchStream(checkpointLocation), decoding)

  override def supportedCustomMetrics(): Array[CustomMetric] = ReplicateMetrics.all ++ kafka.supportedCustomMetrics()
  override def reportDriverMetrics(): Array[CustomTaskMetric] = kafka.reportDriverMetrics()

  /** A reader factory decoding the records of Spark's; one per batch and micro-batch, with its counts. */
  private def decoding(records: PartitionReaderFactory): PartitionReaderFactory = {
    val spark = SparkSession.active
    val counters = ScanCounters(spark.sparkContext)
    ReplicateReadMetrics.track(spark, counters)
    new KafkaDecodingReaderFactory(records,
      plan.query.rowSpec(plan.registry, required, filter, plan.options.refresh(plan.query.options.limits)), counters)
  }
}

/** Spark's Kafka batch, its records decoded. */
final class DecodedKafkaBatch(records: Batch, decoding: PartitionReaderFactory => PartitionReaderFactory)
    extends Batch {
  override def planInputPartitions(): Array[InputPartition] = records.planInputPartitions()
  override def createReaderFactory(): PartitionReaderFactory = decoding(records.createReaderFactory())
}

/** Wraps Spark's Kafka reader factory; travels in the task binary as the file reader's does. */
final class KafkaDecodingReaderFactory(records: PartitionReaderFactory, spec: RowSpec, totals: ScanCounters)
    extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val kafka = records.createReader(partition)
    val counters = new ReadCounters
    new ReplicatePartitionReader(new MessageReader(new KafkaMessageInput(kafka, counters), spec, counters), totals,
      () => kafka.currentMetricsValues())
  }
}
