package io.sparkreplicate.cdc

import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.expressions.{Window, WindowSpec}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.OutputColumns

/**
 * Apply Replicate changes: the table as it stands after them, its history (SCD type 2), and
 * either kept in a Delta Lake table batch after batch. All take the flat-layout DataFrame of one
 * table as the reader returns it; the rules are in the README's "Applying changes", and
 * `spark_replicate.cdc` / `spark_replicate.apply` implement the same ones in Python.
 *
 * How: every change becomes an event on its key (an UPDATE that changes the key also becomes a
 * DELETE of the old key), ordered per key by change sequence with full-load rows first. An event
 * that sets every column (its mask names them all, or it starts a row) carries them in one struct,
 * `Full`; an event whose mask leaves columns out carries its values and its mask in another,
 * `Partial` (a row moved to a new key with such a mask carries both: its before-image as its
 * `Full`). Over a window per key, one function, [[ValuesAfter]], folds the events in
 * order: a `Full` sets every column, then a `Partial` the columns its mask names. So the events cross
 * the shuffle and the sort as one struct each, and the window keeps one value per key.
 * [[DeltaTarget]] replays a batch the same way after the rows a Delta table holds.
 */
object Changes {
  val StartAt = "__START_AT"
  val EndAt = "__END_AT"
  import OutputColumns.{BeforeImage, ChangeSeq, Operation, PresentColumns, PrimaryKeyPosition}
  private[cdc] val Last = "__replicate_last"
  private[cdc] val Rank = "__replicate_rank"
  private[cdc] val Derived = "__replicate_derived"
  private val Repeated = "__replicate_repeated"
  /** What orders each key's events, every one ascending with nulls first (Spark's default). */
  private def orderColumns: Seq[Column] = Seq(Rank, ChangeSeq, Operation, Derived).map(col)
  /**
   * An event's values when it sets every column: a struct of the value columns, v0, v1...; and when
   * it does not: struct(m0, m1...: its mask, bit i % 64 of word i / 64 for value column i, v: the
   * same struct). Its order travels in its own columns ([[orderColumns]]), which the window sorts by.
   */
  private[cdc] val Full = "__replicate_full"
  private[cdc] val Partial = "__replicate_partial"
  private val ValuesAfterEvents = "__replicate_values"
  private[cdc] val Delete = "DELETE"

  /** The table's columns (in the reader's order), its key columns (in key order), and the others. */
  private[cdc] case class Layout(columns: Seq[String], keys: Seq[String]) {
    val values: Seq[String] = columns.filterNot(keys.contains)
  }

  /** The table after `changes`: one row per live key, the table's columns only. */
  def latestState(changes: DataFrame, keys: Seq[String] = Nil): DataFrame = {
    val layout = tableLayout(changes, keys)
    replayLast(changeEvents(changes, layout), layout).where(col(Operation) =!= Delete)
      .select(layout.columns.map(quoted): _*)
  }

  /** One row per version of each key: the table's columns, `__START_AT` and `__END_AT`. */
  def history(changes: DataFrame, keys: Seq[String] = Nil): DataFrame = {
    val layout = tableLayout(changes, keys)
    replay(changeEvents(changes, layout), layout).where(col(Operation) =!= Delete)
      .select(layout.columns.map(quoted) :+ col(ChangeSeq).as(StartAt) :+ col(EndAt): _*)
  }

  /**
   * MERGE a batch of changes into the Delta table `target` (a path if it holds a `/`, else a
   * table name), created when absent with the table's columns; `scdType` 1 keeps the current
   * state, 2 the history. Returns what the batch did.
   */
  def applyChanges(changes: DataFrame, target: String, keys: Seq[String] = Nil, scdType: Int = 1): ApplyResult = {
    require(!changes.isStreaming, "a streaming DataFrame is applied with applyChangesStream, which needs a checkpoint")
    DeltaTarget.applyBatch(changes, target, tableLayout(changes, keys), scdType, stream = None)
  }

