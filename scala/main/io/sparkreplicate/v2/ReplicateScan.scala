package io.sparkreplicate.v2

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan}
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{ReadPlan, ReadPlanner}
import io.sparkreplicate.files.SerializableConfiguration

final class ReplicateScan(plan: ReadPlan, options: Map[String, String], required: StructType) extends Scan with Batch {
  private lazy val spark = SparkSession.active
  private lazy val conf = ReplicatePlanning.hadoopConf(spark, options)

  private lazy val partitions: Array[InputPartition] =
    ReadPlanner.dataSplits(plan, conf, ReplicatePlanning.splitPlanner(spark))
      .map(splits => ReplicateInputPartition(splits.toArray): InputPartition).toArray

  override def readSchema(): StructType = required
  override def toBatch: Batch = this

  override def description(): String = {
    val read = plan.layout.fold(s"messages=${plan.subject}") { layout =>
      s"table=${layout.table}, versions=${plan.registry.tables(layout.table).map(_.tableVersion).mkString(",")}"
    }
    s"Replicate [$read, files=${plan.files.size}, mode=${plan.options.mode.name}, framing=${plan.options.framing.name}]"
  }

  override def planInputPartitions(): Array[InputPartition] = partitions

  override def createReaderFactory(): PartitionReaderFactory = {
    val sc = spark.sparkContext
    val counters = new ReadCountersAccumulator
    sc.register(counters, s"replicate ${plan.subject}")
    ReplicateReadMetrics.track(counters)
    new ReplicatePartitionReaderFactory(counters,
      sc.broadcast(plan.rowSpec(required)),
      sc.broadcast(new SerializableConfiguration(conf)))
  }

  override def supportedCustomMetrics(): Array[CustomMetric] = ReplicateMetrics.all
}
