package io.sparkreplicate.v2

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

import io.sparkreplicate.ErrorId
import io.sparkreplicate.catalyst.ReadCounters

/**
 * The scan's accounting, shown in the SQL tab and the executed plan. Every landed message is
 * counted once as read, and once as exactly one of: returned row (including PERMISSIVE's corrupt
 * rows), metadata, filtered out (another table, or removed by a pushed filter), or dropped (DROPMALFORMED):
 * `messagesRead = rowsReturned + metadataMessages + filteredOut + dropped`. `maskBitsIgnored` is
 * no outcome: it counts the returned rows whose masks set a bit past the table's last column.
 * `tombstones` counts the Kafka records without a value, which carry no message and so are not
 * read: a Kafka read takes `messagesRead + tombstones` records. `metadataWaits` counts the waits
 * for metadata that had not arrived yet (`metadataWait`: one per missing schema id and task,
 * whether or not it then came) and `metadataWaitMillis` the time they took.
 * Spark instantiates each metric class by name on the driver, hence one class per metric.
 */
object ReplicateMetrics {
  val all: Array[CustomMetric] = Array(new MessagesRead, new RowsReturned, new MetadataMessages,
    new FilteredOut, new Malformed, new Dropped, new FilesSkipped, new MaskBitsIgnored, new Tombstones, new MetadataWaits,
    new MetadataWaitMillis, new MalformedBadMagic,
    new MalformedUnknownMessageType, new MalformedTruncated, new MalformedTrailingBytes,
    new MalformedBadPayload, new MalformedBadValue, new MalformedInvalidUtf8,
    new MalformedUnknownSchemaId, new MalformedBadEmbeddedSchema, new MalformedBadFrame)

  /** Spark asks for these every 100 rows, so the names of the per-reason metrics are made once. */
  def values(c: ReadCounters): Array[CustomTaskMetric] = Array(
    task("messagesRead", c.messagesRead), task("rowsReturned", c.rowsReturned),
    task("metadataMessages", c.metadataMessages), task("filteredOut", c.filteredOut),
    task("malformed", c.malformed), task("dropped", c.dropped), task("filesSkipped", c.skippedFiles.size),
    task("maskBitsIgnored", c.maskBitsIgnored), task("tombstones", c.tombstones),
    task("metadataWaits", c.metadataWaits), task("metadataWaitMillis", c.metadataWaitMillis)) ++
    reasonMetrics.map { case (metric, reason) => task(metric, c.malformedByReason(reason)) }

  def reasonMetric(reason: ErrorId): String = s"malformed_${reason.name}"

  /** (metric name, reason name) for each reason a message can be malformed for. */
  private val reasonMetrics = ErrorId.messageReasons.map(r => (reasonMetric(r), r.name)).toArray

  private def task(metric: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metric
    override def value(): Long = v
  }
}

abstract class ReplicateMetric(metric: String, text: String) extends CustomSumMetric {
  override def name(): String = metric
  override def description(): String = text
}

abstract class ReasonMetric(reason: ErrorId)
  extends ReplicateMetric(ReplicateMetrics.reasonMetric(reason), s"replicate malformed: ${reason.name}")

final class MessagesRead extends ReplicateMetric("messagesRead", "replicate messages read")
final class RowsReturned extends ReplicateMetric("rowsReturned", "replicate rows returned")
final class MetadataMessages extends ReplicateMetric("metadataMessages", "replicate metadata messages")
final class FilteredOut extends ReplicateMetric("filteredOut", "replicate messages filtered out (other tables, pushed filters)")
final class Malformed extends ReplicateMetric("malformed", "replicate malformed messages")
final class Dropped extends ReplicateMetric("dropped", "replicate malformed messages dropped")
final class FilesSkipped extends ReplicateMetric("filesSkipped", "replicate files skipped")
final class MaskBitsIgnored extends ReplicateMetric("maskBitsIgnored",
  "replicate rows whose masks set bits past the table's last column (ignored)")
final class MetadataWaits extends ReplicateMetric("metadataWaits",
  "replicate waits for metadata that had not arrived (one per schema id and task)")
final class MetadataWaitMillis extends ReplicateMetric("metadataWaitMillis", "replicate time waiting for metadata (ms)")
final class Tombstones extends ReplicateMetric("tombstones", "replicate Kafka tombstones (records without a value)")
final class MalformedBadMagic extends ReasonMetric(ErrorId.BadMagic)
final class MalformedUnknownMessageType extends ReasonMetric(ErrorId.UnknownMessageType)
final class MalformedTruncated extends ReasonMetric(ErrorId.Truncated)
final class MalformedTrailingBytes extends ReasonMetric(ErrorId.TrailingBytes)
final class MalformedBadPayload extends ReasonMetric(ErrorId.BadPayload)
final class MalformedBadValue extends ReasonMetric(ErrorId.BadValue)
final class MalformedInvalidUtf8 extends ReasonMetric(ErrorId.InvalidUtf8)
final class MalformedUnknownSchemaId extends ReasonMetric(ErrorId.UnknownSchemaId)
final class MalformedBadEmbeddedSchema extends ReasonMetric(ErrorId.BadEmbeddedSchema)
final class MalformedBadFrame extends ReasonMetric(ErrorId.BadFrame)