  /** [[applyChanges]] for a streaming DataFrame, per micro-batch: returns the started query. */
  def applyChangesStream(changes: DataFrame, target: String, checkpointLocation: String, keys: Seq[String] = Nil,
      scdType: Int = 1): StreamingQuery =
    applyStream(changes, target, checkpointLocation, keys, scdType, Trigger.ProcessingTime(0))

  private[cdc] def applyStream(changes: DataFrame, target: String, checkpointLocation: String, keys: Seq[String],
      scdType: Int, trigger: Trigger): StreamingQuery = {
    require(changes.isStreaming, "a batch DataFrame is applied once, with applyChanges")
    val layout = tableLayout(changes, keys)
    DeltaTarget.checkScdType(scdType)
    changes.writeStream.option("checkpointLocation", checkpointLocation).trigger(trigger)
      .foreachBatch { (batch: DataFrame, id: Long) =>
        DeltaTarget.applyBatch(batch, target, layout, scdType, Some((checkpointLocation, id)))
        ()
      }.start()
  }

  /**
   * Every table of landed topics (those the metadata of `schemaTopic`, else of `paths`, announces,
   * read with `options`) applied to its own Delta table `target/SCHEMA.TABLE`: what each batch did,
   * by `SCHEMA.TABLE`. A rerun finishes what was interrupted and applies only the changes not
   * applied yet. With `transactional`, only whole transactions are applied; the rows held for a
   * later run are counted in [[ApplyResult.held]]. Over Kafka (`kafka.bootstrap.servers` and
   * `subscribe`, `subscribePattern` or `assign` among the options) `paths` is empty and
   * `schemaTopic` the Kafka topic of the metadata messages.
   */
  def applyTopic(spark: SparkSession, paths: Seq[String], target: String, schemaTopic: Option[String] = None,
      scdType: Int = 1, transactional: Boolean = false, options: Map[String, String] = Map.empty): Map[String, ApplyResult] =
    TopicApply.run(spark, paths, target, schemaTopic, scdType, transactional, options)

  /**
   * [[applyTopic]] as files land (or records arrive: over Kafka, as [[applyTopic]] reads it), in
   * the background until [[ContinuousApply.stop]]: without
   * `transactional`, each table is a stream of the landed files applied per micro-batch, a trigger
   * every `intervalSeconds`, and tables whose metadata lands later get their own; with it, a cycle
   * every `intervalSeconds` appends each table's new files to its held rows, then applies the whole
   * transactions held. The same checkpoints and tables as `spark_replicate.apply_topic(...,
   * continuous=True)`: either language may continue what the other ran.
   */
  def applyTopicContinuously(spark: SparkSession, paths: Seq[String], target: String,
      schemaTopic: Option[String] = None, scdType: Int = 1, transactional: Boolean = false,
      options: Map[String, String] = Map.empty, intervalSeconds: Double = 60): ContinuousApply = {
    DeltaTarget.checkScdType(scdType)
    val run = new ContinuousTopicApply(spark, paths, target.stripSuffix("/"), schemaTopic, scdType, options,
      (intervalSeconds * 1000).toLong)
    new ContinuousApply(if (transactional) run.cycles else run.streams)
  }

  private[cdc] def quote(name: String): String = "`" + name.replace("`", "``") + "`"

  private[cdc] def quoted(name: String): Column = col(quote(name))

  /** `keys` if given, else the columns whose schema metadata has a primary-key position, in key order. */
  private[cdc] def tableLayout(changes: DataFrame, keys: Seq[String]): Layout = {
    val missing = Seq(Operation, ChangeSeq, PresentColumns, BeforeImage).filterNot(changes.columns.contains)
    require(missing.isEmpty, s"changes lacks ${missing.mkString(", ")}: pass the flat layout of one table as " +
      "the reader returns it (with expandMasks=true, the default)")
    val columns = changes.schema(BeforeImage).dataType.asInstanceOf[StructType].fieldNames.toSeq
    val chosen = if (keys.nonEmpty) keys else changes.schema.fields.toSeq
      .filter(f => columns.contains(f.name) && f.metadata.contains(PrimaryKeyPosition))
      .sortBy(_.metadata.getLong(PrimaryKeyPosition)).map(_.name)
    val unknown = chosen.filterNot(columns.contains)
    val problem = if (unknown.nonEmpty) s"unknown key columns ${unknown.mkString(", ")}"
      else "the metadata names no primary key"
    require(chosen.nonEmpty && unknown.isEmpty,
      s"$problem: pass keys with the table's key columns, among: ${columns.mkString(", ")}")
    Layout(columns, chosen)
  }

