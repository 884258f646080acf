package io.sparkreplicate.kafka

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.PartitionReader

import io.sparkreplicate.{DecodeLimits, DecodeOptions, MessageView}
import io.sparkreplicate.catalyst.{MetadataScanner, QuerySchema, ReadCounters}
import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}

/**
 * The driver's decisions for one read of Kafka: the query's schema and the metadata its messages
 * are decoded with. Which records are read is Spark's Kafka source's to decide, batch by batch.
 */
final case class KafkaPlan(query: QuerySchema, options: KafkaOptions, registry: SchemaRegistry)

object KafkaPlanner {

  /**
   * @param scanDataTopics the metadata messages among the records Spark's Kafka source reads with
   *                       the given options (a Spark job: data topics can be large)
   */
  def plan(decode: DecodeOptions, options: KafkaOptions,
      scanDataTopics: Map[String, String] => Seq[TableVersion]): KafkaPlan = {
    if (decode.messages == MessageView.Metadata) {
      KafkaPlan(QuerySchema.metadataView(decode), options, SchemaRegistry.build(Nil, Seq(options.describe)))
    } else {
      // A schema topic holds one message per table version: the plain consumer that `metadataWait`
      // re-reads it with reads it here in tens of milliseconds, where a Spark job over Spark's
      // Kafka source took about 0.6 s of every query's planning.
      val versions = options.refresh(decode.limits).fold(scanDataTopics(options.dataTopicsWhole))(_.read())
      val registry = SchemaRegistry.build(versions, Seq(options.metadataOrigin))
      KafkaPlan(QuerySchema.of(decode, registry), options, registry)
    }
  }

  /**
   * The metadata messages among the records of one Kafka input partition of a data topic
   * ([[MetadataScanner.scan]], not strict: the data messages are passed over).
   */
  def scanMetadata(records: PartitionReader[InternalRow], limits: DecodeLimits): Seq[TableVersion] =
    MetadataScanner.scan(new KafkaMessageInput(records, new ReadCounters), limits, strict = false)
}
