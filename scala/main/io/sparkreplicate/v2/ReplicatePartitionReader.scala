package io.sparkreplicate.v2

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader

import io.sparkreplicate.catalyst.MessageReader

/**
 * One task's rows, whatever its messages come from.
 *
 * @param sourceMetrics the metrics of the source under the reader (Spark's Kafka reader has its own)
 */
final class ReplicatePartitionReader(reader: MessageReader, totals: ScanCounters,
    sourceMetrics: () => Array[CustomTaskMetric] = () => Array.empty) extends PartitionReader[InternalRow] {

  override def next(): Boolean = reader.next()
  override def get(): InternalRow = reader.get
  private var closed = false

  /** Adds this task's counts once, however often Spark closes the reader. */
  override def close(): Unit = if (!closed) {
    closed = true
    reader.close()
    totals.add(reader.counters)
  }
  override def currentMetricsValues(): Array[CustomTaskMetric] =
    ReplicateMetrics.values(reader.counters) ++ sourceMetrics()
}
