package io.sparkreplicate.v2

import java.util.OptionalLong

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan, Statistics,
  SupportsReportStatistics}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.{MessageFilter, VersionDecision}
import io.sparkreplicate.files.{FilePlan, FilePlanner, SerializableConfiguration}
import io.sparkreplicate.sql.SessionBinding

/** @param pushed the filters `filter` was built from, for EXPLAIN */
final class ReplicateScan(private val plan: FilePlan, private val options: Map[String, String],
    private val required: StructType, private val pushed: Seq[Filter], private val filter: MessageFilter)
    extends Scan with Batch with SupportsReportStatistics {
  private lazy val spark = SparkSession.active
  private lazy val conf = SessionBinding.hadoopConf(spark, options)
  /** Set when Spark makes the scan a stream, before it plans any of the stream's batches. */
  @volatile private var streaming = false

  private lazy val partitions: Array[InputPartition] =
    FilePlanner.dataSplits(plan, conf, SessionBinding.splitPlanner(spark))
      .map(splits => ReplicateInputPartition(splits.toArray): InputPartition).toArray

  override def readSchema(): StructType = required
  override def toBatch: Batch = this

  /** The versions actually read: those the pushed filters do not remove whole. */
  override def description(): String = {
    val read = plan.query.layout.fold(s"messages=${plan.query.subject}") { layout =>
      val tables = layout.tables.map { t =>
        val versions = plan.registry.tables(t).filter(filter.forVersion(_) != VersionDecision.SkipAll)
        s"$t(versions=${versions.map(_.tableVersion).mkString(",")})"
      }
      s"layout=${plan.query.layoutName}, tables=${tables.mkString(", ")}"
    }
    s"Replicate [$read, pushedFilters=${pushed.mkString("[", ", ", "]")}, files=${plan.files.size}, " +
      s"mode=${plan.query.options.mode.name}, framing=${plan.options.framing.name}]"
  }

  override def planInputPartitions(): Array[InputPartition] = partitions

  /**
   * The size Spark's own file scans estimate: the files' bytes times
   * `spark.sql.sources.fileCompressionFactor`, scaled to the share of the row's default size
   * that the columns read take. A scan that reports no size is taken to be unboundedly large, so
   * a small batch of changes was never broadcast: joining it with a large table (a hand-written
   * MERGE) shuffled and sorted the large table whole. The row count is not known before reading.
   *
   * A scan that serves a stream reports no size, as Spark's Kafka source does: Spark asks the scan
   * for each micro-batch, whose files are not those listed when the stream started (a stream
   * started on an empty landing would have its large batches taken for tiny ones and broadcast).
   */
  override def estimateStatistics(): Statistics = new Statistics {
    override def sizeInBytes(): OptionalLong = if (streaming) OptionalLong.empty() else OptionalLong.of(estimatedBytes)
    override def numRows(): OptionalLong = OptionalLong.empty()
  }

  private lazy val estimatedBytes: Long = {
    val bytes = plan.files.map(_.getLen).sum * SessionBinding.fileCompressionFactor(spark)
    (bytes * required.defaultSize / math.max(1, plan.query.schema.defaultSize)).toLong
  }

  override def createReaderFactory(): PartitionReaderFactory = {
    val sc = spark.sparkContext
    val counters = ScanCounters(sc)
    ReplicateReadMetrics.track(spark, counters)
    new ReplicatePartitionReaderFactory(counters, plan.query.rowSpec(plan.registry, required, filter,
      FilePlanner.refresh(plan.options, plan.query.options.limits, conf)), plan.options,
      new SerializableConfiguration(conf))
  }

  override def supportedCustomMetrics(): Array[CustomMetric] = ReplicateMetrics.all

  /** `spark.readStream`: the same columns and pushed filters, over files that keep landing. */
  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    streaming = true
    new ReplicateMicroBatchStream(plan, options, required, filter, checkpointLocation)
  }

  /**
   * Scans that read the same plan with the same columns and filters are the same scan, so Spark
   * reuses one's exchange for the other (a self-join, a union of aggregates of one DataFrame).
   */
  override def equals(other: Any): Boolean = other match {
    case that: ReplicateScan => options == that.options && required == that.required &&
      pushed == that.pushed && filter == that.filter && plan == that.plan
    case _ => false
  }

  override def hashCode(): Int = (options, required, pushed).hashCode()
}
