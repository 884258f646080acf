package io.sparkreplicate.kafka

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.PartitionReader

import io.sparkreplicate.catalyst.{MessageInput, ReadCounters}

/**
 * The messages of one Kafka input partition, as rows of Spark's own Kafka source
 * ([[KafkaMessageInput.Key]] and the other column positions are that source's fixed schema): each
 * record's value is one message. A record without a value (a tombstone) carries no message: it
 * is counted apart and passed over. Spark's reader, which this closes, owns the consumer.
 */
final class KafkaMessageInput(records: PartitionReader[InternalRow], counters: ReadCounters) extends MessageInput {
  import KafkaMessageInput._

  private var record: InternalRow = _
  private var value: Array[Byte] = _

  override def next(): Boolean = {
    while (records.next()) {
      record = records.get()
      if (!record.isNullAt(Value)) {
        value = record.getBinary(Value)
        return true
      }
      counters.tombstones += 1
    }
    false
  }

  override def bytes: Array[Byte] = value
  override def offset: Int = 0
  override def length: Int = value.length

  override def describePosition: String =
    s"topic ${record.getUTF8String(Topic)}, partition ${record.getInt(Partition)}, offset ${record.getLong(Offset)}"

  /** No file, position or index: the Kafka coordinates, and the key (null when the record has none). */
  override def writeSource(row: InternalRow): Unit = {
    row.setNullAt(0)
    row.setNullAt(1)
    row.setNullAt(2)
    row.update(3, record.getUTF8String(Topic).clone())
    row.setInt(4, record.getInt(Partition))
    row.setLong(5, record.getLong(Offset))
    row.setLong(6, record.getLong(Timestamp))
    if (record.isNullAt(Key)) row.setNullAt(7) else row.update(7, record.getBinary(Key))
  }

  override def close(): Unit = records.close()
}

object KafkaMessageInput {
  /** Column positions in the rows of Spark's Kafka source (its schema is fixed). */
  val Key = 0
  val Value = 1
  val Topic = 2
  val Partition = 3
  val Offset = 4
  /** Microseconds since the epoch, as Spark's timestamps are. */
  val Timestamp = 5
}
