package io.sparkreplicate.v2

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream, ObjectStreamClass}

import scala.reflect.ClassTag

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession

import io.sparkreplicate.{DecodeOptions, ReplicateException}
import io.sparkreplicate.codec.TableVersion
import io.sparkreplicate.files.{FileOptions, FilePlan, FilePlanner, FileSplit, SerializableConfiguration}
import io.sparkreplicate.kafka.{KafkaOptions, KafkaPlan, KafkaPlanner}
import io.sparkreplicate.sql.SessionBinding

/** Binds the sources' planners to the active session: its configuration and its cluster. */
private[v2] object ReplicatePlanning {
  /** Below this much data-topic input, metadata is collected on the driver instead of by a job. */
  private val DriverScanBytes = 32L * 1024 * 1024

  def plan(options: Map[String, String]): FilePlan = {
    val spark = SparkSession.active
    val session = SessionBinding.defaults(spark)
    val decode = DecodeOptions.parse(options, session)
    val files = FileOptions.parse(options, decode, session)
    val conf = SessionBinding.hadoopConf(spark, options)
    try FilePlanner.plan(decode, files, conf, scanDataTopics(spark, conf, files, decode)) catch {
      case e: ReplicateException => throw decode.redaction(e)
    }
  }

  /** A read of Kafka: a schema topic is read on the driver, the data topics' metadata by a Spark job. */
  def planKafka(options: Map[String, String]): KafkaPlan = {
    val decode = DecodeOptions.parse(options, SessionBinding.defaults(SparkSession.active))
    val kafka = KafkaOptions.parse(options, decode)
    try KafkaPlanner.plan(decode, kafka, SparkKafkaSource.scanMetadata(_, decode.limits)) catch {
      case e: ReplicateException => throw decode.redaction(e)
    }
  }

  /** The metadata messages of data-topic files: on the driver when they are small, else by a Spark job. */
  def scanDataTopics(spark: SparkSession, conf: Configuration, options: FileOptions, decode: DecodeOptions)
      (splits: Seq[FileSplit]): Seq[TableVersion] = {
    val limits = decode.limits
    if (splits.map(_.length).sum <= DriverScanBytes) {
      splits.flatMap(FilePlanner.scanMetadata(_, conf, options, limits, strict = false))
    } else {
      val shipped = new SerializableConfiguration(conf)
      metadataJob(spark, splits)(FilePlanner.scanMetadata(_, shipped.value, options, limits, strict = false))
    }
  }

  /** Runs `scan` over `inputs` as a Spark job, at most a few inputs per task. */
  def metadataJob[T: ClassTag](spark: SparkSession, inputs: Seq[T])(scan: T => Seq[TableVersion]): Seq[TableVersion] =
    spark.sparkContext.parallelize(inputs, math.max(1, math.min(inputs.size, spark.sparkContext.defaultParallelism * 4)))
      .mapPartitions(_.flatMap(scan).map(serialize))
      .collect().toSeq.map(deserialize)

  // The metadata job returns bytes: the driver deserializes task results with a class loader that
  // does not see a jar added to a Spark Connect session (`addArtifacts`), while this code's does.
  private def serialize(version: TableVersion): Array[Byte] = {
    val bytes = new ByteArrayOutputStream
    val out = new ObjectOutputStream(bytes)
    try out.writeObject(version) finally out.close()
    bytes.toByteArray
  }

  private def deserialize(bytes: Array[Byte]): TableVersion = {
    val in = new ObjectInputStream(new ByteArrayInputStream(bytes)) {
      override def resolveClass(desc: ObjectStreamClass): Class[_] =
        try Class.forName(desc.getName, false, classOf[TableVersion].getClassLoader) catch {
          case _: ClassNotFoundException => super.resolveClass(desc)
        }
    }
    try in.readObject().asInstanceOf[TableVersion] finally in.close()
  }
}
