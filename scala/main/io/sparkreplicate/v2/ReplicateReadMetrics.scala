package io.sparkreplicate.v2

import java.util.{Collections, WeakHashMap}

import scala.jdk.CollectionConverters._

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.{CollectionAccumulator, LongAccumulator}

import io.sparkreplicate.catalyst.ReadCounters

/**
 * The accounting of one scan, summed over its tasks. Accumulator updates reach the driver before
 * the action that ran the tasks returns, so the counts are exact right after an action, with no
 * listener to wait for. The accumulators are of Spark's own types because the driver
 * deserializes task results with a class loader that does not see a jar added to a Spark Connect
 * session (`addArtifacts`): an accumulator class of the connector's would fail every task there.
 */
final class ScanCounters private (totals: Map[String, LongAccumulator],
    skippedFiles: CollectionAccumulator[String]) extends Serializable {

  /** One task's counts. */
  def add(counters: ReadCounters): Unit = {
    ReplicateMetrics.values(counters).foreach(m => totals.get(m.name()).foreach(_.add(m.value())))
    counters.skippedFiles.foreach(skippedFiles.add)
  }

  /** Metric name → count. A file split across tasks may be skipped by several: counted once. */
  def value: Map[String, Long] =
    totals.map { case (name, total) => name -> total.sum } +
      (ScanCounters.FilesSkipped -> skippedFiles.value.asScala.toSet.size.toLong)
}

object ScanCounters {
  private val FilesSkipped = "filesSkipped"

  /** Registers the scan's accumulators with `sc`. */
  def apply(sc: SparkContext): ScanCounters = new ScanCounters(
    ReplicateMetrics.all.map(_.name()).filter(_ != FilesSkipped).map(name => name -> sc.longAccumulator).toMap,
    sc.collectionAccumulator[String])
}

/**
 * Counts of the last replicate scan each session executed, for `spark_replicate.last_read_metrics`
 * (through [[ReplicateReadMetricsSource]]). Kept per session, as the sessions of a Spark Connect
 * server are different users; weakly, so that a closed session's counts go with it.
 */
object ReplicateReadMetrics {
  private val last = Collections.synchronizedMap(new WeakHashMap[SparkSession, ScanCounters])

  private[v2] def track(session: SparkSession, counters: ScanCounters): Unit = last.put(session, counters)

  /** Metric name → count for `session`; empty before its first read. */
  def lastRead(session: SparkSession): Map[String, Long] =
    Option(last.get(session)).map(_.value).getOrElse(Map.empty)

  /** [[lastRead]] of the active session. */
  def lastRead: Map[String, Long] = lastRead(SparkSession.active)
}
