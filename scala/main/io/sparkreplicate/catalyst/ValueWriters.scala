package io.sparkreplicate.catalyst

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import java.nio.ByteBuffer
import java.time.{ZoneId, ZoneOffset}

import scala.jdk.CollectionConverters._

import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.Schema.Type._
import org.apache.avro.io.Decoder
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, ColumnInfo, DecodeStep, SliceDecoder, SourceText, Utf8Validator}

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
 * Builds, once per (Avro writer schema, Spark type), the closure that decodes one value and
 * stores it in a fixed slot of a reused row. Nothing is matched on types per value; strings go
 * from the decoder's bytes to UTF8String without a java.lang.String in between.
 */
private[catalyst] object ValueWriters {
  type Step = DecodeStep

  /** A header field, typed by its Avro schema alone. */
  def column(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, name: String): Step =
    nullable(writer, row, ordinal, name)(value(AvroSchemas.unwrapNullable(writer), target, row, ordinal, ValueOrigin.header(name)))

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
    nullable(writer, row, ordinal, column.name)(
      if (natural == target) value(avro, target, row, ordinal, origin)
      else {
        val scratch = new SpecificInternalRow(Seq(natural))
        val read = value(avro, natural, scratch, 0, origin)
        val widen = Widening.converter(natural, target, typing, column.name)
        in => { read(in); widen(scratch, row, ordinal) }
      })
  }

  private def nullable(writer: Schema, row: InternalRow, ordinal: Int, name: String)(read: Step): Step = {
    if (writer.getType == UNION) {
      val branches = writer.getTypes.asScala
      if (branches.size != 2 || !branches.exists(_.getType == NULL)) throw new ReplicateException(ErrorId.UnsupportedType,
        s"column `$name` is the union ${writer.toString.take(200)}; only `[null, T]` is read")
    }
    nullableUnion(writer, name)(() => row.setNullAt(ordinal), read)
  }

  /**
   * For `[null, T]` in either order: reads and validates the branch (as every other byte is), then
   * runs `onNull` or `read`. Any other schema is always present: `read` alone.
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

  private def value(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, o: ValueOrigin): Step = {
    val name = o.name
    (writer.getType, writer.getLogicalType, target) match {
      case (INT, _, IntegerType | DateType) => in => row.setInt(ordinal, in.readInt())
      case (INT, _, LongType) => in => row.setLong(ordinal, in.readInt().toLong)
      case (INT, _: LogicalTypes.TimeMillis, StringType) =>
        in => row.update(ordinal, UTF8String.fromString(SourceText.formatTime(in.readInt() * 1000L, name)))
      case (LONG, _: LogicalTypes.TimeMicros, StringType) =>
        in => row.update(ordinal, UTF8String.fromString(SourceText.formatTime(in.readLong(), name)))
      case (LONG, _: LogicalTypes.TimestampMillis, TimestampType) =>
        in => row.setLong(ordinal, millisToMicros(in.readLong(), name))
      case (LONG, _, LongType | TimestampType) => in => row.setLong(ordinal, in.readLong())
      case (FLOAT, _, FloatType) => in => row.setFloat(ordinal, in.readFloat())
      case (FLOAT, _, DoubleType) => in => row.setDouble(ordinal, in.readFloat().toDouble)
      case (DOUBLE, _, DoubleType) => in => row.setDouble(ordinal, in.readDouble())
      case (BOOLEAN, _, BooleanType) => in => row.setBoolean(ordinal, in.readBoolean())
      case (STRING, _, _) => text(target, row, ordinal, o)
      case (ENUM, _, StringType) =>
        val symbols = writer.getEnumSymbols.asScala.map(UTF8String.fromString).toArray
        in => row.update(ordinal, symbols(enumIndex(in, symbols.length, name)))
      case (BYTES | FIXED, d: LogicalTypes.Decimal, _: DecimalType | StringType) =>
        decimal(bytes(writer), d.getScale, target, row, ordinal, name)
      // NUMERIC without the logical type: unscaled bytes at the metadata's scale (which may be negative).
      case (BYTES | FIXED, null, _: DecimalType | StringType) if o.sourceType == "NUMERIC" || o.sourceType == "UINT8" =>
        decimal(bytes(writer), o.scale, target, row, ordinal, name)
      case (BYTES | FIXED, _, BinaryType) =>
        val read = bytes(writer)
        in => { val b = read(in); row.update(ordinal, java.util.Arrays.copyOfRange(b.array(), b.position(), b.limit())) }
      case _ => throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` arrives as Avro ${writer.toString.take(200)}, which cannot be " +
          s"read as ${target.simpleString}")
    }
  }

  /** A string, or the text form of a typed value (Replicate with logical data types off). */
  private def text(target: DataType, row: InternalRow, ordinal: Int, o: ValueOrigin): Step = {
    val name = o.name
    target match {
      case StringType if o.sourceType == "TIME" => parsed((b, at, n) =>
        row.update(ordinal, UTF8String.fromString(SourceText.formatTime(SourceText.parseTime(b, at, n, name), name))))
      case StringType if o.sourceType == "NUMERIC" =>
        // Without a precision (an unconstrained number), any decimal, at the scale it was sent with.
        val exact: (Array[Byte], Int, Int) => JBigDecimal =
          if (o.precision > 0) SourceText.parseDecimal(_, _, _, o.scale, name) else SourceText.parseDecimal(_, _, _, name)
        parsed((b, at, n) => row.update(ordinal, UTF8String.fromString(exact(b, at, n).toPlainString)))
      // The common case, one step: the string's own bytes, validated where they lie.
      case StringType => in => row.update(ordinal, utf8(in, name))
      case IntegerType => parsed((b, at, n) => row.setInt(ordinal, SourceText.parseInt(b, at, n, name)))
      case LongType => parsed((b, at, n) => row.setLong(ordinal, SourceText.parseLong(b, at, n, name)))
      case FloatType => parsed((b, at, n) => row.setFloat(ordinal, SourceText.parseFloat(b, at, n, name)))
      case DoubleType => parsed((b, at, n) => row.setDouble(ordinal, SourceText.parseDouble(b, at, n, name)))
      case BooleanType => parsed((b, at, n) => row.setBoolean(ordinal, SourceText.parseBoolean(b, at, n, name)))
      case DateType => parsed((b, at, n) => row.setInt(ordinal, SourceText.parseDate(b, at, n, name)))
      case BinaryType => parsed((b, at, n) => row.update(ordinal, SourceText.parseHex(b, at, n, name)))
      case t: DecimalType => parsed((b, at, n) =>
        row.setDecimal(ordinal, fit(Decimal(SourceText.parseDecimal(b, at, n, t.scale, name)), t, name), t.precision))
      case TimestampType =>
        val zone = new LocalTimestamps(o.zone)
        parsed((b, at, n) => row.setLong(ordinal, zone.toUtcMicros(SourceText.parseTimestamp(b, at, n, name))))
      case _ => throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` arrives as an Avro string, which cannot be read as ${target.simpleString}")
    }
  }

  /**
   * What is done with a string's bytes where they lie in the message: (array, offset, length). A
   * trait of its own rather than a Function3, which would box the two Ints of every value.
   */
  trait TextUse { def apply(bytes: Array[Byte], offset: Int, length: Int): Unit }

  /** The step reading a string and handing its bytes, uncopied, to `use`. */
  def parsed(use: TextUse): Step = in => { in.readSlice(); use(in.array, in.sliceStart, in.sliceLength) }

  /** Reads `bytes` or `fixed`; the buffer is reused, valid until the next read. */
  private def bytes(writer: Schema): Decoder => ByteBuffer = writer.getType match {
    case FIXED =>
      val fixed = ByteBuffer.wrap(new Array[Byte](writer.getFixedSize))
      in => { in.readFixed(fixed.array()); fixed }
    case _ =>
      var buffer = ByteBuffer.allocate(64)
      in => { buffer = in.readBytes(buffer); buffer }
  }

  /** Avro decimals are two's-complement big-endian unscaled integers. */
  private def decimal(read: Decoder => ByteBuffer, scale: Int, target: DataType, row: InternalRow,
      ordinal: Int, name: String): Step = {
    def value(in: Decoder): JBigDecimal = {
      val b = read(in)
      new JBigDecimal(new BigInteger(b.array(), b.arrayOffset() + b.position(), b.remaining()), scale)
    }
    target match {
      case t: DecimalType => in => row.setDecimal(ordinal, fit(Decimal(value(in)), t, name), t.precision)
      case _ => in => row.update(ordinal, UTF8String.fromString(value(in).toPlainString))
    }
  }

  /**
   * Reads a string as a UTF8String over the message's own bytes, without a copy: the row is copied
   * by Spark before the next message. Avro decoders do not check UTF-8; a string that is not valid
   * UTF-8 is malformed, never replaced.
   */
  def utf8(in: SliceDecoder, name: String): UTF8String = {
    in.readSlice()
    validUtf8(in.array, in.sliceStart, in.sliceLength, name)
  }

  def validUtf8(bytes: Array[Byte], offset: Int, length: Int, name: String): UTF8String = {
    if (!Utf8Validator.isValid(bytes, offset, length)) throw new MalformedMessageException(ErrorId.InvalidUtf8,
      s"field `$name` is not valid UTF-8")
    UTF8String.fromBytes(bytes, offset, length)
  }

  def enumIndex(in: Decoder, symbols: Int, name: String): Int = {
    val i = in.readEnum()
    if (i < 0 || i >= symbols) throw new MalformedMessageException(ErrorId.BadPayload,
      s"field `$name`: enum index $i out of range 0..${symbols - 1}")
    i
  }

  private def millisToMicros(millis: Long, name: String): Long =
    try Math.multiplyExact(millis, 1000L) catch {
      case _: ArithmeticException => throw new MalformedMessageException(ErrorId.BadValue,
        s"column `$name`: timestamp $millis ms is out of range")
    }

  def fit(value: Decimal, target: DecimalType, name: String): Decimal = {
    if (!value.changePrecision(target.precision, target.scale)) throw new MalformedMessageException(
      ErrorId.BadValue, s"column `$name`: $value does not fit ${target.simpleString}")
    value
  }
}
