package io.sparkreplicate.v2

import java.util.Optional

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{CompositeReadLimit, MicroBatchStream, Offset, ReadLimit,
  ReadMaxBytes, ReadMaxFiles, ReportsSourceMetrics, SupportsTriggerAvailableNow}
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.ReplicateException
import io.sparkreplicate.catalyst.{MessageFilter, StreamSchema}
import io.sparkreplicate.codec.SchemaRegistry
import io.sparkreplicate.files.{FilePlan, FilePlanner, SerializableConfiguration}
import io.sparkreplicate.sql.SessionBinding
import io.sparkreplicate.streaming.{Admission, FileLog, LandingStream, StreamBatch, StreamOptions}

/**
 * `spark.readStream.format("replicate")`: micro-batches of the files landed since the last one
 * ([[LandingStream]] plans them and logs them under `checkpointLocation`), decoded into the
 * schema chosen when the query started (`started`), each batch with the metadata landed by then.
 *
 * @param required the columns selected and `filter` the pushed filters, as for a batch scan
 */
final class ReplicateMicroBatchStream(started: FilePlan, options: Map[String, String], required: StructType,
    filter: MessageFilter, checkpointLocation: String)
    extends MicroBatchStream with SupportsTriggerAvailableNow with ReportsSourceMetrics {
  private lazy val spark = SparkSession.active
  private lazy val conf = SessionBinding.hadoopConf(spark, options)
  private val decode = started.query.options
  private val settings = StreamOptions.parse(options, decode)
  private lazy val landing = redacted(new LandingStream(started.options, settings.startingPosition, decode.limits,
    new FileLog(checkpointLocation, conf), conf,
    // The metadata view needs no metadata; the data view without a schema topic finds it among the data.
    splits => if (started.query.layout.isEmpty) Nil
      else ReplicatePlanning.scanDataTopics(spark, conf, started.options, decode)(splits)))
  /** The batch this trigger runs, planned once however often Spark asks; None when it runs none. */
  private var planned: Option[PlannedBatch] = None

  override def initialOffset(): Offset = redacted(ReplicateStreamOffset(
    landing.initialOffset(started.files, started.registry.versions.values.toSeq)))

  override def deserializeOffset(json: String): Offset = ReplicateStreamOffset.parse(json)

  override def getDefaultReadLimit: ReadLimit =
    settings.limits.maxFiles.map(ReadLimit.maxFiles).toSeq ++ settings.limits.maxBytes.map(ReadLimit.maxBytes) match {
      case Seq() => ReadLimit.allAvailable()
      case Seq(one) => one
      case both => ReadLimit.compositeLimit(both.toArray)
    }

  override def latestOffset(): Offset = throw new UnsupportedOperationException(
    "the replicate stream takes a read limit: latestOffset(Offset, ReadLimit) is to be called instead")

  override def latestOffset(start: Offset, limit: ReadLimit): Offset = {
    planned = None
    redacted(ReplicateStreamOffset(landing.latestOffset(ReplicateStreamOffset.of(start), admission(limit))))
  }

  override def prepareForTriggerAvailableNow(): Unit = redacted(landing.takeOnlyLandedNow())

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, to) = (ReplicateStreamOffset.of(start), ReplicateStreamOffset.of(end))
    val batch = planned.filter(p => p.start == from && p.end == to).getOrElse(redacted(plan(from, to)))
    planned = Some(batch)
    batch.partitions
  }

  private def plan(from: Long, to: Long): PlannedBatch = {
    val batch = landing.batch(from, to)
    val registry = knownTo(batch)
    val query = StreamSchema.forBatch(started.query, started.registry, registry)
    // A message whose metadata lands after the batch was planned waits for it (`metadataWait`).
    val spec = query.rowSpec(registry, required, filter, FilePlanner.refresh(started.options, decode.limits, conf))
    val counters = ScanCounters(spark.sparkContext)
    val partitions = FilePlanner.dataSplits(FilePlan(query, started.options, batch.files, registry), conf,
      SessionBinding.splitPlanner(spark)).map(splits => ReplicateStreamPartition(splits.toArray, spec))
    PlannedBatch(from, to, partitions.toArray, batch.files.size, batch.files.map(_.getLen).sum, counters)
  }

  /**
   * The metadata the batch logged, and the query's own (read when it started): a batch planned
   * again after a restart then knows a version whose metadata landed after its first run, which
   * failed for want of it, and decodes its messages with no wait. Each message is still decoded
   * only with its own version's schema, found by its schema id.
   */
  private def knownTo(batch: StreamBatch): SchemaRegistry =
    SchemaRegistry.build(batch.registry.versions.values ++ started.registry.versions.values, batch.registry.origins)

  /** Spark plans a batch's partitions before its reader factory, and may ask for both several times. */
  override def createReaderFactory(): PartitionReaderFactory = new ReplicateStreamReaderFactory(
    planned.fold(ScanCounters(spark.sparkContext))(_.counters), started.options, new SerializableConfiguration(conf))

  /**
   * In each `StreamingQueryProgress`, the source's `metrics`: the files and bytes of the batch, its
   * message accounting (the scan's metrics, summed over its tasks), and the files and bytes landed
   * but left for later batches (`filesBehind`, `bytesBehind`), as the trigger's listing saw them.
   */
  override def metrics(latestConsumedOffset: Optional[Offset]): java.util.Map[String, String] = {
    val counts = planned.fold(ReplicateMetrics.all.map(_.name() -> 0L).toMap)(_.counters.value)
    val backlog = landing.backlog
    (counts ++ Map("filesRead" -> planned.fold(0L)(_.files), "bytesRead" -> planned.fold(0L)(_.bytes),
      "filesBehind" -> backlog.files, "bytesBehind" -> backlog.bytes)).map { case (k, v) => k -> v.toString }.asJava
  }

  override def commit(end: Offset): Unit = ()
  override def stop(): Unit = ()
  override def toString: String = s"Replicate stream [${started.query.subject}, ${started.options.paths.mkString(", ")}]"

  /** Spark's read limits as files and bytes; a limit on rows cannot be kept by whole files and is ignored. */
  private def admission(limit: ReadLimit): Admission = limit match {
    case files: ReadMaxFiles => Admission(Some(files.maxFiles), None)
    case bytes: ReadMaxBytes => Admission(None, Some(bytes.maxBytes))
    case all: CompositeReadLimit => all.getReadLimits.map(admission).foldLeft(Admission.Unlimited)(_ min _)
    case _ => Admission.Unlimited
  }

  /** Every error leaving the planning is redacted: paths and options may carry secrets. */
  private def redacted[T](body: => T): T = try body catch { case e: ReplicateException => throw decode.redaction(e) }
}

/** One micro-batch as planned: its tasks, its input and its counters. */
private final case class PlannedBatch(start: Long, end: Long, partitions: Array[InputPartition], files: Long,
    bytes: Long, counters: ScanCounters)
