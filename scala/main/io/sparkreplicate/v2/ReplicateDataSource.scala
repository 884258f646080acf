package io.sparkreplicate.v2

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SQLContext
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.{BaseRelation, DataSourceRegister, RelationProvider}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.kafka.KafkaOptions

/**
 * `spark.read.format("replicate")`. The schema is decided by the metadata messages, so it is
 * always inferred; Spark asks for it and then for the table with the same options, and the plan
 * built for the first call serves the second. With `kafka.bootstrap.servers` the messages are
 * read from Kafka, otherwise from landed files. Spark asks for a V1 relation only for a catalog
 * table when the session catalog is not its own (see [[ReplicateRelation]]).
 */
final class ReplicateDataSource extends TableProvider with DataSourceRegister with RelationProvider {
  /** The options last planned for, the query's schema and its table. */
  private var planned: Option[(Map[String, String], StructType, Table)] = None

  override def shortName(): String = "replicate"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    plan(options.asCaseSensitiveMap().asScala.toMap)._1

  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table = {
    val (planned, table) = plan(properties.asScala.toMap)
    if (schema != null && schema != planned) throw new ReplicateException(ErrorId.InvalidOption,
      "the replicate source decides its schema from Replicate's metadata messages; do not pass " +
        "a schema to the reader (select or cast columns afterwards instead)")
    table
  }

  override def createRelation(sqlContext: SQLContext, parameters: Map[String, String]): BaseRelation =
    new ReplicateRelation(sqlContext, sqlContext.sparkSession.read.format(shortName()).options(parameters).load())

  private def plan(options: Map[String, String]): (StructType, Table) = planned match {
    case Some((seen, schema, table)) if seen == options => (schema, table)
    case _ =>
      val (schema, table) = if (KafkaOptions.isKafka(options)) {
        val kafka = ReplicatePlanning.planKafka(options)
        (kafka.query.schema, new ReplicateKafkaTable(kafka))
      } else {
        val files = ReplicatePlanning.plan(options)
        (files.query.schema, new ReplicateTable(files, options))
      }
      planned = Some((options, schema, table))
      (schema, table)
  }
}
