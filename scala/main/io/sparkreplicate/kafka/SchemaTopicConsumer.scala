package io.sparkreplicate.kafka

import java.time.Duration
import java.util.Properties

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.kafka.clients.consumer.{ConsumerConfig, ConsumerRecord, KafkaConsumer}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.errors.TimeoutException
import org.apache.kafka.common.serialization.ByteArrayDeserializer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.DecodeLimits
import io.sparkreplicate.catalyst.{MetadataRefresh, MetadataScanner, MessageInput}
import io.sparkreplicate.codec.TableVersion

/**
 * Reads Replicate's metadata topic on Kafka whole, from its first offset to its end, with a plain
 * consumer of the data's `kafka.*` client settings: on the driver, where one message per table
 * version takes no Spark job, and in a task whose message waits for its metadata, where no Spark
 * job can run. This reads metadata only: the data itself is read by Spark's Kafka source alone.
 * The consumer assigns itself every partition and commits nothing, so it joins no consumer group.
 */
object SchemaTopicConsumer {
  private val PollMillis = 200L
  /** Kafka's own default of `default.api.timeout.ms`, the longest the read goes without a record. */
  private val DefaultTimeoutMillis = 60000L

  /** @param settings Kafka client settings (the `kafka.*` options without their prefix) */
  def read(settings: Map[String, String], topic: String, limits: DecodeLimits): Seq[TableVersion] = {
    val consumer = newConsumer(settings)
    val timeoutMillis = settings.get(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG).map(_.trim.toLong)
      .getOrElse(DefaultTimeoutMillis)
    val input = try new SchemaTopicInput(consumer, topic, timeoutMillis) catch {
      case NonFatal(e) =>
        consumer.close()
        throw e
    }
    // The scan closes the input, and the input the consumer.
    MetadataScanner.scan(input, limits, strict = true)
  }

  private def newConsumer(settings: Map[String, String]): KafkaConsumer[Array[Byte], Array[Byte]] = {
    val properties = new Properties
    settings.foreach { case (k, v) => properties.put(k, v) }
    properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    // A misspelt schema topic must read as empty (as Spark's Kafka source reads it), not be created
    // by a broker that creates the topics clients ask for.
    properties.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false")
    properties.remove(ConsumerConfig.GROUP_ID_CONFIG)
    new KafkaConsumer(properties, new ByteArrayDeserializer, new ByteArrayDeserializer)
  }

  /** The records of every partition of `topic`, up to the ends they had when the read began. */
  private final class SchemaTopicInput(consumer: KafkaConsumer[Array[Byte], Array[Byte]], topic: String,
      timeoutMillis: Long) extends MessageInput {
    private val partitions = consumer.partitionsFor(topic).asScala.map(p => new TopicPartition(topic, p.partition)).toSeq
    consumer.assign(partitions.asJava)
    consumer.seekToBeginning(partitions.asJava)
    private val ends = consumer.endOffsets(partitions.asJava).asScala.map { case (p, end) => p -> end.longValue }
    private var pending: Iterator[ConsumerRecord[Array[Byte], Array[Byte]]] = Iterator.empty
    private var record: ConsumerRecord[Array[Byte], Array[Byte]] = _

    override def next(): Boolean = {
      var idleSince = System.nanoTime()
      while (true) {
        while (pending.hasNext) {
          record = pending.next()
          // A tombstone carries no message.
          if (record.value != null) return true
        }
        if (ends.forall { case (p, end) => consumer.position(p) >= end }) return false
        if ((System.nanoTime() - idleSince) / 1000000L > timeoutMillis) throw new TimeoutException(
          s"the Kafka topic $topic gave no record for $timeoutMillis ms before its end ${ends.mkString(", ")}")
        val polled = consumer.poll(Duration.ofMillis(PollMillis))
        if (!polled.isEmpty) idleSince = System.nanoTime()
        pending = polled.iterator.asScala
      }
      false
    }

    override def bytes: Array[Byte] = record.value
    override def offset: Int = 0
    override def length: Int = record.value.length
    override def describePosition: String = KafkaMessageInput.position(record.topic, record.partition, record.offset)
    override def writeSource(row: InternalRow): Unit = KafkaMessageInput.writeSource(row,
      UTF8String.fromString(record.topic), record.partition, record.offset, record.timestamp * 1000L, record.key)
    // Without waiting: the consumer commits nothing and belongs to no group, and a graceful close
    // waits for the fetch it sent after its last records, which the broker holds open for
    // `fetch.max.wait.ms` (500 ms by default) when no record follows: half a second per read.
    override def close(): Unit = consumer.close(Duration.ZERO)
  }
}

/**
 * Reads the Kafka schema topic: on the driver when a read is planned or `from_replicate` analysed,
 * and again for `metadataWait` in the task whose message waits. It names no Kafka class itself,
 * so that a session without Kafka's client gets the error that says how to add it.
 */
final class KafkaSchemaTopicRefresh(val settings: Map[String, String], val topic: String, limits: DecodeLimits)
    extends MetadataRefresh {
  override def read(): Seq[TableVersion] = try SchemaTopicConsumer.read(settings, topic, limits) catch {
    case e: NoClassDefFoundError if String.valueOf(e.getMessage).startsWith("org/apache/kafka/") =>
      throw KafkaOptions.sourceMissing(e)
  }
}
