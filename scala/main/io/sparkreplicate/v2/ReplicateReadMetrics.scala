package io.sparkreplicate.v2

import scala.collection.mutable

import org.apache.spark.util.AccumulatorV2

import io.sparkreplicate.catalyst.ReadCounters

/**
 * The accounting of one scan, summed over its tasks. Accumulator updates reach the driver before
 * the action that ran the tasks returns, so `ReplicateReadMetrics.lastRead` is exact right after
 * an action, with no listener to wait for.
 */
final class ReadCountersAccumulator extends AccumulatorV2[ReadCounters, Map[String, Long]] {
  private val totals = mutable.Map.empty[String, Long].withDefaultValue(0L)
  /** A file split across tasks may be skipped by several of them: counted once. */
  private val skippedFiles = mutable.Set.empty[String]

  override def isZero: Boolean = totals.isEmpty && skippedFiles.isEmpty
  override def copy(): ReadCountersAccumulator = {
    val c = new ReadCountersAccumulator
    c.totals ++= totals
    c.skippedFiles ++= skippedFiles
    c
  }
  override def reset(): Unit = { totals.clear(); skippedFiles.clear() }
  override def add(counters: ReadCounters): Unit = {
    ReplicateMetrics.values(counters).foreach(m => if (m.name() != FilesSkipped) totals(m.name()) += m.value())
    skippedFiles ++= counters.skippedFiles
  }
  override def merge(other: AccumulatorV2[ReadCounters, Map[String, Long]]): Unit = other match {
    case o: ReadCountersAccumulator =>
      o.totals.foreach { case (k, v) => totals(k) += v }
      skippedFiles ++= o.skippedFiles
    case _ => throw new UnsupportedOperationException(s"cannot merge ${other.getClass.getName}")
  }
  override def value: Map[String, Long] = totals.toMap + (FilesSkipped -> skippedFiles.size.toLong)

  private def FilesSkipped = "filesSkipped"
}

/** Counts of the last replicate scan executed from this driver, for `spark_replicate.last_read_metrics`. */
object ReplicateReadMetrics {
  @volatile private var last: Option[ReadCountersAccumulator] = None

  private[v2] def track(accumulator: ReadCountersAccumulator): Unit = last = Some(accumulator)

  /** Metric name → count; empty before the first read. */
  def lastRead: Map[String, Long] = last.map(_.value).getOrElse(Map.empty)

  def lastReadJson: String =
    lastRead.toSeq.sortBy(_._1).map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}")
}
