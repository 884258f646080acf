package io.sparkreplicate.kafka

import java.util.Locale

import io.sparkreplicate.{DecodeLimits, DecodeOptions, ErrorId, MessageView, OptionMap, ReplicateException}
import io.sparkreplicate.catalyst.MetadataRefresh

/**
 * The options of reading Kafka: Spark's own Kafka source reads the records (with every option of
 * its own, which mean what Spark's documentation says) and the connector decodes their values.
 *
 * @param source      the read's options for Spark's Kafka source: every option but the connector's
 *                    own (a scan adds the defaults of [[streamSource]] or [[batchSource]])
 * @param schemaTopic the Kafka topic of Replicate's metadata messages; None to take the metadata
 *                    from the data topics
 */
final case class KafkaOptions(source: Map[String, String], schemaTopic: Option[String]) {

  /**
   * Without a schema topic: Spark's Kafka source options that read the subscribed topics whole,
   * from their earliest offsets to their latest, for their metadata messages.
   */
  def dataTopicsWhole: Map[String, String] = KafkaOptions.polling(KafkaOptions.whole(source))

  /** What Spark's Kafka source is given for a stream: the options, polling as [[KafkaOptions.polling]] says. */
  def streamSource: Map[String, String] = KafkaOptions.polling(source)

  /**
   * What Spark's Kafka source is given for a batch read on `cores` cores: what a stream is given
   * and, unless `minPartitions` or `maxRecordsPerPartition` says how to cut the read, at least
   * [[KafkaOptions.RangesPerCore]] offset ranges per core. Spark's default of one task per topic
   * partition leaves cores idle when the partitions are fewer than the cores, or not a multiple of
   * them (3 partitions on 2 cores run as 2 tasks, then 1 alone), as the file reader's blocks never
   * do. Spark splits only the ranges that are large next to the others, and a topic with that many
   * partitions stays one task each.
   *
   * Not cut either: a read with `failOnDataLoss` false, as Spark's Kafka reader of ranges cut from
   * one partition whose records were lost can hand one consumer to two tasks (Spark 4.0 fails them
   * with "KafkaConsumer is not safe for multi-threaded access"); and a stream, whose executors reuse
   * their consumer of a partition across micro-batches only when it is one task each.
   */
  def batchSource(cores: Int): Map[String, String] = {
    val options = new OptionMap(source)
    val cutGiven = KafkaOptions.CutOptions.exists(options.nonBlank(_).nonEmpty)
    val lossTolerated = options.nonBlank(KafkaOptions.FailOnDataLoss).exists(_.equalsIgnoreCase("false"))
    if (cutGiven || lossTolerated) streamSource
    else streamSource + (KafkaOptions.MinPartitions -> (math.max(cores, 1) * KafkaOptions.RangesPerCore).toString)
  }

  /**
   * Reads the schema topic with a plain consumer of the `kafka.*` client settings: on the driver
   * when a query is planned or `from_replicate` analysed, and again in a task for `metadataWait`.
   * None without one: the data topics' metadata was all read when the query was planned, so there
   * is nothing to wait for.
   */
  def refresh(limits: DecodeLimits): Option[MetadataRefresh] = schemaTopic.map { topic =>
    new KafkaSchemaTopicRefresh(clientSettings, topic, limits)
  }

  /** The Kafka client's settings: the `kafka.*` options, without their prefix. */
  private def clientSettings: Map[String, String] = source.collect {
    case (k, v) if k.toLowerCase(Locale.ROOT).startsWith(KafkaOptions.ClientPrefix) =>
      k.drop(KafkaOptions.ClientPrefix.length) -> v
  }

  /** Where the metadata comes from, for error messages. */
  def metadataOrigin: String = schemaTopic.fold(s"Kafka $describe")(topic => s"Kafka topic $topic")

  /** The topics read, for the table's name and error messages. */
  def describe: String = KafkaOptions.Subscriptions.flatMap(name => source.collectFirst {
    case (k, v) if k.equalsIgnoreCase(name) => s"$name=$v"
  }).mkString(", ")
}

object KafkaOptions {
  val BootstrapServers = "kafka.bootstrap.servers"
  val SchemaTopic = "schemaTopic"
  private val ClientPrefix = "kafka."
  private val MinPartitions = "minPartitions"
  private val FailOnDataLoss = "failOnDataLoss"
  private val MaxPollRecords = "kafka.max.poll.records"
  /** More records than a fetch of 1 MB (the consumer's default) holds of 10-byte ones: any message is larger. */
  private val PollRecords = 100000
  /** Spark's Kafka options that say how to cut a read into tasks. */
  private val CutOptions = Seq(MinPartitions, "maxRecordsPerPartition")
  /**
   * Ranges per core of a batch read that sets no cut of its own: enough that a wave of tasks
   * left short at the end idles a small part of the cores, few enough that each task stays long
   * next to the cost of starting it.
   */
  private val RangesPerCore = 3
  /** Spark's Kafka source reads exactly one of these. */
  private val Subscriptions = Seq("subscribe", "subscribePattern", "assign")
  /** Where a read starts and ends, lower case: the metadata is read from all of the topic instead. */
  private val OffsetOptions = Set("startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy")
  /** The connector's own options, lower case: the rest goes to Spark's Kafka source unchanged. */
  private val Own = (DecodeOptions.names + SchemaTopic).map(_.toLowerCase(Locale.ROOT))

