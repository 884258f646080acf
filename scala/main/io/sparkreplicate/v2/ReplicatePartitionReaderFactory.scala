package io.sparkreplicate.v2

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

import io.sparkreplicate.catalyst.RowSpec
import io.sparkreplicate.files.SerializableConfiguration

final class ReplicatePartitionReaderFactory(
    counters: ReadCountersAccumulator,
    spec: Broadcast[RowSpec],
    conf: Broadcast[SerializableConfiguration]) extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new ReplicatePartitionReader(partition.asInstanceOf[ReplicateInputPartition].splits.toSeq,
      conf.value.value, spec.value, counters)
}
