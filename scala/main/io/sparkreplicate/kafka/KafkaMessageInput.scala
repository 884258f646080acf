package io.sparkreplicate.kafka

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.connector.read.PartitionReader
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.catalyst.{MessageInput, ReadCounters}

/**
 * The messages of one Kafka input partition, as rows of Spark's own Kafka source
 * ([[KafkaMessageInput.Key]] and the other column positions are that source's fixed schema): each
 * record's value is one message. A record without a value (a tombstone) carries no message: it
 * is counted apart and passed over. Spark's reader, which this closes, owns the consumer.
 *
 * The message is read where the record's row holds it when that row is an [[UnsafeRow]] on a byte
 * array (Spark's Kafka source projects every record into one): `getBinary` would copy each value
 * once more, and the row, like the message, is only valid until the next record.
 */
final class KafkaMessageInput(records: PartitionReader[InternalRow], counters: ReadCounters) extends MessageInput {
  import KafkaMessageInput._

  private var record: InternalRow = _
  private var value: Array[Byte] = _
  private var start = 0
  private var size = 0

  override def next(): Boolean = {
    while (records.next()) {
      record = records.get()
      if (!record.isNullAt(Value)) {
        sliceValue()
        return true
      }
      counters.tombstones += 1
    }
    false
  }

  private def sliceValue(): Unit = record match {
    case row: UnsafeRow if row.getBaseObject.isInstanceOf[Array[Byte]] =>
      // A variable-length field's word is its offset from the row's start (high half) and its size.
      val offsetAndSize = row.getLong(Value)
      value = row.getBaseObject.asInstanceOf[Array[Byte]]
      start = Math.toIntExact(row.getBaseOffset + (offsetAndSize >>> 32) - Platform.BYTE_ARRAY_OFFSET)
      size = offsetAndSize.toInt
    case other =>
      value = other.getBinary(Value)
      start = 0
      size = value.length
  }

  override def bytes: Array[Byte] = value
  override def offset: Int = start
  override def length: Int = size

  override def describePosition: String =
    KafkaMessageInput.position(record.getUTF8String(Topic).toString, record.getInt(Partition), record.getLong(Offset))

  override def writeSource(row: InternalRow): Unit = KafkaMessageInput.writeSource(row, record.getUTF8String(Topic).clone(),
    record.getInt(Partition), record.getLong(Offset), record.getLong(Timestamp),
    if (record.isNullAt(Key)) null else record.getBinary(Key))

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

  /** A record's coordinates, as errors name it. */
  def position(topic: String, partition: Int, offset: Long): String =
    s"topic $topic, partition $partition, offset $offset"

  /**
   * No file, position or index: the Kafka coordinates, and the key (null when the record has none).
   *
   * @param timestamp microseconds since the epoch
   */
  def writeSource(row: InternalRow, topic: UTF8String, partition: Int, offset: Long, timestamp: Long,
      key: Array[Byte]): Unit = {
    row.setNullAt(0)
    row.setNullAt(1)
    row.setNullAt(2)
    row.update(3, topic)
    row.setInt(4, partition)
    row.setLong(5, offset)
    row.setLong(6, timestamp)
    if (key == null) row.setNullAt(7) else row.update(7, key)
  }
}