  /**
   * The options of the metadata view that lists the tables of `schemaTopic` (None: of the
   * subscribed topics), read whole from `options`, a Kafka read's.
   */
  def metadataListing(options: Map[String, String], schemaTopic: Option[String]): Map[String, String] =
    whole(schemaTopic.fold(options) { topic =>
      options.filter { case (k, _) => !Subscriptions.exists(_.equalsIgnoreCase(k)) } + ("subscribe" -> topic)
    })

  /**
   * `options` with, unless set, `kafka.max.poll.records` large enough that a poll hands out every
   * record the consumer holds. After every poll, Spark's Kafka reader (4.0 to 4.2) asks the broker for the
   * partition's earliest and latest offsets, two round trips, and a poll hands out 500 records by
   * default: those requests took a third of the connector's time reading profile M from Kafka. The
   * consumer fetches as much as before (`max.partition.fetch.bytes`), so no more records are held.
   */
  private def polling(options: Map[String, String]): Map[String, String] =
    if (new OptionMap(options).nonBlank(MaxPollRecords).nonEmpty) options
    else options + (MaxPollRecords -> PollRecords.toString)

  /** `options` with the offsets that start and end the read replaced by the topics' earliest and latest. */
  private def whole(options: Map[String, String]): Map[String, String] =
    options.filter { case (k, _) => !OffsetOptions(k.toLowerCase(Locale.ROOT)) } ++
      Map("startingOffsets" -> "earliest", "endingOffsets" -> "latest")

  /** `kafka.bootstrap.servers` set: the read is of Kafka, not of landed files. */
  def isKafka(options: Map[String, String]): Boolean = new OptionMap(options).nonBlank(BootstrapServers).nonEmpty

  /** @param decode the same options' decoding part, already parsed (its redaction applies here too) */
  def parse(options: Map[String, String], decode: DecodeOptions): KafkaOptions = try {
    val o = new OptionMap(options)
    val subscriptions = Subscriptions.filter(o.nonBlank(_).nonEmpty)
    if (subscriptions.size != 1) throw new ReplicateException(ErrorId.InvalidOption,
      s"a Kafka read takes exactly one of the options ${Subscriptions.map(s => s"`$s`").mkString(", ")} " +
        (if (subscriptions.isEmpty) "and none is set" else s"and ${subscriptions.mkString(", ")} are set"))
    val schemaTopic = o.nonBlank(SchemaTopic)
    if (decode.messages == MessageView.Metadata && schemaTopic.nonEmpty) {
      throw new ReplicateException(ErrorId.InvalidOption, s"option `$SchemaTopic` does not apply to " +
        s"`${DecodeOptions.Messages}` = ${MessageView.Metadata.name}, which reads the metadata messages of the " +
        "subscribed topics: subscribe to the schema topic instead")
    }
    KafkaOptions(ownRemoved(options), schemaTopic)
  } catch { case e: ReplicateException => throw decode.redaction(e) }

  /** The options of `from_replicate` over a Kafka schema topic: no data topic, a schema topic required. */
  def schemaTopicOnly(options: Map[String, String], decode: DecodeOptions): KafkaOptions = {
    val schemaTopic = new OptionMap(options).nonBlank(SchemaTopic).getOrElse(throw decode.redaction(
      new ReplicateException(ErrorId.InvalidOption, s"with `$BootstrapServers` set, set the option " +
        s"`$SchemaTopic` to the Kafka topic that holds Replicate's metadata messages: a binary column " +
        s"carries no metadata of its own (or read `${DecodeOptions.Messages}` = ${MessageView.Metadata.name}, " +
        "which needs none)")))
    KafkaOptions(ownRemoved(options), Some(schemaTopic))
  }

  private def ownRemoved(options: Map[String, String]): Map[String, String] =
    options.filter { case (k, _) => !Own(k.toLowerCase(Locale.ROOT)) }

  /** Kafka's classes (Spark's Kafka source, or at least its client) are not on the session. */
  def sourceMissing(cause: Throwable): ReplicateException = new ReplicateException(ErrorId.KafkaSourceMissing,
    "reading Kafka needs Spark's Kafka source (org.apache.spark:spark-sql-kafka-0-10_2.13 at the " +
      "session's Spark version) on the session: in Python call spark_replicate.configure_spark(builder, " +
      "kafka=True), with spark-submit pass it in --packages", cause)
}
