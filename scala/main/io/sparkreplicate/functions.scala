package io.sparkreplicate

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, SparkSession, functions => F}

import io.sparkreplicate.sql.FromReplicate

/** The connector's column functions, for the DataFrame API. */
// scalastyle:off object.name
object functions {
// scalastyle:on object.name

  /**
   * Decodes the Replicate messages of a binary column (a Kafka DataFrame's `value`, a table of
   * raw bytes) into structs of the columns `spark.read.format("replicate")` returns for the same
   * options; null for metadata messages and for data messages of tables not read. The session
   * must have [[ReplicateExtensions]] (`spark.sql.extensions`).
   */
  def from_replicate(data: Column, options: Map[String, String]): Column = {
    SparkSession.getActiveSession.foreach { spark =>
      if (!spark.catalog.functionExists(FromReplicate.Name)) throw new ReplicateException(ErrorId.InvalidOption,
        s"${FromReplicate.Name} is not registered in this session: start it with " +
          s"spark.sql.extensions=${classOf[ReplicateExtensions].getName}")
    }
    F.call_function(FromReplicate.Name, data, F.typedLit(options))
  }

  def from_replicate(data: Column, options: java.util.Map[String, String]): Column =
    from_replicate(data, options.asScala.toMap)

  def from_replicate(data: Column): Column = from_replicate(data, Map.empty[String, String])
}