  /**
   * The `Full` of an event that sets the value columns to `values`: fields v0, v1... (none for a
   * table whose columns are all keys). Its order travels in its own columns, which the window sorts by.
   */
  private[cdc] def fullStruct(values: Seq[Column]): Column =
    struct(values.zipWithIndex.map { case (v, i) => v.as(s"v$i") }: _*)

  /**
   * Every change as an event on its key (a change delivered twice, twice: [[replay]] drops the
   * repeat): the keys, change sequence, operation, `Rank` 1 (a change, not a baseline), `Derived`
   * (the DELETE of a moved row's old key), and `Full` when the event sets every column, else `Partial`
   * (both for a moved row whose mask leaves columns out).
   */
  private[cdc] def changeEvents(changes: DataFrame, layout: Layout): DataFrame = {
    val (keys, values) = (layout.keys, layout.values)
    // The flags of a row (whether it moves to a new key, sets every column, has a mask naming every
    // column) are written into each expression that needs them, not made columns of a projection of
    // their own, which copied every column of the input once more wherever the events run outside
    // whole-stage code generation, where each projection makes its own rows (a table of more columns
    // than it takes, `spark.sql.codegen.maxFields`). Subexpression
    // elimination leaves out what only a branch evaluates, so a flag is tested once per struct, not
    // within each of its fields: with `moved` in every field's condition, a row tested it (reading
    // the before-image) once per column.
    val before = col(BeforeImage)
    val moved = col(Operation) === "UPDATE" && before.isNotNull &&
      !keys.map(k => before.getField(k) <=> quoted(k)).reduce(_ && _)
    val wholeRow = col(Operation).isin("INSERT", "REFRESH") || moved
    // A mask's names are the table's (those of the row's version), each once: all of them, if as many.
    val allPresent = col(PresentColumns).isNull || size(col(PresentColumns)) === layout.columns.size
    // Word w of the mask: the bits of value columns 64w to 64w + 63 that it names, by one function
    // call: an array_contains per column made the projection's code too long (see NamesMask).
    ReplayFunctions.register(changes.sparkSession)
    val masks = values.grouped(64).zipWithIndex.map { case (word, w) =>
      call_function(NamesMask.Name, col(PresentColumns) +: word.map(lit): _*).as(s"m$w")
    }.toSeq
    val asGiven = fullStruct(values.map(quoted))
    val partial = struct(masks :+ asGiven.as("v"): _*)
    // A row moved to a new key whose mask leaves columns out starts from its before-image: its event
    // carries both, the before-image's values as its `Full` and its own as its `Partial`.
    val movedPartly = moved && !allPresent
    val full = when(movedPartly, fullStruct(values.map(before.getField))).otherwise(asGiven)
    val setsAll = wholeRow || allPresent
    // One scan of the changes: a moved row is read once and gives both of its events, where a
    // union of two scans would plan a Kafka read's offsets twice, and a record produced in between
    // would give its moved row's DELETE of the old key without its row at the new one.
    val copies = changes.select(col("*"), explode(when(moved, array(lit(false), lit(true)))
      .otherwise(array(lit(false)))).as(Derived))
    val derived = col(Derived)
    copies.select(keys.map(k => when(derived, before.getField(k)).otherwise(quoted(k)).as(k)) ++ Seq(col(ChangeSeq),
      when(derived, lit(Delete)).otherwise(col(Operation)).as(Operation), lit(1).as(Rank), derived,
      when(!derived && setsAll, full).as(Full), when(!derived && (!setsAll || movedPartly), partial).as(Partial)): _*)
  }

