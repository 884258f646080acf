package io.sparkreplicate.cdc

import org.apache.spark.sql.{AnalysisException, DataFrame, SparkSession}
import org.apache.spark.sql.functions._

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.catalyst.OutputColumns.{ChangeSeq, Operation, TransactionEventCounter, TransactionId,
  TransactionLastEvent}
import io.sparkreplicate.cdc.Changes.tableLayout
import io.sparkreplicate.kafka.KafkaOptions

/**
 * Every table of a landed topic applied into its own Delta table `target/SCHEMA.TABLE` and, when
 * transactional, whole transactions only: the rows of the others, and every change after the
 * oldest of them, held in `target/_spark_replicate/held/SCHEMA.TABLE` for a later run. The same
 * steps and the same tables as `spark_replicate.topic` (its docstring tells the steps and why they
 * survive a crash anywhere), so either language may continue what the other applied.
 */
private[cdc] object TopicApply {

  def run(spark: SparkSession, paths: Seq[String], target: String, schemaTopic: Option[String], scdType: Int,
      transactional: Boolean, options: Map[String, String]): Map[String, ApplyResult] = {
    val root = target.stripSuffix("/")
    val reading = readOptions(schemaTopic, options)
    val tables = tableNames(spark, paths, schemaTopic, options).map(name => name -> spark.read.format("replicate")
      .options(reading).option("table", name).option("layout", "flat").load(paths: _*)).toMap
    if (transactional) {
      val pending = tables.map { case (name, changes) => name -> withHeld(changes, root, name) }
      checkTransactionHeaders(pending) // (of the rows read once: rows held passed it when they were held)
      applyPending(pending, root, scdType)
    } else tables.map { case (name, changes) => name -> applyTable(changes, root, name, scdType) }
  }

  /**
   * The tables the metadata announces (the metadata of `schemaTopic`, else of `paths`), sorted.
   * Over Kafka (`kafka.bootstrap.servers` among the options) `paths` is empty, and the metadata is
   * that of the Kafka topic `schemaTopic`, else of the subscribed topics, read whole.
   */
  def tableNames(spark: SparkSession, paths: Seq[String], schemaTopic: Option[String],
      options: Map[String, String]): Seq[String] = {
    val reserved = Set("table", "schematopic", "messages")
    require(!options.keys.exists(name => reserved(name.toLowerCase)),
      "applyTopic reads every table of the metadata: pass neither table, messages nor schemaTopic among the options")
    val kafka = KafkaOptions.isKafka(options)
    require(!kafka || paths.isEmpty,
      "over Kafka the data topics are the options subscribe, subscribePattern or assign: pass no paths")
    val (listing, source, where) =
      if (kafka) (KafkaOptions.metadataListing(options, schemaTopic), Nil,
        schemaTopic.fold("the subscribed Kafka topics")(topic => s"Kafka topic $topic"))
      else {
        // `framing` describes the data paths; the schema topic's framing is always detected.
        val source = schemaTopic.map(_.split(",").toSeq).getOrElse(paths)
        (schemaTopic.fold(options)(_ => options.filter(_._1.toLowerCase != "framing")), source, source.mkString(", "))
      }
    val names = spark.read.format("replicate").options(listing).option("messages", "metadata").load(source: _*)
      .where(col("table_name").isNotNull).select(concat_ws(".", col("schema_name"), col("table_name")))
      .distinct().collect().map(_.getString(0)).sorted.toSeq
    if (names.isEmpty) {
      throw new ReplicateException(ErrorId.NoMetadata, s"no metadata (MD) message was found in $where; pass " +
        "schemaTopic, the topic that holds Replicate's metadata messages")
    }
    names
  }

  /** The reader's options for one table's rows. */
  def readOptions(schemaTopic: Option[String], options: Map[String, String]): Map[String, String] =
    schemaTopic.fold(options)(topic => options + ("schemaTopic" -> topic))

  /**
   * `readOnce`: `changes` are the same however often they are read, so the batch need not read
   * them into a local checkpoint of its own.
   */
  private def applyTable(changes: DataFrame, root: String, name: String, scdType: Int,
      readOnce: Boolean = false): ApplyResult =
    try DeltaTarget.applyBatch(changes, s"$root/$name", tableLayout(changes, Nil), scdType, None, readOnce)
    catch { case e: IllegalArgumentException if !e.isInstanceOf[ReplicateException] =>
      throw new IllegalArgumentException(s"$name: ${e.getMessage}", e)
    }

  def heldPath(root: String, table: String): String = s"$root/${DeltaTarget.StateDir}/held/$table"

  /**
   * The rows `table` holds, or none before a run or a cycle first held its rows (any other failure
   * to read them is raised: rows held are never taken for none).
   */
  def heldRows(spark: SparkSession, root: String, table: String): Option[DataFrame] =
    try Some(spark.read.format("delta").load(heldPath(root, table)))
    catch { case e: AnalysisException if DeltaTarget.Absent(e.getCondition) => None }

  /**
   * Applies each table's `pending` rows up to the boundary and holds the rest. The rows are the
   * same however often they are read: a local checkpoint's ([[withHeld]]), or a held table's, which
   * nothing writes before they are applied.
   */
  def applyPending(pending: Map[String, DataFrame], root: String, scdType: Int): Map[String, ApplyResult] = {
    val before = boundary(pending, root, scdType).fold(lit(true))(b => col(ChangeSeq).isNull || col(ChangeSeq) < b)
    val results = pending.map { case (name, rows) =>
      name -> applyTable(rows.where(before), root, name, scdType, readOnce = true)
    }
    pending.map { case (name, rows) =>
      // Every row from the boundary on is a change: (transaction, event counter) is its identity.
      rows.where(!before).dropDuplicates(TransactionId, TransactionEventCounter).write.format("delta")
        .mode("overwrite").option("overwriteSchema", "true").save(heldPath(root, name))
      name -> results(name).copy(held = rows.sparkSession.read.format("delta").load(heldPath(root, name)).count())
    }
  }

  /**
   * The rows read and the rows `table` holds (the columns read first: they carry the keys'
   * metadata), read once into a local checkpoint that every step of the run takes them from: a
   * Kafka read evaluated again reads up to the latest offsets again (as `spark_replicate.topic`
   * explains).
   */
  private def withHeld(changes: DataFrame, root: String, table: String): DataFrame =
    heldRows(changes.sparkSession, root, table).fold(changes)(changes.unionByName(_, allowMissingColumns = true))
      .localCheckpoint()

  /**
   * The first change sequence of the oldest incomplete transaction not applied yet. A transaction
   * is applied when none of its rows is newer than its key's last applied change.
   */
  private def boundary(pending: Map[String, DataFrame], root: String, scdType: Int): Option[String] = {
    val events = pending.map { case (name, rows) =>
      val layout = tableLayout(rows, Nil)
      val applied = DeltaTarget.appliedSequences(rows, s"$root/$name", layout, scdType)
      val last = col(DeltaTarget.LastApplied)
      rows.where(col(Operation) =!= "REFRESH").join(applied, layout.keys, "left")
        .select(col(TransactionId), col(TransactionEventCounter), col(TransactionLastEvent), col(ChangeSeq),
          (last.isNull || col(ChangeSeq) > last).as("fresh"))
    }.reduce(_ unionByName _)
    val transactions = events.groupBy(TransactionId).agg(count_distinct(col(TransactionEventCounter)).as("events"),
      max(when(col(TransactionLastEvent), col(TransactionEventCounter))).as("last"),
      max(TransactionEventCounter).as("highest"), min(ChangeSeq).as("first"), max("fresh").as("live"))
    val complete = coalesce(col("events") === col("last") && col("highest") === col("last"), lit(false))
    Option(transactions.agg(min(when(col("live") && !complete, col("first")))).head().getString(0))
  }

  /** Every change read carries its transaction's id, event counter and last-event flag. */
  def checkTransactionHeaders(tables: Map[String, DataFrame]): Unit = {
    val unheaded = col(TransactionId).isNull || col(TransactionEventCounter).isNull || col(TransactionLastEvent).isNull
    val counts = tables.map { case (name, changes) =>
      changes.where(col(Operation) =!= "REFRESH" && unheaded).select(lit(name).as("table"))
    }.reduce(_ unionByName _).groupBy("table").count().orderBy("table").collect()
    if (counts.nonEmpty) {
      throw new ReplicateException(ErrorId.NoTransactionHeaders, s"transactional apply needs every change's " +
        s"$TransactionId, $TransactionEventCounter and $TransactionLastEvent, which older Replicate versions do not " +
        s"send; change rows without them: ${counts.map(r => s"${r.getString(0)} (${r.getLong(1)})").mkString(", ")}. " +
        "Apply without transactional (each table's changes as they come), or from a Replicate version that sends them")
    }
  }
}
