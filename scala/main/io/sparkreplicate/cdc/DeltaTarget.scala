package io.sparkreplicate.cdc

import java.util.UUID

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{AnalysisException, Column, DataFrame, Row, SparkSession}
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}

import io.sparkreplicate.catalyst.OutputColumns.{ChangeSeq, Operation}
import io.sparkreplicate.cdc.Changes._

/**
 * A Delta Lake table that batches of changes are applied to, and what is kept beside it under
 * `<target location>/_spark_replicate/` (Delta keeps names starting with `_` out of the table, and
 * VACUUM leaves them): the Delta table `keys` (each key's last applied change sequence, '' for a
 * full-load row, and whether it is deleted: a tombstone), the Parquet files `staged` (the batch
 * being applied: its fresh changes replayed after the target's rows; type 1: each key's last event
 * only) and the Delta table `batches` (a row when a batch is staged, unless it writes nothing,
 * and one when it is applied, with its counts). The same tables, the same steps and the same
 * recovery as `spark_replicate.apply` (its docstring tells the steps), so either language may
 * continue a target the other applied to.
 */
private[cdc] object DeltaTarget {
  val StateDir = "_spark_replicate"
  private val KeySequence = "__replicate_change_seq"
  private val Deleted = "__replicate_deleted"
  // Whether the target held the key before the batch, and whether the key was live before its event.
  private val Existed = "__replicate_existed"
  private val LiveBefore = "__replicate_live_before"
  // On each key's last event: how many of the batch's changes its key took (repeats and stale ones not),
  // and how many change rows of the input it had (the input counted by the staging pass).
  private val AppliedChanges = "__replicate_applied"
  private val InputRows = "__replicate_input_rows"
  private val Staged = "staged"
  private val Applied = "applied"

  case class LogRow(batch: Long, status: String, stream: Option[String], streamBatch: Option[Long],
      inserted: Long, updated: Long, deleted: Long, ignored: Long) {
    def result: ApplyResult = ApplyResult(batch, inserted, updated, deleted, ignored)
    def toRow: Row = Row(batch, status, stream.orNull, streamBatch.map(Long.box).orNull, inserted, updated, deleted,
      ignored)
  }

  private val LogSchema = StructType(Seq("batch", "status", "stream", "stream_batch", "inserted", "updated",
    "deleted", "ignored").map(name => StructField(name, if (name == "status" || name == "stream") StringType else LongType)))

  /**
   * A batch's events carry a value per column, and Spark's whole-stage code for them outgrows
   * 8,000 bytes of bytecode per method on wide tables, which HotSpot never JIT-compiles: the stage
   * then runs interpreted (`latest_state` of a 30-column table took 1.4x as long). At this limit Spark splits such a stage instead (its own advice
   * for HotSpot; its default is 65535, the largest method Java allows). A batch runs with it unless
   * the session's limit is lower already, and the session's value is restored afterwards.
   */
  private[cdc] val HugeMethodLimit = "spark.sql.codegen.hugeMethodLimit"
  private[cdc] val JitMethodLimit = 8000

  private[cdc] def withJitSizedMethods[T](spark: SparkSession)(body: => T): T =
    if (spark.conf.get(HugeMethodLimit).toInt <= JitMethodLimit) body
    else withSetting(spark, HugeMethodLimit, JitMethodLimit.toString)(body)

  /** Runs `body` with the session's setting `key` at `value`, then restores the session's own (or unsets it). */
  private[cdc] def withSetting[T](spark: SparkSession, key: String, value: String)(body: => T): T = {
    val previous = spark.conf.getAll.get(key) // (set in the session; `getOption` would give a default too)
    spark.conf.set(key, value)
    try body finally previous.fold(spark.conf.unset(key))(spark.conf.set(key, _))
  }

  /**
   * Delta copies a MERGE's source first unless it reads Delta tables only, lest the source change
   * between its two passes; the staged files do not change while a batch is applied, so the copy
   * would only cost time (README: Speed).
   */
  private[cdc] val MergeMaterializeSource = "spark.databricks.delta.merge.materializeSource"

  /** Delta's idempotent writes: a write tagged with a version its application committed to the table already is skipped. */
  private[cdc] val TxnAppId = "spark.databricks.delta.write.txnAppId"
  private[cdc] val TxnVersion = "spark.databricks.delta.write.txnVersion"
  private val AppIdPrefix = "spark-replicate/"
  /** The log table's property that names the application its batches' writes are tagged with. */
  private val AppIdProperty = "spark-replicate.appId"
  /** What creating a table that exists raises, by path and by name. */
  private val Exists = Set("DELTA_PATH_EXISTS", "TABLE_OR_VIEW_ALREADY_EXISTS")
  /**
   * What reading a Delta table by path raises when it is not made yet: no directory; no log in it; a
   * directory inside a Delta table (the target's), which Delta takes for a partition of that table.
   */
  private[cdc] val Absent = Set("PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_INVALID_PARTITION_PATH")

  /**
   * Staged rows are written once and read whole, a few times, never searched: Parquet's
   * dictionaries (a hash lookup per value written) would only cost time, about a tenth of a
   * batch's staging.
   */
  private[cdc] val StagedWithoutDictionaries = "parquet.enable.dictionary" -> "false"

  /**
   * Every batch adds files to the `batches` and `keys` tables (two one-row appends; a MERGE), and
   * every batch reads them whole: without compaction a stream applied for days would read thousands
   * of small files per batch (400 appends to a log: its read took 0.56 s against 0.27 s after 10; on
   * an object store each file costs a request). Delta's auto compaction joins them once 50 are
   * small. It is set after a state's first batch: a first load leaves a file or two in each, and
   * Delta's checks after the first commits to tables made with it ran jobs that cost a first load
   * over 2 s of 10. The target is the user's: its compaction is their choice (README "Applying changes").
   */
  private[cdc] val AutoCompact = "delta.autoOptimize.autoCompact" -> "true"
  private val AutoCompactSql = s"'${AutoCompact._1}' = '${AutoCompact._2}'" // (as TBLPROPERTIES lists it)

  def checkScdType(scdType: Int): Unit =
    require(scdType == 1 || scdType == 2, s"scdType=$scdType: 1 (current state) or 2 (history)")

  /**
   * Applies one batch; `stream` is the (checkpoint location, batch id) of a micro-batch.
   * `readOnce`: `changes` give the same rows however often they are evaluated (a local
   * checkpoint), so the batch need not read them into one of its own.
   */
  def applyBatch(changes: DataFrame, target: String, layout: Layout, scdType: Int,
      stream: Option[(String, Long)], readOnce: Boolean = false): ApplyResult = {
    checkScdType(scdType)
    withJitSizedMethods(changes.sparkSession) {
      val state = new DeltaTarget(changes.sparkSession, target, changes, layout, scdType)
      val applied = state.log.filter(_.status == Applied).map(_.batch).toSet
      // Spark runs a micro-batch again after a failure: it may have been applied, or staged.
      val again = stream.flatMap { case (location, id) =>
        state.log.find(row => row.stream.contains(location) && row.streamBatch.contains(id))
      }
      again match {
        case Some(row) =>
          if (!applied(row.batch)) state.finish(row)
          row.result
        case None =>
          state.finishInterrupted()
          val (entry, writes) = state.stage(changes, (state.log.map(_.batch) :+ 0L).max + 1, stream, readOnce)
          state.finish(entry, merge = writes)
          entry.result
      }
    }
  }

  /**
   * Each key's last applied change sequence in `target` ('' for a full-load row): the key columns
   * and [[LastApplied]], once a batch that a run which died left staged is finished (none before a
   * first batch).
   */
  def appliedSequences(changes: DataFrame, target: String, layout: Layout, scdType: Int): DataFrame = {
    checkScdType(scdType)
    val state = new DeltaTarget(changes.sparkSession, target, changes, layout, scdType)
    state.finishInterrupted()
    state.readKeys.select(layout.keys.map(quoted) :+ col(KeySequence).as(LastApplied): _*)
  }

  val LastApplied = "__replicate_last_applied"

  /**
   * The batches applied to the Delta table at path `target` after `batch`, summed; `batch` is the
   * last of them (the one given when there is none, or when the target has no log yet).
   */
  def appliedSince(spark: SparkSession, target: String, batch: Long): ApplyResult = {
    val log = try Some(spark.read.format("delta").load(s"$target/$StateDir/batches")) catch {
      case _: AnalysisException => None // not created yet: no batch applied
    }
    log.fold(ApplyResult(batch, 0, 0, 0, 0)) { batches =>
      val row = batches.where(col("status") === Applied && col("batch") > batch)
        .agg(max("batch"), Seq("inserted", "updated", "deleted", "ignored").map(c => sum(c)): _*).head()
      def at(i: Int): Long = if (row.isNullAt(i)) 0L else row.getLong(i)
      ApplyResult(if (row.isNullAt(0)) batch else row.getLong(0), at(1), at(2), at(3), at(4))
    }
  }

  /** The SQL name of the table of `format` files at `path`. */
  private def pathName(path: String, format: String = "delta"): String = s"$format.${quote(path)}"
}

