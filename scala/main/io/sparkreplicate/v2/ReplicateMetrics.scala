package io.sparkreplicate.v2

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

import io.sparkreplicate.catalyst.ReadCounters

/**
 * The scan's accounting, shown in the SQL tab and the executed plan. Every landed message is
 * counted once as read, and once as exactly one of: returned row (including PERMISSIVE's corrupt
 * rows), metadata, filtered out (another table), or dropped (DROPMALFORMED).
 * Spark instantiates each metric class by name, hence one class per metric.
 */
object ReplicateMetrics {
  val all: Array[CustomMetric] = Array(new MessagesRead, new RowsReturned, new MetadataMessages,
    new FilteredOut, new Malformed, new Dropped)

  def values(c: ReadCounters): Array[CustomTaskMetric] = Array(
    task("messagesRead", c.messagesRead), task("rowsReturned", c.rowsReturned),
    task("metadataMessages", c.metadataMessages), task("filteredOut", c.filteredOut),
    task("malformed", c.malformed), task("dropped", c.dropped))

  private def task(metric: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metric
    override def value(): Long = v
  }
}

abstract class ReplicateMetric(metric: String, text: String) extends CustomSumMetric {
  override def name(): String = metric
  override def description(): String = text
}

final class MessagesRead extends ReplicateMetric("messagesRead", "replicate messages read")
final class RowsReturned extends ReplicateMetric("rowsReturned", "replicate rows returned")
final class MetadataMessages extends ReplicateMetric("metadataMessages", "replicate metadata messages")
final class FilteredOut extends ReplicateMetric("filteredOut", "replicate messages of other tables")
final class Malformed extends ReplicateMetric("malformed", "replicate malformed messages")
final class Dropped extends ReplicateMetric("dropped", "replicate malformed messages dropped")
