package io.sparkreplicate.v2

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader

import io.sparkreplicate.catalyst.{ChangeRowReader, ReadSpec}
import io.sparkreplicate.files.FileSplit

final class ReplicatePartitionReader(splits: Seq[FileSplit], conf: Configuration, spec: ReadSpec)
  extends PartitionReader[InternalRow] {

  private val reader = new ChangeRowReader(splits, conf, spec)

  override def next(): Boolean = reader.next()
  override def get(): InternalRow = reader.get
  override def close(): Unit = reader.close()
  override def currentMetricsValues(): Array[CustomTaskMetric] = ReplicateMetrics.values(reader.counters)
}
