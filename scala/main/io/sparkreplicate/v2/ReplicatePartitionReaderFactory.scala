package io.sparkreplicate.v2

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

import io.sparkreplicate.catalyst.{MessageReader, ReadCounters, RowSpec}
import io.sparkreplicate.files.{FileMessageInput, FileOptions, FileSplit, SerializableConfiguration}

/**
 * Carries the row spec and the Hadoop configuration itself rather than broadcasting them: a
 * broadcast value is deserialized by a class loader that cannot see a jar added to a Spark
 * Connect session (`addArtifacts`), while the factory travels in the stage's task binary, which
 * Spark deserializes with the session's class loader. The task binary is itself broadcast once
 * per stage, so this costs no more than the broadcasts did.
 */
final class ReplicatePartitionReaderFactory(counters: ScanCounters, spec: RowSpec, options: FileOptions,
    conf: SerializableConfiguration) extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    ReplicatePartitionReaderFactory.fileReader(partition.asInstanceOf[ReplicateInputPartition].splits.toSeq,
      conf, spec, options, counters)
}

object ReplicatePartitionReaderFactory {
  /** The reader of a task's file splits, batch or micro-batch. */
  def fileReader(splits: Seq[FileSplit], conf: SerializableConfiguration, spec: RowSpec, options: FileOptions,
      counters: ScanCounters): PartitionReader[InternalRow] = {
    val read = new ReadCounters
    val input = new FileMessageInput(splits, conf.value, options, spec.options.limits, read)
    new ReplicatePartitionReader(new MessageReader(input, spec, read), counters)
  }
}