  /** The events of each key in the order they happened: a window over it after [[replay]] reuses its sort. */
  private[cdc] def eventOrder(layout: Layout): WindowSpec = Window.partitionBy(layout.keys.map(quoted): _*)
    .orderBy(orderColumns: _*)

  /**
   * Every event of every key once, with all the table's columns as they stand after it, its
   * change sequence, `__END_AT` (the next event's), whether it is the key's `Last` and `more`
   * (windows of [[eventOrder]], which see the repeats), in [[eventOrder]]. Events of `Rank` 0 (a
   * baseline: the row a table already holds) come before the changes. A change delivered more than
   * once (the same key, change sequence and operation: files landed twice, a replayed topic) sorts
   * next to its repeats and only the last is kept; dropping repeats here, in the window's own sort,
   * spares a shuffle and a sort of the whole input.
   */
  private[cdc] def replay(events: DataFrame, layout: Layout, more: Column*): DataFrame = {
    val order = eventOrder(layout)
    val repeated = orderColumns.map(c => lead(c, 1).over(order) <=> c).reduce(_ && _)
    replayed(events, layout, soFar(layout), lead(col(ChangeSeq), 1).over(order).as(EndAt) +: repeated.as(Repeated) +:
      more: _*).where(!col(Repeated)).drop(Repeated)
  }

  /** [[eventOrder]] up to the current event, and over all of a key's events. */
  private[cdc] def soFar(layout: Layout): WindowSpec =
    eventOrder(layout).rowsBetween(Window.unboundedPreceding, Window.currentRow)

  private[cdc] def everyEvent(layout: Layout): WindowSpec =
    eventOrder(layout).rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)

  /**
   * Each key's last event as [[replay]] gives it (its repeats need not be dropped: they set the
   * same values), with `more` (windows of [[eventOrder]]). What a current state needs, in one
   * window operator: each one Spark plans apart copies every event once more, and staging
   * 500,000 events of 30 columns through three took 1.7x as long. At a key's last event the values
   * up to it are those over all its events, which a window computes once per key rather than once
   * per event: 7% less time for 500,000 events.
   */
  private[cdc] def replayLast(events: DataFrame, layout: Layout, more: Column*): DataFrame =
    replayed(events, layout, everyEvent(layout), more: _*).where(col(Last))

  /**
   * Every event with the keys, operation, `Rank`, `Derived`, the table's columns as they stand
   * after the events of `frame` (a window of [[eventOrder]]), change sequence, `Last` and `more`:
   * windows of one order, so one operator.
   */
  private def replayed(events: DataFrame, layout: Layout, frame: WindowSpec, more: Column*): DataFrame = {
    // Shuffled by key; the window's own sort orders each key's events. (A sort of them made here
    // was sorted again: where every event has the same `Rank`, as changes without a baseline, Spark
    // drops the constant from this sort's order but not from the window's, which then differ.)
    val keys = layout.keys.map(quoted)
    val ordered = events.repartition(keys: _*)
    // A table whose columns are all keys has no values to fold.
    val folded = if (layout.values.isEmpty) Nil else {
      ReplayFunctions.register(events.sparkSession)
      Seq(call_function(ValuesAfter.Name, col(Full), col(Partial)).over(frame).as(ValuesAfterEvents))
    }
    val windowed = ordered.select(keys ++ Seq(col(Operation), col(Rank), col(Derived), col(ChangeSeq)) ++ folded ++
      Seq(lead(lit(false), 1, true).over(eventOrder(layout)).as(Last)) ++ more: _*)
    val values = layout.values.zipWithIndex.map { case (c, i) => col(ValuesAfterEvents).getField(s"v$i").as(c) }
    windowed.select(col("*") +: values: _*).drop(ValuesAfterEvents)
  }
}
