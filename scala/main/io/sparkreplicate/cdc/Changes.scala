package io.sparkreplicate.cdc

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.catalyst.OutputColumns

/**
 * Apply Replicate changes: the table as it stands after them, and its history (SCD type 2).
 * Both take the flat-layout DataFrame of one table as the reader returns it; the rules are in the
 * README's "Applying changes", and `spark_replicate.cdc` implements the same ones in Python.
 *
 * How: every change becomes an event on its key (an UPDATE that changes the key also becomes a
 * DELETE of the old key). Over a window per key, ordered by change sequence with full-load rows
 * first, each column's value after an event is the last value an event set: a column the event
 * does not set (not in its column mask) is null in that event's `struct(value)`, which
 * `last(..., ignoreNulls)` skips, while a real NULL is a non-null struct holding null.
 */
object Changes {
  val StartAt = "__START_AT"
  val EndAt = "__END_AT"
  import OutputColumns.{BeforeImage, ChangeSeq, Operation, PresentColumns, PrimaryKeyPosition}
  private val Last = "__replicate_last"
  private val Delete = "DELETE"

  /** The table after `changes`: one row per live key, the table's columns only. */
  def latestState(changes: DataFrame, keys: Seq[String] = Nil): DataFrame = {
    val (columns, events) = applied(changes, keys)
    events.where(col(Last) && col(Operation) =!= Delete).select(columns.map(column): _*)
  }

  /** One row per version of each key: the table's columns, `__START_AT` and `__END_AT`. */
  def history(changes: DataFrame, keys: Seq[String] = Nil): DataFrame = {
    val (columns, events) = applied(changes, keys)
    events.where(col(Operation) =!= Delete).select(columns.map(column) :+ col(StartAt) :+ col(EndAt): _*)
  }

  private def column(name: String): Column = col("`" + name.replace("`", "``") + "`")

  private def tableColumns(changes: DataFrame): Seq[String] = {
    val missing = Seq(Operation, ChangeSeq, PresentColumns, BeforeImage).filterNot(changes.columns.contains)
    require(missing.isEmpty, s"changes lacks ${missing.mkString(", ")}: pass the flat layout of one table as " +
      "the reader returns it (with expandMasks=true, the default)")
    changes.schema(BeforeImage).dataType.asInstanceOf[StructType].fieldNames.toSeq
  }

  /** `keys` if given, else the columns whose schema metadata has a primary-key position, in key order. */
  private def keysOf(changes: DataFrame, columns: Seq[String], keys: Seq[String]): Seq[String] = {
    val chosen = if (keys.nonEmpty) keys else changes.schema.fields.toSeq
      .filter(f => columns.contains(f.name) && f.metadata.contains(PrimaryKeyPosition))
      .sortBy(_.metadata.getLong(PrimaryKeyPosition)).map(_.name)
    val unknown = chosen.filterNot(columns.contains)
    val problem = if (unknown.nonEmpty) s"unknown key columns ${unknown.mkString(", ")}"
      else "the metadata names no primary key"
    require(chosen.nonEmpty && unknown.isEmpty,
      s"$problem: pass keys with the table's key columns, among: ${columns.mkString(", ")}")
    chosen
  }

  /**
   * Every event of every key with all the table's columns as they stand after it, `__START_AT`
   * (its change sequence), `__END_AT` (the next event's) and whether it is the key's last.
   */
  private def applied(input: DataFrame, keyOverride: Seq[String]): (Seq[String], DataFrame) = {
    val columns = tableColumns(input)
    val keys = keysOf(input, columns, keyOverride)
    val values = columns.filterNot(keys.contains)
    val changes = input.dropDuplicates(ChangeSeq +: Operation +: keys)
    val before = col(BeforeImage)
    val moved = col(Operation) === "UPDATE" && before.isNotNull &&
      !keys.map(k => before.getField(k) <=> column(k)).reduce(_ && _)
    val wholeRow = col(Operation).isin("INSERT", "REFRESH") || moved
    val slots = values.indices.map(i => s"__replicate_$i")
    def inMask(name: String): Column = col(PresentColumns).isNull || array_contains(col(PresentColumns), name)
    // A moved row starts from its before-image for the columns its mask leaves out.
    def setValue(name: String): Column = {
      val value = when(moved && !inMask(name), before.getField(name)).otherwise(column(name))
      when(wholeRow || inMask(name), struct(value.as("v")))
    }
    val events = changes.select(keys.map(column) ++ Seq(col(ChangeSeq), col(Operation)) ++
      values.zip(slots).map { case (c, s) => setValue(c).as(s) }: _*)
    val movedAway = changes.where(moved).select(keys.map(k => before.getField(k).as(k)) ++
      Seq(col(ChangeSeq), lit(Delete).as(Operation)) ++
      slots.map(s => lit(null).cast(events.schema(s).dataType).as(s)): _*)
    val order = Window.partitionBy(keys.map(column): _*).orderBy(col(ChangeSeq).asc_nulls_first)
    val soFar = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    (columns, events.unionByName(movedAway).select(keys.map(column) ++ Seq(col(Operation)) ++
      values.zip(slots).map { case (c, s) => last(col(s), ignoreNulls = true).over(soFar).getField("v").as(c) } ++
      Seq(col(ChangeSeq).as(StartAt), lead(col(ChangeSeq), 1).over(order).as(EndAt),
        lead(lit(false), 1, true).over(order).as(Last)): _*))
  }
}
