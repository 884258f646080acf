package io.sparkreplicate.v2

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

import io.sparkreplicate.catalyst.RowSpec
import io.sparkreplicate.files.{FileOptions, FileSplit, SerializableConfiguration}

/**
 * The splits one task of a micro-batch reads, with the batch's row spec: each batch decodes with
 * the metadata landed by then, so the spec travels with the batch's partitions rather than in the
 * reader factory, which Spark asks for without saying which batch it is for.
 */
final case class ReplicateStreamPartition(splits: Array[FileSplit], spec: RowSpec) extends InputPartition

/**
 * The same readers as a batch scan's ([[ReplicatePartitionReaderFactory]]), with each batch's spec.
 * The counters are here, in the stage's task binary, because accumulators deserialized with a
 * task's partition, before the task starts, are not reported back.
 */
final class ReplicateStreamReaderFactory(counters: ScanCounters, options: FileOptions, conf: SerializableConfiguration)
    extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val p = partition.asInstanceOf[ReplicateStreamPartition]
    ReplicatePartitionReaderFactory.fileReader(p.splits.toSeq, conf, p.spec, options, counters)
  }
}
