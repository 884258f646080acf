package io.sparkreplicate.v2

import java.util

import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, ReadLimit, ReportsSourceMetrics,
  SupportsTriggerAvailableNow}

/**
 * Spark's Kafka micro-batch stream, its records decoded: every offset decision is Spark's Kafka
 * source's (start, `maxOffsetsPerTrigger` and the other admission limits, `Trigger.AvailableNow`,
 * what a checkpoint holds), so a query restarted from its checkpoint resumes exactly where
 * Spark's own Kafka query would.
 */
final class DecodedKafkaStream private (records: MicroBatchStream with SupportsTriggerAvailableNow with ReportsSourceMetrics,
    decoding: PartitionReaderFactory => PartitionReaderFactory)
    extends MicroBatchStream with SupportsTriggerAvailableNow with ReportsSourceMetrics {

  override def initialOffset(): Offset = records.initialOffset()
  override def latestOffset(): Offset = records.latestOffset()
  override def latestOffset(start: Offset, limit: ReadLimit): Offset = records.latestOffset(start, limit)
  override def getDefaultReadLimit: ReadLimit = records.getDefaultReadLimit
  override def reportLatestOffset(): Offset = records.reportLatestOffset()
  override def prepareForTriggerAvailableNow(): Unit = records.prepareForTriggerAvailableNow()
  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] =
    records.planInputPartitions(start, end)
  override def createReaderFactory(): PartitionReaderFactory = decoding(records.createReaderFactory())
  override def deserializeOffset(json: String): Offset = records.deserializeOffset(json)
  override def commit(end: Offset): Unit = records.commit(end)
  override def stop(): Unit = records.stop()
  override def metrics(latestConsumedOffset: util.Optional[Offset]): util.Map[String, String] =
    records.metrics(latestConsumedOffset)
  override def toString: String = s"Replicate decoding $records"
}

object DecodedKafkaStream {
  /** Spark's Kafka stream implements admission control, `Trigger.AvailableNow` and source metrics. */
  def apply(records: MicroBatchStream, decoding: PartitionReaderFactory => PartitionReaderFactory): DecodedKafkaStream =
    records match {
      case full: MicroBatchStream with SupportsTriggerAvailableNow with ReportsSourceMetrics =>
        new DecodedKafkaStream(full, decoding)
      case other => throw new IllegalStateException(s"Spark's Kafka stream $other lacks admission control, " +
        "Trigger.AvailableNow or source metrics")
    }
}