private[cdc] class DeltaTarget(spark: SparkSession, name: String, changes: DataFrame, layout: Layout, scdType: Int) {
  import DeltaTarget._

  private val targetPath = if (name.contains("/")) Some(name) else None
  // Delta's SQL names a table by path only when the path is absolute (delta.`/...`).
  require(targetPath.forall(path => path.startsWith("/") || path.takeWhile(_ != '/').contains(':')),
    s"target $name is a relative path: pass an absolute path or a URI (file:/..., s3a://...), or a table name")
  private val target = targetPath.map(pathName(_)).getOrElse(name)
  /**
   * Whether a table may hold files (false: certainly none, so an INSERT can stand for a MERGE and
   * the target has no baseline), as DESCRIBE DETAIL told (or the log, or creating the table:
   * below): each DESCRIBE costs Delta a snapshot, so it is asked at most once per table and batch,
   * and forgotten once the batch writes it.
   */
  private val mayHoldFiles = mutable.Map.empty[String, Boolean]
  /**
   * Tables not made yet. A path target and the keys are made by their first batch's write, which
   * costs Delta no snapshot, where a write into a table made empty first costs one (about a second
   * per table on a first load).
   */
  private val absent = mutable.Set.empty[String]
  if (targetPath.isEmpty) createTarget() // its location is needed first: created at once, if absent
  private val state = targetPath.getOrElse(described(target).getAs[String]("location")).stripSuffix("/") + "/" + StateDir
  private val (keysPath, stagedPath, batchesPath) = (s"$state/keys", s"$state/staged", s"$state/batches")
  private val (keys, staged, batches) = (pathName(keysPath), pathName(stagedPath, "parquet"), pathName(batchesPath))
  /** The keys as a batch that staged nothing leaves them (empty), for a state whose keys are not made. */
  private val noKeys = changes.select(layout.keys.map(quoted) :+ lit("").as(KeySequence) :+ lit(false).as(Deleted): _*)
    .limit(0)
  /** The batches log; made first: where it logs a batch applied, the target and the keys are made. */
  val log: Seq[LogRow] = try readLog() catch {
    case _: AnalysisException =>
      spark.sql(s"CREATE TABLE IF NOT EXISTS $batches (${LogSchema.toDDL}) USING delta " +
        s"TBLPROPERTIES ('$AppIdProperty' = '$AppIdPrefix${UUID.randomUUID()}')")
      Nil
  }
  // Only a batch's MERGE writes keys, once the batch is logged staged: with no batch logged there
  // are none; after one, they are merged, not described (a MERGE into no file is only slower).
  mayHoldFiles(keys) = log.nonEmpty
  // A batch applied that inserted rows left the target with files: merged, not described.
  if (log.exists(row => row.status == Applied && row.inserted > 0)) mayHoldFiles.getOrElseUpdate(target, true)
  columnsOf(target).foreach { columns =>
    val history = columns.contains(StartAt)
    require(history == (scdType == 2), s"$name is ${if (history) "a history (SCD type 2)" else
      "a current-state (SCD type 1)"} table: apply with scdType=${if (history) 2 else 1}, or choose another target")
  }
  columnsOf(keys).map(_.filterNot(Set(KeySequence, Deleted))).foreach { known =>
    require(known == layout.keys, s"$name was applied with the keys ${known.mkString(", ")}, not " +
      s"${layout.keys.mkString(", ")}: pass keys = ${known.map(k => s"\"$k\"").mkString("Seq(", ", ", ")")}, or choose another target")
  }

  /**
   * The target named by a table name, with the table's columns (type 2: and the version columns),
   * unless it exists. A target created here holds no file, which spares the batch asking Delta (a
   * snapshot).
   */
  private def createTarget(): Unit = {
    val columns = changes.select(layout.columns.map(quoted): _*).limit(0)
    val tableColumns = if (scdType == 1) columns
      else columns.select(col("*") +: Seq(StartAt, EndAt).map(c => lit(null).cast(StringType).as(c)): _*)
    try {
      tableColumns.write.format("delta").saveAsTable(name)
      mayHoldFiles(target) = false
    } catch {
      case e: AnalysisException if Exists(e.getCondition) =>
    }
  }

  /** Finishes, from what was staged, the batches a run that died logged staged but not applied. */
  def finishInterrupted(): Unit = {
    val applied = log.filter(_.status == Applied).map(_.batch).toSet
    log.filter(row => row.status == Staged && !applied(row.batch)).sortBy(_.batch).foreach(row => finish(row))
  }

  /**
   * Replays the batch's fresh changes after the target's rows into `staged`. Returns the log's
   * entry and whether the batch writes anything (rows staged, or a table to make): then it is
   * logged staged, for a run that dies to be finished by the next; else only its entry logged
   * applied is written (a commit less for a batch with nothing new).
   */
  def stage(input: DataFrame, batch: Long, stream: Option[(String, Long)], readOnce: Boolean): (LogRow, Boolean) = {
    val rows = if (readOnce) input else checkpointed(input)
    val events = changeEvents(rows, layout)
    // The keys and the target hold every key ever applied; a batch needs the rows of its own keys.
    // A semi-join with the batch's distinct keys, which Spark broadcasts when they are small (the
    // batch is checkpointed, so its size is known), filters a table as it is scanned, where a join
    // with the events shuffled and sorted all its rows (README: Speed).
    val batchKeys = events.select(layout.keys.map(quoted): _*).distinct()
    // Only a batch's MERGE writes keys: before the first batch there is none to be stale against.
    val fresh = if (log.isEmpty) events else events.join(readKeys.join(batchKeys, layout.keys, "left_semi"),
        layout.keys, "left")
      .where(col(KeySequence).isNull || coalesce(col(ChangeSeq), lit("")) > col(KeySequence))
      .drop(KeySequence, Deleted)
    val withBaseline = baseline(fresh, events, batchKeys).fold(fresh)(fresh.unionByName(_))
    val inputRows = count_if(col(Rank) === 1 && !col(Derived)).over(everyEvent(layout)).as(InputRows)
    val staged = if (scdType == 1) {
      // A current-state target takes each key's last event only. Its changes applied are its
      // distinct changes (not the baseline, nor the DELETEs of moved rows' old keys); both flags
      // are over all the key's events, the frame the fold is computed over already.
      val change = when(col(Rank) === 1 && !col(Derived), struct(col(ChangeSeq).as("s"), col(Operation).as("p")))
      replayLast(withBaseline, layout, (min(col(Rank)).over(everyEvent(layout)) === 0).as(Existed),
        size(collect_set(change).over(everyEvent(layout))).as(AppliedChanges), inputRows)
    } else {
      // Windows over the replay's own order (or its keys alone) reuse its sort.
      val perKey = Window.partitionBy(layout.keys.map(quoted): _*)
      replay(withBaseline, layout, inputRows).select(col("*"), (min(col(Rank)).over(perKey) === 0).as(Existed),
        coalesce(lag(col(Operation), 1).over(eventOrder(layout)) =!= Delete, lit(false)).as(LiveBefore),
        count_if(col(Rank) === 1 && !col(Derived)).over(perKey).as(AppliedChanges))
    }
    // Plain Parquet, not Delta: staged rows are read whole, and only until the next batch
    // overwrites them, so a Delta table's snapshot (a state reconstruction of about a second per
    // version) and statistics would only cost time. A run that dies while writing them has not
    // logged the batch staged, so the next run stages it again; once logged, nothing rewrites them
    // before the batch is logged applied.
    staged.withColumnRenamed(ChangeSeq, StartAt).write.mode("overwrite").options(Map(StagedWithoutDictionaries))
      .parquet(stagedPath)
    // Before the first batch every change is fresh, and staged: the staging pass counted the input.
    // After it the stale ones are dropped first, and the input (read once) is counted.
    val (inserted, updated, deleted, ignored, rowsStaged) = counts(Option.when(log.nonEmpty)(rows))
    val entry = LogRow(batch, Staged, stream.map(_._1), stream.map(_._2), inserted, updated, deleted, ignored)
    val writes = rowsStaged > 0 || absent.nonEmpty
    if (writes) appendLog(entry)
    (entry, writes)
  }

  /**
   * The changes, read once where the batch reads them more than once (the keys of the baseline's
   * joins; after a first batch, the counts), as `apply_changes` does (its `_checkpointed` says why).
   */
  private def checkpointed(input: DataFrame): DataFrame =
    if (log.nonEmpty || mayHold(target)) input.localCheckpoint() else input

  /**
   * The row the target holds for each key with fresh changes (type 2: its open version), as an
   * event of `Rank` 0 that sets every column, in the types of the batch's `events`, whose distinct
   * keys are `batchKeys`; none when the target holds no file (a first load then spares the join's
   * second pass over the changes; Delta's metadata tells it without a Spark job).
   */
  private def baseline(fresh: DataFrame, events: DataFrame, batchKeys: DataFrame): Option[DataFrame] =
    Option.when(mayHold(target)) {
      val all = targetPath.fold(spark.read.table(name))(read)
      val (rows, sequence) = if (scdType == 1) (all, lit(null).cast(StringType))
        else (all.where(col(EndAt).isNull), col(StartAt))
      val present = rows.columns.toSet
      // The batch's keys first (broadcast), then those of its fresh changes: a key all of whose
      // changes are stale takes no baseline.
      rows.join(batchKeys, layout.keys, "left_semi")
        .join(fresh.select(layout.keys.map(quoted): _*).distinct(), layout.keys, "left_semi")
        .select(layout.keys.map(quoted) ++ Seq(sequence.as(ChangeSeq), lit("BASELINE").as(Operation), lit(0).as(Rank),
          lit(false).as(Derived), fullStruct(layout.values.map(c => if (present(c)) quoted(c) else lit(null)))
            .cast(events.schema(Full).dataType).as(Full),
          lit(null).cast(events.schema(Partial).dataType).as(Partial)): _*)
    }

  /**
   * The batch's counts from `staged` and its input's rows (`input`, or none: as the staging pass
   * counted them), in one job; then the rows staged.
   */
  private def counts(input: Option[DataFrame]): (Long, Long, Long, Long, Long) = {
    val (change, live) = (col(Rank) === 1, col(Operation) =!= Delete)
    val lastDelete = col(Last) && !live
    val counted: Seq[Column] = if (scdType == 1) {
      Seq(col(Last) && live && !col(Existed), col(Last) && live && col(Existed), lastDelete && col(Existed))
    } else {
      Seq(change && live, col(Rank) === 0, lastDelete && col(LiveBefore))
    }
    val staged = readStaged.select(counted.map(count_if) ++ Seq(sum(when(col(Last), col(AppliedChanges))),
      count(lit(1)), sum(when(col(Last), col(InputRows)))): _*)
    val row = input.fold(staged)(rows => staged.crossJoin(rows.select(count(lit(1))))).head()
    def total(i: Int) = if (row.isNullAt(i)) 0L else row.getLong(i)
    val inputRows = total(if (input.isEmpty) 5 else 6) // as the staging pass counted them, or the input's count
    (row.getLong(0), row.getLong(1), row.getLong(2), inputRows - total(3), row.getLong(4))
  }

  /**
   * MERGE `staged` into the target and the keys, then log the batch applied. Without `merge`
   * (nothing staged: every change was stale or a duplicate, as in a rerun over the same input,
   * and its tables made) only the log is written: two MERGEs of nothing would cost seconds of
   * Delta's. A table not made yet is made by the batch's write, empty when it staged nothing.
   */
  def finish(entry: LogRow, merge: Boolean = true): Unit = {
    if (merge) mergeStaged(entry.batch)
    appendLog(entry.copy(status = Applied))
  }

  /**
   * The staged rows into the target, then into the keys: a MERGE, or an INSERT into a table that
   * holds no file (a first load), which has nothing to match and so takes every row the MERGE
   * would insert, without its join and its pass to find the files it touches. Either is
   * idempotent: after an INSERT the table has files, and merging the same rows again changes nothing.
   */
  private def mergeStaged(batch: Long): Unit = {
    addNewColumns()
    compacted()
    val on = layout.keys.map(k => s"t.${quote(k)} <=> s.${quote(k)}").mkString(" AND ")
    val names = layout.columns.map(quote).mkString(", ")
    val values = layout.columns.map(c => s"s.${quote(c)}").mkString(", ")
    if (scdType == 1) {
      val source = s"(SELECT * FROM $staged WHERE $Last)"
      val updates = (if (layout.values.nonEmpty) layout.values else layout.keys)
        .map(c => s"${quote(c)} = s.${quote(c)}").mkString(", ")
      write(target, targetPath, names, s"SELECT $names FROM $source WHERE $Operation != '$Delete'",
        s"MERGE INTO $target t USING $source s ON $on " +
          s"WHEN MATCHED AND s.$Operation = '$Delete' THEN DELETE " +
          s"WHEN MATCHED THEN UPDATE SET $updates " +
          s"WHEN NOT MATCHED AND s.$Operation != '$Delete' THEN INSERT ($names) VALUES ($values)", batch)
    } else {
      val source = s"(SELECT * FROM $staged WHERE $Operation != '$Delete')"
      val columns = s"$names, $StartAt, $EndAt"
      write(target, targetPath, columns, s"SELECT $columns FROM $source",
        s"MERGE INTO $target t USING $source s ON $on AND t.$StartAt <=> s.$StartAt " +
          s"WHEN MATCHED THEN UPDATE SET $EndAt = s.$EndAt " +
          s"WHEN NOT MATCHED THEN INSERT ($names, $StartAt, $EndAt) VALUES ($values, s.$StartAt, s.$EndAt)", batch)
    }
    val keyNames = layout.keys.map(quote).mkString(", ")
    val keyRows = s"(SELECT $keyNames, coalesce($StartAt, '') AS $KeySequence, " +
      s"$Operation = '$Delete' AS $Deleted FROM $staged WHERE $Last)"
    write(keys, Some(keysPath), s"$keyNames, $KeySequence, $Deleted", s"SELECT * FROM $keyRows",
      s"MERGE INTO $keys t USING $keyRows s ON $on " +
        s"WHEN MATCHED THEN UPDATE SET $KeySequence = s.$KeySequence, $Deleted = s.$Deleted " +
        "WHEN NOT MATCHED THEN INSERT *", batch)
  }

  /**
   * The batch's `merge` into `table` (at `path`, for one that is not made yet), or its `rows` (a
   * query of its `columns`) appended when the table holds no file, or making it when it is not
   * made; tagged with the batch: Delta skips the write, without a job, when the table holds it
   * already (a run died after it, before the batch was logged applied).
   */
  private def write(table: String, path: Option[String], columns: String, rows: String, merge: String,
      batch: Long): Unit = {
    tagged(batch) {
      if (absent(table)) {
        val writer = spark.sql(rows).write.format("delta").mode("append")
        val compacts = table == keys && logProperties.contains(AutoCompact._1)
        (if (compacts) writer.option(AutoCompact._1, AutoCompact._2) else writer).save(path.get)
        absent -= table
      } else if (mayHold(table)) withSetting(spark, MergeMaterializeSource, "none")(spark.sql(merge).collect())
      else spark.sql(s"INSERT INTO $table ($columns) $rows").collect()
    }
    mayHoldFiles.remove(table)
  }

  /** Runs `body`'s writes tagged with `batch` (Delta's idempotent writes). */
  private def tagged[T](batch: Long)(body: => T): T =
    withSetting(spark, TxnAppId, appId)(withSetting(spark, TxnVersion, batch.toString)(body))

  /**
   * The log table's properties, which Delta reads without the snapshot of the table's files that
   * DESCRIBE DETAIL costs (a second).
   */
  private lazy val logProperties: mutable.Map[String, String] = mutable.Map(
    spark.sql(s"SHOW TBLPROPERTIES $batches").collect().toSeq.map(r => r.getString(0) -> r.getString(1)): _*)

  /**
   * The application the batches' writes are tagged with: an id made with the log table, so that
   * state made anew beside a target (its directory deleted) never meets the batch numbers of the
   * state before it. A property of the log table; state made before the property has the log
   * table's Delta id.
   */
  private lazy val appId: String =
    logProperties.getOrElse(AppIdProperty, AppIdPrefix + described(batches).getAs[String]("id"))

  /**
   * Gives the log and the keys [[AutoCompact]] from the first batch that writes after a first one
   * (state made before the property included); keys made later take it from the log.
   */
  private def compacted(): Unit = if (log.nonEmpty && !logProperties.contains(AutoCompact._1)) {
    (batches +: (if (absent(keys)) Nil else Seq(keys))).foreach { table =>
      spark.sql(s"ALTER TABLE $table SET TBLPROPERTIES ($AutoCompactSql)")
    }
    logProperties(AutoCompact._1) = AutoCompact._2
  }

  /** Columns the source added since the target was created (a dropped one stays). */
  private def addNewColumns(): Unit = columnsOf(target).map(_.toSet).foreach { present =>
    // (a target not made yet is made by the batch's write, with the staged columns)
    val added = readStaged.schema.fields.filter(f => layout.columns.contains(f.name) && !present(f.name))
    if (added.nonEmpty) {
      spark.sql(s"ALTER TABLE $target ADD COLUMNS (" +
        added.map(f => s"${quote(f.name)} ${f.dataType.sql}").mkString(", ") + ")")
    }
  }

  def readKeys: DataFrame = if (absent(keys)) noKeys else read(keysPath)

  private def readStaged: DataFrame = spark.read.parquet(stagedPath)

  private def readLog(): Seq[LogRow] = read(batchesPath).collect().toSeq.map { r =>
    LogRow(r.getLong(0), r.getString(1), Option(r.getString(2)), if (r.isNullAt(3)) None else Some(r.getLong(3)),
      r.getLong(4), r.getLong(5), r.getLong(6), r.getLong(7))
  }

  private def appendLog(entry: LogRow): Unit =
    spark.createDataFrame(Seq(entry.toRow).asJava, LogSchema).write.format("delta").mode("append").save(batchesPath)

  private def read(path: String): DataFrame = spark.read.format("delta").load(path)

  /** The table's columns; none when it is not made yet (then known as such). */
  private def columnsOf(table: String): Option[Seq[String]] =
    if (absent(table)) None
    else try Some(spark.sql(s"SELECT * FROM $table LIMIT 0").columns.toSeq) catch {
      case e: AnalysisException if Absent(e.getCondition) =>
        absent += table
        None
    }

  private def mayHold(table: String): Boolean = !absent(table) && mayHoldFiles.getOrElse(table, {
    described(table)
    mayHoldFiles(table)
  })

  private def described(table: String): Row = {
    val detail = spark.sql(s"DESCRIBE DETAIL $table").head()
    mayHoldFiles(table) = detail.getAs[Long]("numFiles") > 0
    detail
  }
}
