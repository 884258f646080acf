package io.sparkreplicate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.connector.read.PartitionReader
import org.apache.spark.sql.types.{BinaryType, DataType, IntegerType, LongType, StringType, TimestampType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.catalyst.{MessageReader, ReadCounters}
import io.sparkreplicate.kafka.{KafkaMessageInput, KafkaOptions, KafkaPlanner, KafkaSchemaTopicRefresh}

/**
 * The Kafka source without a broker: its options, and messages decoded from rows shaped as Spark's
 * Kafka source returns them (key, value, topic, partition, offset, timestamp, timestampType).
 */
class KafkaSourceSuite extends AnyFunSuite {

  private val kafka = Map("kafka.bootstrap.servers" -> "127.0.0.1:9092", "subscribe" -> "hr",
    "startingOffsets" -> "earliest", "kafka.security.protocol" -> "PLAINTEXT", "failOnDataLoss" -> "false")

  private def parse(options: Map[String, String]): KafkaOptions =
    KafkaOptions.parse(options, DecodeOptions.parse(options))

  test("the connector's own options stay, every other goes to Spark's Kafka source unchanged") {
    val options = parse(kafka ++ Map("table" -> "HR.EMPLOYEES", "MODE" -> "PERMISSIVE", "schemaTopic" -> "hr-md"))
    assert(options.source == kafka)
    assert(options.schemaTopic.contains("hr-md"))
  }

  test("the schema topic is read by a consumer of the data's client settings only") {
    val refresh = parse(kafka ++ Map("schemaTopic" -> "hr-md")).refresh(DecodeLimits.Default).get
      .asInstanceOf[KafkaSchemaTopicRefresh]
    assert(refresh.topic == "hr-md")
    assert(refresh.settings == Map("bootstrap.servers" -> "127.0.0.1:9092", "security.protocol" -> "PLAINTEXT"))
  }

  test("without a schema topic the metadata comes from all of the data topics") {
    val source = parse(kafka + ("endingOffsets" -> """{"hr":{"0":5}}""")).dataTopicsWhole
    assert(source("subscribe") == "hr" && source("startingOffsets") == "earliest" && source("endingOffsets") == "latest")
  }

  test("the tables to apply are listed from all of the schema topic, else of the data topics") {
    val options = kafka - "subscribe" + ("subscribePattern" -> "h.*") + ("endingOffsets" -> """{"hr":{"0":5}}""")
    val ofSchemaTopic = KafkaOptions.metadataListing(options, Some("hr-md"))
    assert(ofSchemaTopic == kafka + ("subscribe" -> "hr-md") + ("endingOffsets" -> "latest"))
    val ofDataTopics = KafkaOptions.metadataListing(options, None)
    assert(ofDataTopics == options + ("startingOffsets" -> "earliest") + ("endingOffsets" -> "latest"))
  }

  test("a batch read asks for three offset ranges per core unless it says how to cut, or tolerates loss") {
    val polling = "kafka.max.poll.records" -> "100000"
    val strict = parse(kafka - "failOnDataLoss")
    assert(strict.batchSource(cores = 4) == strict.source + polling + ("minPartitions" -> "12"))
    for (given <- Seq("MINPARTITIONS" -> "2", "maxRecordsPerPartition" -> "1000")) {
      val cut = parse(kafka - "failOnDataLoss" + given)
      assert(cut.batchSource(cores = 4) == cut.source + polling, given)
    }
    val tolerant = parse(kafka + ("FailOnDataLoss" -> "FALSE"))
    assert(tolerant.batchSource(cores = 4) == tolerant.source + polling)
  }

  test("every read of Spark's Kafka source polls all the records fetched, unless the poll is set") {
    val options = parse(kafka)
    for (read <- Seq(options.streamSource, options.batchSource(cores = 2), options.dataTopicsWhole)) {
      assert(read("kafka.max.poll.records") == "100000")
    }
    val set = parse(kafka + ("KAFKA.MAX.POLL.RECORDS" -> "50"))
    assert(set.streamSource == set.source && !set.batchSource(cores = 2).contains("kafka.max.poll.records"))
  }

  test("exactly one of subscribe, subscribePattern and assign") {
    val none = intercept[ReplicateException](parse(kafka - "subscribe"))
    assert(none.errorId == ErrorId.InvalidOption && none.detail.contains("none is set"))
    val two = intercept[ReplicateException](parse(kafka + ("subscribePattern" -> "h.*")))
    assert(two.detail.contains("subscribe, subscribePattern are set"))
  }

  test("metadataWait re-reads a schema topic only: the data topics' metadata was all read at planning") {
    assert(parse(kafka).refresh(DecodeLimits.Default).isEmpty)
    assert(parse(kafka + ("schemaTopic" -> "hr-md")).refresh(DecodeLimits.Default).nonEmpty)
  }

  test("from_replicate over Kafka takes the client settings and a schema topic, no subscription") {
    val settings = Map("kafka.bootstrap.servers" -> "127.0.0.1:9092", "table" -> "HR.EMPLOYEES")
    val options = KafkaOptions.schemaTopicOnly(settings + ("schemaTopic" -> "hr-md"), DecodeOptions.parse(settings))
    assert(options.schemaTopic.contains("hr-md") && options.metadataOrigin == "Kafka topic hr-md")
    val missing = intercept[ReplicateException](KafkaOptions.schemaTopicOnly(settings, DecodeOptions.parse(settings)))
    assert(missing.errorId == ErrorId.InvalidOption && missing.detail.contains("`schemaTopic` to the Kafka topic"))
  }

  test("kafka.bootstrap.servers selects Kafka") {
    assert(KafkaOptions.isKafka(kafka))
    assert(!KafkaOptions.isKafka(Map("path" -> "/landing", "kafka.bootstrap.servers" -> " ")))
  }

  private def record(value: Array[Byte], offset: Long, key: Array[Byte] = "k".getBytes): InternalRow =
    new GenericInternalRow(Array[Any](key, value, UTF8String.fromString("hr"), 2, offset, 1700000000000000L, 0))

  /**
   * Rows in memory, as Spark's Kafka reader would return them; `unsafe`: as it does return them,
   * each an [[org.apache.spark.sql.catalyst.expressions.UnsafeRow]] of one projection, whose
   * buffer the next record overwrites (the message is then read where the row holds it).
   */
  private final class Records(rows: Seq[InternalRow], unsafe: Boolean) extends PartitionReader[InternalRow] {
    private val remaining = rows.iterator
    private val projection = UnsafeProjection.create(Array[DataType](BinaryType, BinaryType, StringType, IntegerType,
      LongType, TimestampType, IntegerType))
    private var current: InternalRow = _
    var closed = false
    override def next(): Boolean = remaining.hasNext && {
      current = if (unsafe) projection(remaining.next()) else remaining.next()
      true
    }
    override def get(): InternalRow = current
    override def close(): Unit = closed = true
  }
  private def records(rows: InternalRow*) = new Records(rows, unsafe = false)

  for (unsafe <- Seq(false, true)) {
    test(s"records decode to rows; tombstones are counted apart; malformed ones name topic, partition and offset" +
        s" (${if (unsafe) "unsafe" else "generic"} rows)") {
      val counters = new ReadCounters
      val input = new KafkaMessageInput(new Records(Seq(
        record(salaries.metadataEnvelope(), 0), record(dataEnvelope(salaries, salary(10001, 60117)), 1),
        record(dataEnvelope(salaries, salary(10002, 70000)), 2, key = "a longer key".getBytes),
        record(null, 3), record("junk".getBytes, 4)), unsafe), counters)
      val reader = new MessageReader(input, readSpec(registry(salaries), salaries.name), counters)
      assert(reader.next() && reader.get.getInt(0) == 10001)
      assert(reader.next() && reader.get.getInt(0) == 10002)
      val error = intercept[ReplicateException](reader.next())
      assert(error.errorId == ErrorId.BadMagic && error.detail.contains("topic hr, partition 2, offset 4"))
      assert((counters.messagesRead, counters.rowsReturned, counters.metadataMessages, counters.tombstones) ==
        (4, 2, 1, 1))
    }
  }

  test("header__source: the Kafka coordinates and the key, no file") {
    val counters = new ReadCounters
    val spec = readSpec(registry(salaries), salaries.name, options(salaries.name, includeSource = true))
    val reader = new MessageReader(new KafkaMessageInput(records(
      record(dataEnvelope(salaries, salary(10001, 60117)), 41, key = null)), counters), spec, counters)
    assert(reader.next())
    val source = rowValues(reader.get, spec.required)("header__source").asInstanceOf[Map[String, Any]]
    assert(source == Map[String, Any]("file" -> null, "position" -> null, "index" -> null, "topic" -> "hr",
      "partition" -> 2, "offset" -> 41L, "timestamp" -> 1700000000000000L, "key" -> null))
  }

  test("the metadata scan of a partition's records closes Spark's reader") {
    val reader = records(record(salaries.metadataEnvelope(), 0), record(null, 1))
    assert(KafkaPlanner.scanMetadata(reader, DecodeLimits.Default).map(_.schemaId) == Seq(salaries.schemaId))
    assert(reader.closed)
  }
}
