package io.sparkreplicate.cdc

import scala.collection.mutable

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException, Trigger}

import io.sparkreplicate.ErrorId
import io.sparkreplicate.kafka.KafkaOptions

/**
 * The continuous runs of [[Changes.applyTopicContinuously]], over the tables of landed topics (or,
 * without `paths`, Kafka topics) read with `options`, into `root/SCHEMA.TABLE`: [[streams]]
 * without transactions, [[cycles]] with them. The same steps, checkpoints and held tables as `spark_replicate.topic`'s continuous
 * apply, whose docstring tells why a run that dies anywhere is finished by the next.
 */
private[cdc] final class ContinuousTopicApply(spark: SparkSession, paths: Seq[String], root: String,
    schemaTopic: Option[String], scdType: Int, options: Map[String, String], intervalMs: Long) {
  import ContinuousTopicApply._

  private val reading = {
    val asked = TopicApply.readOptions(schemaTopic, options)
    // A Kafka stream starts at the latest offsets by default, past every change already published.
    val startSet = asked.keys.exists(_.equalsIgnoreCase("startingOffsets"))
    if (KafkaOptions.isKafka(options) && !startSet) asked + ("startingOffsets" -> "earliest") else asked
  }
  /** `paths` as `DataFrameReader.load(paths: _*)` passes them, a JSON array, which the source reads back. */
  private val pathsOption = new ObjectMapper().writeValueAsString(paths.toArray)
  /** Each table's last batch applied before the run: what the run applied comes after it. */
  private val started = mutable.Map[String, Long]()

  /** Each table a stream applied per micro-batch, new tables picked up every interval. */
  def streams(stopping: () => Boolean): Map[String, ApplyResult] = {
    val running = mutable.LinkedHashMap[String, Supervised]()
    var listing = System.nanoTime() // when to look for new tables next
    try {
      while (!stopping()) {
        if (System.nanoTime() - listing >= 0) {
          listing = System.nanoTime() + intervalMs * 1000000L
          for (table <- TopicApply.tableNames(spark, paths, schemaTopic, options) if !running.contains(table)) {
            begin(table)
            running(table) = new Supervised(table, () => Changes.applyStream(stream(table), s"$root/$table",
              s"$root/${DeltaTarget.StateDir}/checkpoints/$table", Nil, scdType, Trigger.ProcessingTime(intervalMs)))
          }
        }
        running.values.foreach(_.restartIfSchemaChanged())
        Thread.sleep(math.min(200L, intervalMs))
      }
    } finally running.values.foreach(_.stopBetweenBatches())
    applied(Map.empty)
  }

  /**
   * Every interval: each table's files landed since the last cycle appended once to its held rows
   * (a stream with `Trigger.AvailableNow` into the held Delta table, whose sink commits a
   * micro-batch once), then the held rows of all tables applied as a transactional batch run
   * applies what it reads. A cycle that landed no row after one that applied skips the apply: the
   * held rows are what that one held, and applying them again would only log an empty batch per table.
   */
  def cycles(stopping: () => Boolean): Map[String, ApplyResult] = {
    val held = mutable.Map[String, Long]()
    var settled = false // whether the held rows are as the last cycle that applied left them
    var stop = false
    while (!stop) {
      val cycle = System.nanoTime()
      val tables = TopicApply.tableNames(spark, paths, schemaTopic, options)
      val landed = tables.map { table =>
        val hold = new Supervised(table, () => stream(table).writeStream.format("delta")
          .option("path", TopicApply.heldPath(root, table)).option("mergeSchema", "true")
          .option("checkpointLocation", s"$root/${DeltaTarget.StateDir}/held-checkpoints/$table")
          .trigger(Trigger.AvailableNow()).start())
        hold.awaitStopped()
        hold.readRows
      }
      settled = settled && !landed.contains(true)
      val pending = if (settled) Map.empty[String, DataFrame]
        else tables.flatMap(table => TopicApply.heldRows(spark, root, table).map(table -> _)).toMap
      pending.keys.foreach(begin)
      if (pending.nonEmpty) {
        TopicApply.checkTransactionHeaders(pending)
        held ++= TopicApply.applyPending(pending, root, scdType).map { case (table, result) => table -> result.held }
        settled = true
      }
      while (!stopping() && System.nanoTime() - cycle < intervalMs * 1000000L) Thread.sleep(math.min(200L, intervalMs))
      stop = stopping()
    }
    applied(held.toMap)
  }

  /** No paths: Kafka topics, among the options. */
  private def stream(table: String): DataFrame = spark.readStream.format("replicate").options(reading)
    .options(if (paths.isEmpty) Map.empty[String, String] else Map("paths" -> pathsOption))
    .option("table", table).option("layout", "flat").load()

  private def begin(table: String): Unit =
    started.getOrElseUpdate(table, DeltaTarget.appliedSince(spark, s"$root/$table", 0).batch)

  private def applied(held: Map[String, Long]): Map[String, ApplyResult] = started.toMap.map { case (table, batch) =>
    table -> DeltaTarget.appliedSince(spark, s"$root/$table", batch).copy(held = held.getOrElse(table, 0L))
  }
}

private[cdc] object ContinuousTopicApply {
  /**
   * One table's query, started again from its checkpoint when it stopped because the table's
   * schema changed (`REPLICATE_SCHEMA_CHANGED`: the new start reads the new columns); any other
   * failure ends the run.
   */
  final class Supervised(table: String, start: () => StreamingQuery) {
    private var query = start()
    private var lastChange = ""
    private var readBefore = false // by the queries before a restart

    /** Whether the table's queries read a row. */
    def readRows: Boolean = readBefore || query.recentProgress.exists(_.numInputRows > 0)

    def restartIfSchemaChanged(): Unit = if (!query.isActive) {
      val failure = query.exception.getOrElse(throw new IllegalStateException(s"$table: its query stopped"))
      if (!failure.getMessage.contains(ErrorId.SchemaChanged.name) || failure.getMessage == lastChange) {
        throw new IllegalStateException(s"$table: ${failure.getMessage}", failure)
      }
      lastChange = failure.getMessage
      readBefore = readRows
      query = start()
    }

    /** Waits until a query of `Trigger.AvailableNow` has read all there was, restarts included. */
    def awaitStopped(): Unit = {
      try query.awaitTermination() catch { case _: StreamingQueryException => }
      if (query.exception.nonEmpty) {
        restartIfSchemaChanged()
        awaitStopped()
      }
    }

    /** Stops the query once the batch it runs, if any, is done. */
    def stopBetweenBatches(): Unit = {
      while (query.isActive && query.status.isTriggerActive) Thread.sleep(200)
      if (query.isActive) query.stop()
    }
  }
}
