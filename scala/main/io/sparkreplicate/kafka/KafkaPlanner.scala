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
   * @param scanMetadata the metadata messages of the records Spark's Kafka source reads with the
   *                     given options; strict (any unreadable message is an error) for a schema topic
   */
  def plan(decode: DecodeOptions, options: KafkaOptions,
      scanMetadata: (Map[String, String], Boolean) => Seq[TableVersion]): KafkaPlan = {
    if (decode.messages == MessageView.Metadata) {
      KafkaPlan(QuerySchema.metadataView(decode), options, SchemaRegistry.build(Nil, Seq(options.describe)))
    } else {
      val strict = options.schemaTopic.nonEmpty
      val registry = SchemaRegistry.build(scanMetadata(options.metadataSource, strict), Seq(options.metadataOrigin))
      KafkaPlan(QuerySchema.of(decode, registry), options, registry)
    }
  }

  /** The metadata messages among the records of one Kafka input partition ([[MetadataScanner.scan]]). */
  def scanMetadata(records: PartitionReader[InternalRow], limits: DecodeLimits, strict: Boolean): Seq[TableVersion] =
    MetadataScanner.scan(new KafkaMessageInput(records, new ReadCounters), limits, strict)
}
