package io.sparkreplicate.catalyst

import java.time.{ZoneId, ZoneOffset}

import scala.jdk.CollectionConverters._

import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.Schema.Type._
import org.apache.avro.io.Decoder
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, ColumnInfo, DecodeStep, SliceDecoder, SourceText}

/**
 * What a value writer knows of its value beyond the Avro and Spark types: the column's name (for
 * errors), its metadata source type and scale, and the zone of timestamps sent as text.
 */
private[catalyst] final case class ValueOrigin(name: String, sourceType: String, precision: Int, scale: Int, zone: ZoneId)

private[catalyst] object ValueOrigin {
  def header(name: String): ValueOrigin = ValueOrigin(name, "", 0, 0, ZoneOffset.UTC)
  def of(column: ColumnInfo, zone: ZoneId): ValueOrigin =
    ValueOrigin(column.name, ColumnTyping.sourceType(column), column.precision, column.scale, zone)
}

/**
 * Builds, once per (Avro writer schema, Spark type), the [[ColumnStep]] that decodes one value and
 * stores it in a fixed slot of a reused row. Nothing is matched on types per value; strings go
 * from the decoder's bytes to UTF8String without a java.lang.String in between.
 */
private[catalyst] object ValueWriters {
  type Step = DecodeStep
  import ColumnStep._

  /** A header field, typed by its Avro schema alone. */
  def column(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, name: String): Step =
    value(AvroSchemas.unwrapNullable(writer), target, row, ordinal, nullIndex(writer, name), ValueOrigin.header(name))

  /**
   * A table column of one table version. Its values take the version's own type (see
   * [[ColumnTyping]]); when the layout merged versions into a wider `target`, they are converted
   * through a one-slot scratch row, which only columns that changed type between versions pay for.
   */
  def tableColumn(writer: Schema, column: ColumnInfo, typing: ColumnTyping, target: DataType,
      row: InternalRow, ordinal: Int): Step = {
    val natural = typing.sparkType(writer, column)
    // With `sourceTypes` off, text is kept as sent: the source type must not reformat TIME or NUMERIC text.
    val origin = if (typing.sourceTypes) ValueOrigin.of(column, typing.timeZone) else ValueOrigin.header(column.name)
    val avro = AvroSchemas.unwrapNullable(writer)
    val nulls = nullIndex(writer, column.name)
    if (natural == target) value(avro, target, row, ordinal, nulls, origin)
    else {
      val scratch = StringSlot.row(Seq(natural))
      val read = value(avro, natural, scratch, 0, -1, origin)
      new Widened(row, ordinal, nulls, column.name, read, scratch, Widening.converter(natural, target, typing, column.name))
    }
  }

  /** The null branch of `[null, T]` (in either order), or -1 for a plain `T`; other unions are refused. */
  def nullIndex(writer: Schema, name: String): Int =
    if (writer.getType != UNION) -1
    else {
      val branches = writer.getTypes.asScala
      if (branches.size != 2 || !branches.exists(_.getType == NULL)) throw new ReplicateException(ErrorId.UnsupportedType,
        s"column `$name` is the union ${writer.toString.take(200)}; only `[null, T]` is read")
      branches.indexWhere(_.getType == NULL)
    }

  /**
   * For `[null, T]` in either order: reads and validates the branch (as every other byte is), then
   * runs `onNull` or `read`. Any other schema is always present: `read` alone. For the records of
   * a message; columns read their branch in their own [[ColumnStep]].
   */
  def nullableUnion(schema: Schema, name: String)(onNull: () => Unit, read: Step): Step =
    if (AvroSchemas.unwrapNullable(schema) eq schema) read
    else {
      val nullIndex = schema.getTypes.asScala.indexWhere(_.getType == NULL)
      val valueIndex = 1 - nullIndex
      in => {
        val branch = in.readIndex()
        if (branch == valueIndex) read(in)
        else if (branch == nullIndex) onNull()
        else throw new MalformedMessageException(ErrorId.BadPayload, s"`$name`: union branch $branch out of range")
      }
    }

  private def value(writer: Schema, target: DataType, row: InternalRow, o: Int, nulls: Int, origin: ValueOrigin): Step = {
    val name = origin.name
    def fixedSize = if (writer.getType == FIXED) writer.getFixedSize else -1
    (writer.getType, writer.getLogicalType, target) match {
      case (INT, _, IntegerType | DateType) => new IntValue(row, o, nulls, name)
      case (INT, _, LongType) => new IntAsLong(row, o, nulls, name)
      case (INT, _: LogicalTypes.TimeMillis, StringType) => new TimeOfDay(row, o, nulls, name, millis = true)
      case (LONG, _: LogicalTypes.TimeMicros, StringType) => new TimeOfDay(row, o, nulls, name, millis = false)
      case (LONG, _: LogicalTypes.TimestampMillis, TimestampType) => new MillisAsMicros(row, o, nulls, name)
      case (LONG, _, LongType | TimestampType) => new LongValue(row, o, nulls, name)
      case (FLOAT, _, FloatType) => new FloatValue(row, o, nulls, name)
      case (FLOAT, _, DoubleType) => new FloatAsDouble(row, o, nulls, name)
      case (DOUBLE, _, DoubleType) => new DoubleValue(row, o, nulls, name)
      case (BOOLEAN, _, BooleanType) => new BooleanValue(row, o, nulls, name)
      case (STRING, _, _) => text(target, row, o, nulls, origin)
      case (ENUM, _, StringType) =>
        new EnumSymbol(row, o, nulls, name, writer.getEnumSymbols.asScala.map(UTF8String.fromString).toArray)
      case (BYTES | FIXED, d: LogicalTypes.Decimal, _: DecimalType | StringType) =>
        new UnscaledDecimal(row, o, nulls, name, fixedSize, d.getScale, decimalTarget(target, row, o, None, name))
      // NUMERIC without the logical type: unscaled bytes at the metadata's scale (which may be negative).
      case (BYTES | FIXED, null, _: DecimalType | StringType) if origin.sourceType == "NUMERIC" || origin.sourceType == "UINT8" =>
        new UnscaledDecimal(row, o, nulls, name, fixedSize, origin.scale, decimalTarget(target, row, o, None, name))
      case (BYTES | FIXED, _, BinaryType) => new BinaryValue(row, o, nulls, name, fixedSize)
      case _ => throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` arrives as Avro ${writer.toString.take(200)}, which cannot be " +
          s"read as ${target.simpleString}")
    }
  }

  private def decimalTarget(target: DataType, row: InternalRow, o: Int, textScale: Option[Int], name: String) =
    target match {
      case t: DecimalType => DecimalTarget(row, o, t, name)
      case _ => DecimalTarget.asText(row, o, textScale, name)
    }

  /** A string, or the text form of a typed value (Replicate with logical data types off). */
  private def text(target: DataType, row: InternalRow, o: Int, nulls: Int, origin: ValueOrigin): Step = {
    val name = origin.name
    def parsed(use: TextUse) = new ParsedText(row, o, nulls, name, use)
    target match {
      case StringType if origin.sourceType == "TIME" => parsed((b, at, n) =>
        row.update(o, UTF8String.fromString(SourceText.formatTime(SourceText.parseTime(b, at, n, name), name))))
      case StringType if origin.sourceType == "NUMERIC" =>
        // Without a precision (an unconstrained number), any decimal, at the scale it was sent with.
        val scale = if (origin.precision > 0) Some(origin.scale) else None
        new TextDecimal(row, o, nulls, name, decimalTarget(StringType, row, o, scale, name))
      // The common case, one step: the string's own bytes, validated where they lie.
      case StringType => new Utf8Value(row, o, nulls, name)
      case IntegerType => parsed((b, at, n) => row.setInt(o, SourceText.parseInt(b, at, n, name)))
      case LongType => parsed((b, at, n) => row.setLong(o, SourceText.parseLong(b, at, n, name)))
      case FloatType => parsed((b, at, n) => row.setFloat(o, SourceText.parseFloat(b, at, n, name)))
      case DoubleType => parsed((b, at, n) => row.setDouble(o, SourceText.parseDouble(b, at, n, name)))
      case BooleanType => parsed((b, at, n) => row.setBoolean(o, SourceText.parseBoolean(b, at, n, name)))
      case DateType => parsed((b, at, n) => row.setInt(o, SourceText.parseDate(b, at, n, name)))
      case BinaryType => parsed((b, at, n) => row.update(o, SourceText.parseHex(b, at, n, name)))
      case t: DecimalType => new TextDecimal(row, o, nulls, name, DecimalTarget(row, o, t, name))
      case TimestampType => new TextTimestamp(row, o, nulls, name, new LocalTimestamps(origin.zone))
      case _ => throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` arrives as an Avro string, which cannot be read as ${target.simpleString}")
    }
  }

  /**
   * What is done with a string's bytes where they lie in the message: (array, offset, length). A
   * trait of its own rather than a Function3, which would box the two Ints of every value.
   */
  trait TextUse { def apply(bytes: Array[Byte], offset: Int, length: Int): Unit }

  /** Reads `bytes` (`fixedSize` < 0) or `fixed` as a slice of the decoder's array. */
  def readBinary(in: SliceDecoder, fixedSize: Int): Unit = if (fixedSize < 0) in.readSlice() else in.readFixedSlice(fixedSize)

  /**
   * Avro decoders do not check UTF-8; a string that is not valid UTF-8 is malformed, never
   * replaced. Checked where the bytes lie, which the row then points at (see [[StringSlot]]).
   */
  def checkUtf8(in: SliceDecoder, name: String): Unit =
    if (!in.isUtf8(in.sliceStart, in.sliceLength)) throw new MalformedMessageException(ErrorId.InvalidUtf8,
      s"field `$name` is not valid UTF-8")

  def enumIndex(in: Decoder, symbols: Int, name: String): Int = {
    val i = in.readEnum()
    if (i < 0 || i >= symbols) throw new MalformedMessageException(ErrorId.BadPayload,
      s"field `$name`: enum index $i out of range 0..${symbols - 1}")
    i
  }

  def fit(value: Decimal, target: DecimalType, name: String): Decimal = {
    if (!value.changePrecision(target.precision, target.scale)) throw new MalformedMessageException(
      ErrorId.BadValue, s"column `$name`: $value does not fit ${target.simpleString}")
    value
  }
}
