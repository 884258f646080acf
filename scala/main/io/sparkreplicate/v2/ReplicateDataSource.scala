package io.sparkreplicate.v2

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.files.FilePlan

/**
 * `spark.read.format("replicate")`. The schema is decided by the metadata messages, so it is
 * always inferred; Spark asks for it and then for the table with the same options, and the plan
 * built for the first call serves the second.
 */
final class ReplicateDataSource extends TableProvider with DataSourceRegister {
  private var planned: Option[(Map[String, String], FilePlan)] = None

  override def shortName(): String = "replicate"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    plan(options.asCaseSensitiveMap().asScala.toMap).query.schema

  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table = {
    val readPlan = plan(properties.asScala.toMap)
    if (schema != null && schema != readPlan.query.schema) throw new ReplicateException(ErrorId.InvalidOption,
      "the replicate source decides its schema from Replicate's metadata messages; do not pass " +
        "a schema to the reader (select or cast columns afterwards instead)")
    new ReplicateTable(readPlan, properties.asScala.toMap)
  }

  private def plan(options: Map[String, String]): FilePlan = planned match {
    case Some((seen, readPlan)) if seen == options => readPlan
    case _ =>
      val readPlan = ReplicatePlanning.plan(options)
      planned = Some(options -> readPlan)
      readPlan
  }
}
