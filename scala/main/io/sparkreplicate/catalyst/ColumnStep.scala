package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{MutableValue, SpecificInternalRow}
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException}
import io.sparkreplicate.codec.{DecodeStep, SliceDecoder, SourceText}

/**
 * The step that decodes one column value into a fixed slot of a reused row, one class per Avro
 * type and conversion: it reads the union branch of `[null, T]` itself ([[present]]), then its
 * value ([[readValue]]). [[StepChain]] compiles a record's steps into one method that reads the
 * branches and the common values (ints, longs, strings) inline and calls [[readValue]] for the
 * rest; these classes are the reference it must agree with, and what it falls back on for
 * anything unusual (a branch or value it does not read inline, or an error to report).
 *
 * @param nullIndex the branch of `[null, T]` that is null, or -1 for a plain `T`
 */
private[catalyst] abstract class ColumnStep(row: InternalRow, ordinal: Int, val nullIndex: Int, name: String)
  extends DecodeStep {

  final def apply(in: SliceDecoder): Unit = if (present(in)) readValue(in)

  /** Reads the value that follows the union branch, into the slot. */
  def readValue(in: SliceDecoder): Unit

  /** The slot's holder in the reader's row (a [[SpecificInternalRow]]), or null in any other row. */
  def target: MutableValue = row match {
    case r: SpecificInternalRow => r.values(ordinal)
    case _ => null
  }

  /** Reads the union branch, if any: true when a value follows, false once the slot is nulled. */
  private def present(in: SliceDecoder): Boolean = nullIndex < 0 || {
    val branch = in.readIndex()
    if (branch == 1 - nullIndex) true
    else if (branch == nullIndex) { row.setNullAt(ordinal); false }
    else throw new MalformedMessageException(ErrorId.BadPayload, s"`$name`: union branch $branch out of range")
  }
}

private[catalyst] object ColumnStep {
  final class IntValue(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setInt(o, in.readInt())
  }

  final class IntAsLong(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setLong(o, in.readInt().toLong)
  }

  final class LongValue(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setLong(o, in.readLong())
  }

  final class MillisAsMicros(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      val millis = in.readLong()
      val micros = try Math.multiplyExact(millis, 1000L) catch {
        case _: ArithmeticException => throw new MalformedMessageException(ErrorId.BadValue,
          s"column `$name`: timestamp $millis ms is out of range")
      }
      row.setLong(o, micros)
    }
  }

  /** A time of day, Avro `time-millis` (an int) or `time-micros` (a long), as the text `HH:mm:ss.ffffff`. */
  final class TimeOfDay(row: InternalRow, o: Int, nullIndex: Int, name: String, millis: Boolean)
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      val micros = if (millis) in.readInt() * 1000L else in.readLong()
      row.update(o, UTF8String.fromString(SourceText.formatTime(micros, name)))
    }
  }

  final class FloatValue(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setFloat(o, in.readFloat())
  }

  final class FloatAsDouble(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setDouble(o, in.readFloat().toDouble)
  }

  final class DoubleValue(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setDouble(o, in.readDouble())
  }

  final class BooleanValue(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.setBoolean(o, in.readBoolean())
  }

  /** The slice just read, validated as UTF-8 where it lies, into `slot`. */
  private def setText(slot: StringSlot, in: SliceDecoder, name: String): Unit = {
    ValueWriters.checkUtf8(in, name)
    slot.set(in, in.sliceStart, in.sliceLength)
  }

  /** A string as it is: the message's own bytes, validated where they lie, in the row's [[StringSlot]]. */
  final class Utf8Value(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    private val slot = StringSlot.of(row, o)
    def readValue(in: SliceDecoder): Unit = {
      in.readSlice()
      setText(slot, in, name)
    }
  }

  /** CDC-only header strings are empty on full-load (REFRESH) rows: surfaced as null. */
  final class EmptyAsNull(row: InternalRow, o: Int, nullIndex: Int, name: String) extends ColumnStep(row, o, nullIndex, name) {
    private val slot = StringSlot.of(row, o)
    def readValue(in: SliceDecoder): Unit = {
      in.readSlice()
      if (in.sliceLength == 0) row.setNullAt(o)
      else setText(slot, in, name)
    }
  }

  final class EnumSymbol(row: InternalRow, o: Int, nullIndex: Int, name: String, symbols: Array[UTF8String])
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = row.update(o, symbols(ValueWriters.enumIndex(in, symbols.length, name)))
  }

  /** `bytes` or `fixed` (`fixedSize` >= 0) as a new array: Spark's BinaryType owns its bytes. */
  final class BinaryValue(row: InternalRow, o: Int, nullIndex: Int, name: String, fixedSize: Int)
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      ValueWriters.readBinary(in, fixedSize)
      row.update(o, java.util.Arrays.copyOfRange(in.array, in.sliceStart, in.sliceStart + in.sliceLength))
    }
  }

  /** An Avro decimal (or NUMERIC as unscaled bytes): two's-complement big-endian, at `scale`, as `target`. */
  final class UnscaledDecimal(row: InternalRow, o: Int, nullIndex: Int, name: String, fixedSize: Int,
      scale: Int, target: DecimalTarget) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      ValueWriters.readBinary(in, fixedSize)
      target.setUnscaled(in.array, in.sliceStart, in.sliceLength, scale)
    }
  }

  /** A decimal sent as text, parsed straight from its bytes. */
  final class TextDecimal(row: InternalRow, o: Int, nullIndex: Int, name: String, target: DecimalTarget)
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      in.readSlice()
      target.setText(in.array, in.sliceStart, in.sliceLength)
    }
  }

  /** A DATETIME sent as text (a wall-clock time in `zone`), parsed straight from its bytes. */
  final class TextTimestamp(row: InternalRow, o: Int, nullIndex: Int, name: String, zone: LocalTimestamps)
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      in.readSlice()
      row.setLong(o, zone.toUtcMicros(SourceText.parseTimestamp(in.array, in.sliceStart, in.sliceLength, name)))
    }
  }

  /** Any other text form: its bytes, uncopied, go to `use`, which writes the slot. */
  final class ParsedText(row: InternalRow, o: Int, nullIndex: Int, name: String, use: ValueWriters.TextUse)
    extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = {
      in.readSlice()
      use(in.array, in.sliceStart, in.sliceLength)
    }
  }

  /**
   * A column read as its version's own type into a one-slot scratch row (by `read`, a plain step),
   * then widened into the layout's type: only columns whose type changed between versions pay.
   */
  final class Widened(row: InternalRow, o: Int, nullIndex: Int, name: String, read: DecodeStep,
      scratch: InternalRow, widen: Widening.Converter) extends ColumnStep(row, o, nullIndex, name) {
    def readValue(in: SliceDecoder): Unit = { read(in); widen(scratch, row, o) }
  }
}
