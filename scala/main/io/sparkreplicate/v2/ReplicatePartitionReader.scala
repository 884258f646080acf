package io.sparkreplicate.v2

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader

import io.sparkreplicate.catalyst.{MessageReader, ReadCounters, RowSpec}
import io.sparkreplicate.files.{FileMessageInput, FileOptions, FileSplit}

final class ReplicatePartitionReader(splits: Seq[FileSplit], conf: Configuration, spec: RowSpec,
    options: FileOptions, totals: ScanCounters) extends PartitionReader[InternalRow] {

  private val reader = {
    val counters = new ReadCounters
    new MessageReader(new FileMessageInput(splits, conf, options, spec.options.limits, counters), spec, counters)
  }

  override def next(): Boolean = reader.next()
  override def get(): InternalRow = reader.get
  private var closed = false

  /** Adds this task's counts once, however often Spark closes the reader. */
  override def close(): Unit = if (!closed) {
    closed = true
    reader.close()
    totals.add(reader.counters)
  }
  override def currentMetricsValues(): Array[CustomTaskMetric] = ReplicateMetrics.values(reader.counters)
}
