package io.sparkreplicate.sql

import org.apache.hadoop.conf.Configuration
import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.SparkSession

import io.sparkreplicate.{Redaction, SessionDefaults}
import io.sparkreplicate.files.SplitPlanner

/**
 * What the connector takes from the active session: option defaults, the file system, split sizes,
 * the size estimate's factor, cores.
 */
object SessionBinding {

  def defaults(spark: SparkSession): SessionDefaults = SessionDefaults(
    columnNameOfCorruptRecord = spark.conf.get("spark.sql.columnNameOfCorruptRecord", "_corrupt_record"),
    timeZone = spark.conf.get("spark.sql.session.timeZone"),
    ignoreCorruptFiles = spark.conf.get("spark.sql.files.ignoreCorruptFiles", "false").toBoolean,
    ignoreMissingFiles = spark.conf.get("spark.sql.files.ignoreMissingFiles", "false").toBoolean,
    redactionRegex = spark.conf.get("spark.redaction.regex", Redaction.DefaultKeyRegex),
    stringRedactionRegex = spark.conf.getOption("spark.sql.redaction.string.regex"))

  /** Like Spark's file sources, every read option is also visible to the Hadoop file system. */
  def hadoopConf(spark: SparkSession, options: Map[String, String]): Configuration = {
    val conf = new Configuration(spark.sparkContext.hadoopConfiguration)
    options.foreach { case (k, v) => if (k != "path" && k != "paths") conf.set(k, v) }
    conf
  }

  def splitPlanner(spark: SparkSession): SplitPlanner = SplitPlanner(
    maxPartitionBytes = bytes(spark, "spark.sql.files.maxPartitionBytes", "128m"),
    openCostInBytes = bytes(spark, "spark.sql.files.openCostInBytes", "4m"),
    minPartitions = spark.conf.getOption("spark.sql.files.minPartitionNum").map(_.toInt).getOrElse(cores(spark)))

  /** What a file's bytes are multiplied by to estimate the data a scan of it returns, as for Spark's file scans. */
  def fileCompressionFactor(spark: SparkSession): Double =
    spark.conf.get("spark.sql.sources.fileCompressionFactor", "1.0").toDouble

  /** The cores a scan's tasks may use at once, as Spark's own scans count them. */
  def cores(spark: SparkSession): Int = spark.conf.getOption("spark.sql.leafNodeDefaultParallelism").map(_.toInt)
    .getOrElse(spark.sparkContext.defaultParallelism)

  private def bytes(spark: SparkSession, key: String, default: String): Long =
    JavaUtils.byteStringAsBytes(spark.conf.get(key, default))
}
