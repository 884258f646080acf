package io.sparkreplicate.sql

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.util.MapData
import org.apache.spark.sql.types.{MapType, StringType}

import io.sparkreplicate.{DecodeOptions, ErrorId, MessageView, ParseMode, ReplicateException, SessionDefaults}
import io.sparkreplicate.catalyst.{MessageFilter, MetadataRefresh, QuerySchema}
import io.sparkreplicate.codec.SchemaRegistry
import io.sparkreplicate.files.{FileOptions, FilePlanner}
import io.sparkreplicate.kafka.KafkaOptions

/**
 * Resolves `from_replicate(value[, options])` on the driver: parses the options as the reader
 * does, reads the metadata from the schema topic once, and fixes the struct the expression returns.
 */
object FromReplicate {
  val Name = "from_replicate"

  val info: ExpressionInfo = new ExpressionInfo(classOf[ReplicateDecode].getName, null, Name,
    s"$Name(value, options) - Decodes a Qlik Replicate message (binary) into a struct of the columns " +
      "that spark.read.format(\"replicate\") returns for the same options; null for metadata messages " +
      "and for data messages of tables not read.", "", "", "", "", "", "", "")

  /** The function's builder, as Spark's function registry calls it with the call's arguments. */
  def build(arguments: Seq[Expression]): Expression = arguments match {
    case Seq(value) => expression(value, Map.empty)
    case Seq(value, options) => expression(value, constantMap(options))
    case _ => throw new ReplicateException(ErrorId.InvalidOption, s"$Name takes a binary column and, " +
      s"optionally, a map of options, e.g. $Name(value, map('schemaTopic', '/landing/_schema')); it got " +
      s"${arguments.size} arguments")
  }

  def expression(value: Expression, options: Map[String, String]): ReplicateDecode = {
    val spark = SparkSession.active
    val session = SessionBinding.defaults(spark)
    val decode = DecodeOptions.parse(options, session)
    refuseReaderOnly(decode)
    try {
      val spec = if (decode.messages == MessageView.Metadata) {
        val query = QuerySchema.metadataView(decode)
        query.rowSpec(null, query.schema, MessageFilter.KeepAll)
      } else {
        val (registry, refresh) = schemaTopic(options, decode, spark, session)
        val query = QuerySchema.of(decode, registry)
        query.rowSpec(registry, query.schema, MessageFilter.KeepAll, refresh)
      }
      ReplicateDecode(value, spec)
    } catch { case e: ReplicateException => throw decode.redaction(e) }
  }

  /**
   * The metadata of the schema topic, read now, and its re-reading for `metadataWait`: a Kafka
   * topic with `kafka.bootstrap.servers` set (read by a plain consumer, here and in the tasks),
   * landed files otherwise.
   */
  private def schemaTopic(options: Map[String, String], decode: DecodeOptions, spark: SparkSession,
      session: SessionDefaults): (SchemaRegistry, Option[MetadataRefresh]) =
    if (KafkaOptions.isKafka(options)) {
      val kafka = KafkaOptions.schemaTopicOnly(options, decode)
      val refresh = kafka.refresh(decode.limits)
      (SchemaRegistry.build(refresh.toSeq.flatMap(_.read()), Seq(kafka.metadataOrigin)), refresh)
    } else {
      val files = FileOptions.schemaTopicOnly(options, decode, session)
      val conf = SessionBinding.hadoopConf(spark, options)
      (FilePlanner.schemaTopicRegistry(files, decode.limits, conf), FilePlanner.refresh(files, decode.limits, conf))
    }

  /** What only a reader can do: drop a row, or say which file a row came from. */
  private def refuseReaderOnly(decode: DecodeOptions): Unit = {
    if (decode.mode == ParseMode.DropMalformed) throw new ReplicateException(ErrorId.InvalidOption,
      s"$Name cannot drop rows, so `${DecodeOptions.Mode}` = ${ParseMode.DropMalformed.name} does not apply: " +
        s"use ${ParseMode.Permissive.name} and filter out the rows whose " +
        s"`${decode.columnNameOfCorruptRecord}` field is not null")
    if (decode.includeSource) throw new ReplicateException(ErrorId.InvalidOption,
      s"`${DecodeOptions.IncludeSource}` does not apply to $Name: the message's origin is in the " +
        "DataFrame's other columns (a Kafka DataFrame's topic, partition and offset, say)")
  }

  private def constantMap(options: Expression): Map[String, String] = options.dataType match {
    case MapType(StringType, StringType, _) if options.foldable =>
      Option(options.eval().asInstanceOf[MapData]).fold(Map.empty[String, String]) { map =>
        val keys = map.keyArray()
        val values = map.valueArray()
        (0 until map.numElements()).map { i =>
          keys.getUTF8String(i).toString -> Option(values.getUTF8String(i)).map(_.toString).orNull
        }.toMap
      }
    case _ => throw new ReplicateException(ErrorId.InvalidOption, s"the options of $Name must be a " +
      s"constant map of strings, e.g. map('schemaTopic', '/landing/_schema', 'table', 'HR.EMPLOYEES'); got " +
      s"${options.sql} of type ${options.dataType.sql}")
  }
}
