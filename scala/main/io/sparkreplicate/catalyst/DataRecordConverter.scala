package io.sparkreplicate.catalyst

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.catalyst.{OutputColumns => C}
import io.sparkreplicate.catalyst.ValueWriters.Step
import io.sparkreplicate.codec.{AvroSchemas, AvroSkipper, ChangeMask, ColumnInfo, SliceDecoder, TableVersion}

/** Decodes the payload of one data message into the reader's row. */
trait MessageConverter {
  def convert(in: SliceDecoder): Unit
  /** Whether the last message converted had a mask bit past its table's last column (ignored). */
  def maskBitsIgnored: Boolean
}

/**
 * Decodes the data messages of one table version, written with one Avro schema, into an
 * [[OutputRow]]. All decisions (which field goes where, which is skipped, how each type converts)
 * are taken here once, as an array of steps in the writer's field order; per message only the
 * steps run. Fields are found by name, so newer Replicate headers and reordered fields work, and
 * fields the query did not select are skipped without being materialised.
 */
final class DataRecordConverter(writer: Schema, version: TableVersion, out: OutputRow, typing: ColumnTyping)
  extends MessageConverter {
  private val row = out.row
  private val layout = out.layout

  // Per-message state, written by the steps.
  private val data = new NullFlag
  private val before = new NullFlag
  /** Whether `beforeData` went to the scratch row of all columns rather than the struct. */
  private var beforeInColumns = false
  private val changeMask = new MaskSlice
  private val columnMask = new MaskSlice
  private var bitsIgnored = false

  private val schemaIdValue = UTF8String.fromString(version.schemaId)
  // One cache per mask: a miss rebuilds its slot in place, which must not clobber the other mask's names.
  private val columnNames = version.columns.map(c => UTF8String.fromString(c.name)).toArray
  private val changedNames = new MaskNames(columnNames)
  private val presentNames = new MaskNames(columnNames)
  private val columnCount = version.columns.size
  private val columnInfoByName = version.columns.map(c => c.name -> c).toMap

  /** A field the metadata does not list (an embedded schema may add one) is typed by Avro alone. */
  private def columnInfo(name: String): ColumnInfo =
    columnInfoByName.getOrElse(name, ColumnInfo(name, 0, "", 0, 0, 0, 0, nullable = true))

  // Output slots of the columns set after the steps, resolved once (-1: not selected).
  private val schemaIdSlot = out.slot(C.SchemaId)
  private val tableVersionSlot = out.slot(C.TableVersion)
  private val changeMaskSlot = out.slot(C.ChangeMask)
  private val columnMaskSlot = out.slot(C.ColumnMask)
  private val changedColumnsSlot = out.slot(C.ChangedColumns)
  private val presentColumnsSlot = out.slot(C.PresentColumns)
  private val wantBefore = out.beforeSlot >= 0

  private val headers = new HeaderWriters(row, out.slot,
    changeMask, columnMask)
  private val (readRecord, alwaysNull) = build()

  def convert(in: SliceDecoder): Unit = {
    data.isNull = false
    before.isNull = true
    beforeInColumns = false
    changeMask.clear()
    columnMask.clear()
    bitsIgnored = false
    var i = 0
    while (i < alwaysNull.length) { row.setNullAt(alwaysNull(i)); i += 1 }
    readRecord(in)
    finish()
  }

  private def finish(): Unit = {
    if (data.isNull) {
      if (before.isNull) throw new MalformedMessageException(ErrorId.BadPayload,
        "both `data` and `beforeData` are null: the message carries no row image")
      out.beforeColumnsAsImage()
    }
    if (wantBefore) {
      if (before.isNull) row.setNullAt(out.beforeSlot)
      else {
        if (beforeInColumns) out.beforeColumnsAsStruct()
        row.update(out.beforeSlot, out.before)
      }
    }
    if (schemaIdSlot >= 0) row.update(schemaIdSlot, schemaIdValue)
    if (tableVersionSlot >= 0) row.setLong(tableVersionSlot, version.tableVersion)
    writeMask(changeMask, changeMaskSlot, changedColumnsSlot, changedNames)
    writeMask(columnMask, columnMaskSlot, presentColumnsSlot, presentNames)
  }

  def maskBitsIgnored: Boolean = bitsIgnored

  /**
   * Bits past the last column are looked for whatever the query selects, so that the count of
   * such messages does not depend on the projection.
   */
  private def writeMask(mask: MaskSlice, rawSlot: Int, namesSlot: Int, maskNames: MaskNames): Unit = {
    val absent = mask.isNull
    if (!absent && ChangeMask.setsBitsBeyond(mask.bytes, mask.offset, mask.length, columnCount)) bitsIgnored = true
    if (rawSlot >= 0) { if (absent) row.setNullAt(rawSlot) else row.update(rawSlot, mask.copy()) }
    if (namesSlot >= 0) {
      if (absent) row.setNullAt(namesSlot)
      else row.update(namesSlot, maskNames(mask.bytes, mask.offset, mask.length))
    }
  }

  private def build(): (Step, Array[Int]) = {
    if (writer.getType != RECORD) throw new ReplicateException(ErrorId.UnsupportedType,
      s"data schema of ${version.table} is not a record")
    var written = Set.empty[Int]
    val steps = writer.getFields.asScala.map { field =>
      field.name match {
        case "data" =>
          val (step, slots) = recordStep(field.schema, "data", columnTargets(row, out.columnSlots), data)
          written ++= slots
          step
        case "beforeData" => beforeStep(field.schema)
        case "headers" =>
          val (step, slots) = headers.build(AvroSchemas.unwrapNullable(field.schema))
          written ++= slots
          // A `[null, Headers]` that is null leaves every header null (masks are reset per message).
          val nulled = slots.toArray
          ValueWriters.nullableUnion(field.schema, "headers")(() => nulled.foreach(row.setNullAt), step)
        case _ => AvroSkipper(field.schema)
      }
    }.toArray
    if (!writer.getFields.asScala.exists(_.name == "data")) throw new ReplicateException(
      ErrorId.BadMetadata, s"data schema of ${version.table} (schema id ${version.schemaId}) has no `data` field")
    val fixed = Set(schemaIdSlot, tableVersionSlot, changeMaskSlot, columnMaskSlot, changedColumnsSlot, presentColumnsSlot)
    val headerAndColumnSlots = (out.columnSlots ++ OutputColumns.headers.map(h => out.slot(h.name))).filter(_ >= 0).toSet
    val alwaysNull = (headerAndColumnSlots -- written -- fixed).toArray.sorted
    (StepChain(steps), alwaysNull)
  }

  /** Where each layout column of a record goes: (row, slot). */
  private def columnTargets(target: InternalRow, slots: Array[Int]): String => Option[(InternalRow, Int, DataType)] =
    name => {
      val i = layout.indexOf(name)
      if (i >= 0 && slots(i) >= 0) Some((target, slots(i), layout.columns(i).dataType)) else None
    }

  /**
   * A `Data` record (or `[null, Data]`) whose columns go to `targetOf`; returns the step and the
   * slots it writes whenever the record is not null. `nullness` learns whether it was null.
   */
  private def recordStep(schema: Schema, what: String,
      targetOf: String => Option[(InternalRow, Int, DataType)], nullness: NullFlag): (Step, Set[Int]) = {
    val record = AvroSchemas.unwrapNullable(schema)
    if (record.getType != RECORD) throw new ReplicateException(ErrorId.UnsupportedType,
      s"`$what` of ${version.table} is not a record")
    val fieldSteps = record.getFields.asScala.map { f =>
      targetOf(f.name) match {
        case Some((target, o, t)) => ValueWriters.tableColumn(f.schema, columnInfo(f.name), typing, t, target, o)
        case None => AvroSkipper(f.schema)
      }
    }.toArray
    val slots = record.getFields.asScala.flatMap(f => targetOf(f.name)).map(_._2).toSet
    (nullableRecord(schema, what, StepChain(fieldSteps), nullness), slots)
  }

  /** Runs `read` for a record or the record branch of `[null, record]`, reporting nullness. */
  private def nullableRecord(schema: Schema, what: String, read: Step, nullness: NullFlag): Step =
    ValueWriters.nullableUnion(schema, what)(() => nullness.isNull = true, in => { nullness.isNull = false; read(in) })

  /**
   * `beforeData`: decoded into the selected before-image struct, or into the scratch row of all
   * columns when it may have to stand in for a null `data`; otherwise skipped (but its nullness
   * noted, which the row-image rule needs).
   */
  private def beforeStep(schema: Schema): Step = {
    val beforeFields = out.beforeType.fieldNames
    val intoStruct = nullingOthers(out.before, beforeFields.length, recordStep(schema, "beforeData",
      name => Option(beforeFields.indexOf(name)).filter(_ >= 0).map(i => (out.before, i, out.beforeType(i).dataType)), before))
    val intoColumns = nullingOthers(out.beforeColumns, layout.columns.size, recordStep(schema, "beforeData",
      name => Option(layout.indexOf(name)).filter(_ >= 0).map(i => (out.beforeColumns, i, layout.columns(i).dataType)), before))
    val skip = nullableRecord(schema, "beforeData", AvroSkipper(AvroSchemas.unwrapNullable(schema)), before)
    // Written before `data`, it cannot yet know whether it must stand in for a null `data`.
    val fields = writer.getFields.asScala.map(_.name)
    val beforeFirst = fields.indexOf("beforeData") < fields.indexOf("data")
    in => {
      if (beforeFirst || data.isNull) { intoColumns(in); beforeInColumns = true }
      else if (wantBefore) intoStruct(in)
      else skip(in)
    }
  }

  /**
   * The before-image rows are reused across messages of every version: slots this version's
   * `Data` lacks (columns added later, or dropped earlier) must be nulled, not left over.
   */
  private def nullingOthers(target: InternalRow, size: Int, built: (Step, Set[Int])): Step = {
    val (step, written) = built
    val others = (0 until size).filterNot(written).toArray
    if (others.isEmpty) step
    else in => {
      step(in)
      var i = 0
      while (i < others.length) { target.setNullAt(others(i)); i += 1 }
    }
  }
}

/** Whether a nullable record of the message was null: a flag object, so no Boolean is boxed per message. */
private final class NullFlag { var isNull = false }
