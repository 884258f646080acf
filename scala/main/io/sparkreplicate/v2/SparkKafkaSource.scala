package io.sparkreplicate.v2

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, TableProvider}
import org.apache.spark.sql.connector.read.Scan
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.sparkreplicate.DecodeLimits
import io.sparkreplicate.codec.TableVersion
import io.sparkreplicate.kafka.{KafkaOptions, KafkaPlanner}

/**
 * Spark's own Kafka source (spark-sql-kafka-0-10), used through the public DataSource V2
 * interfaces only: its table, scan, batch and micro-batch stream. It is found by name, so that
 * the connector runs without it until a Kafka read needs it.
 */
private[v2] object SparkKafkaSource {
  private val ProviderClass = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

  /** Spark's Kafka scan of `options`, as `spark.read.format("kafka")` would build it. */
  def scan(options: Map[String, String]): Scan = {
    val map = new CaseInsensitiveStringMap(options.asJava)
    val kafka = provider()
    kafka.getTable(kafka.inferSchema(map), Array.empty, map) match {
      case table: SupportsRead => table.newScanBuilder(map).build()
      case other => throw new IllegalStateException(s"Spark's Kafka table ${other.name()} cannot be read")
    }
  }

  /**
   * The metadata messages of the records `options` select, read by a Spark job over the input
   * partitions of Spark's Kafka batch (its readers run in tasks only).
   */
  def scanMetadata(options: Map[String, String], limits: DecodeLimits): Seq[TableVersion] = {
    val batch = scan(options).toBatch
    val factory = batch.createReaderFactory()
    ReplicatePlanning.metadataJob(SparkSession.active, batch.planInputPartitions().toSeq)(partition =>
      KafkaPlanner.scanMetadata(factory.createReader(partition), limits))
  }

  private def provider(): TableProvider = {
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    try Class.forName(ProviderClass, true, loader).getDeclaredConstructor().newInstance().asInstanceOf[TableProvider]
    catch {
      case e: ClassNotFoundException => throw KafkaOptions.sourceMissing(e)
    }
  }
}
