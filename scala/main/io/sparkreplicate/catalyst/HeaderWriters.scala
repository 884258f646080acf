package io.sparkreplicate.catalyst

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{BooleanType, LongType, StringType, TimestampType}

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.catalyst.{OutputColumns => C}
import io.sparkreplicate.catalyst.ValueWriters.Step
import io.sparkreplicate.codec.{AvroSchemas, AvroSkipper, ChangeTimestampParser, SliceDecoder}

/**
 * The steps for a data message's `headers` record, chosen by field name so that newer Replicate
 * headers, reordered fields and absent fields all work. Unselected headers are skipped; the mask
 * bytes always go to the converter, which validates them and expands them when selected.
 *
 * @param slot where an output column lives in `row`, -1 when not selected
 */
private[catalyst] final class HeaderWriters(
    row: InternalRow,
    slot: String => Int,
    changeMask: MaskSlice,
    columnMask: MaskSlice) {

  /** The step for the whole record, and the output slots it always writes. */
  def build(headers: Schema): (Step, Set[Int]) = {
    if (headers.getType != RECORD) throw new ReplicateException(ErrorId.UnsupportedType,
      s"`headers` is ${headers.getType}, not a record")
    val built = headers.getFields.asScala.map { f =>
      val s = f.schema
      f.name match {
        case "operation" => header(C.Operation, s)(ValueWriters.column(s, StringType, row, _, f.name))
        case "changeSequence" => header(C.ChangeSeq, s)(emptyAsNull(s, _, f.name))
        case "streamPosition" => header(C.StreamPosition, s)(emptyAsNull(s, _, f.name))
        case "transactionId" => header(C.TransactionId, s)(emptyAsNull(s, _, f.name))
        case "externalSchemaId" => header(C.ExternalSchemaId, s)(emptyAsNull(s, _, f.name))
        case "timestamp" => header(C.Timestamp, s)(timestamp(s, _))
        case "transactionEventCounter" =>
          header(C.TransactionEventCounter, s)(ValueWriters.column(s, LongType, row, _, f.name))
        case "transactionLastEvent" =>
          header(C.TransactionLastEvent, s)(ValueWriters.column(s, BooleanType, row, _, f.name))
        case "changeMask" => (mask(s, f.name, changeMask), None)
        case "columnMask" => (mask(s, f.name, columnMask), None)
        case _ => (AvroSkipper(s), None)
      }
    }
    (StepChain(built.map(_._1).toArray), built.flatMap(_._2).toSet)
  }

  /** The step for a header field: `make` for the output slot, or a skip when not selected. */
  private def header(column: String, schema: Schema)(make: Int => Step): (Step, Option[Int]) = {
    val o = slot(column)
    if (o < 0) (AvroSkipper(schema), None) else (make(o), Some(o))
  }

  /** CDC-only header strings are empty on full-load (REFRESH) rows: surfaced as null. */
  private def emptyAsNull(schema: Schema, o: Int, name: String): Step =
    new ColumnStep.EmptyAsNull(row, o, stringIndex(schema, name), name)

  /** A string `yyyy-MM-dd HH:mm:ss.ffffff` (UTC; empty on REFRESH rows), or a timestamp logical type. */
  private def timestamp(schema: Schema, o: Int): Step =
    AvroSchemas.unwrapNullable(schema).getType match {
      case LONG => ValueWriters.column(schema, TimestampType, row, o, "timestamp")
      case _ =>
        val parser = new ChangeTimestampParser
        new ColumnStep.ParsedText(row, o, stringIndex(schema, "timestamp"), "timestamp", (b, at, n) =>
          if (n == 0) row.setNullAt(o) else row.setLong(o, parser.parseMicros(b, at, n)))
    }

  /** The null branch of a header that must be a string, `[null, string]` or `string`. */
  private def stringIndex(schema: Schema, name: String): Int = {
    if (AvroSchemas.unwrapNullable(schema).getType != STRING) throw new ReplicateException(ErrorId.UnsupportedType,
      s"header `$name` has the Avro type ${AvroSchemas.unwrapNullable(schema)}; expected a string")
    ValueWriters.nullIndex(schema, name)
  }

  private def mask(schema: Schema, name: String, into: MaskSlice): Step = {
    if (AvroSchemas.unwrapNullable(schema).getType != BYTES) throw new ReplicateException(ErrorId.UnsupportedType,
      s"header `$name` has the Avro type ${AvroSchemas.unwrapNullable(schema)}; expected bytes")
    ValueWriters.nullableUnion(schema, name)(() => into.clear(),
      in => { in.readSlice(); into.set(in, in.sliceStart, in.sliceLength) })
  }
}

/**
 * Where a message's mask lies in its bytes (`isNull` when the mask is null or absent): masks are
 * read and expanded in place, and copied only when the raw mask column is selected. It keeps
 * the decoder, not its array, and a null mask is a flag, not a null array (see [[StringSlot]] on
 * the write barrier).
 */
private[catalyst] final class MaskSlice {
  private var source: SliceDecoder = _
  var offset = 0
  var length = 0
  var isNull = true

  /** The array the mask lies in: the decoder's, valid while it reads the same message. */
  def bytes: Array[Byte] = source.array

  def set(in: SliceDecoder, at: Int, n: Int): Unit = {
    if (source ne in) source = in
    offset = at
    length = n
    isNull = false
  }

  def clear(): Unit = isNull = true

  /**
   * The mask's bytes in a new array: Spark copies a binary value it keeps by reference (in a
   * struct that `InternalRow.copyValue` copies), so one rewritten message after message would change.
   */
  def copy(): Array[Byte] = java.util.Arrays.copyOfRange(bytes, offset, offset + length)
}
