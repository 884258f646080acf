package io.sparkreplicate.catalyst

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import java.nio.ByteBuffer

import scala.jdk.CollectionConverters._

import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.Schema.Type._
import org.apache.avro.io.Decoder
import org.apache.avro.util.Utf8
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.AvroSchemas

/**
 * Builds, once per (Avro writer schema, Spark type), the closure that decodes one value and
 * stores it in a fixed slot of a reused row. Nothing is matched on types per value; strings go
 * from the decoder's bytes to UTF8String without a java.lang.String in between.
 */
private[catalyst] object ValueWriters {
  type Step = Decoder => Unit

  def column(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, name: String): Step =
    if (writer.getType == UNION) nullable(writer, target, row, ordinal, name)
    else value(writer, target, row, ordinal, name)

  private def nullable(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, name: String): Step = {
    val branches = writer.getTypes.asScala
    if (branches.size != 2 || !branches.exists(_.getType == NULL)) throw new ReplicateException(ErrorId.UnsupportedType,
      s"column `$name` is the union ${writer.toString.take(200)}; only `[null, T]` is read")
    nullableUnion(writer, name)(() => row.setNullAt(ordinal),
      value(AvroSchemas.unwrapNullable(writer), target, row, ordinal, name))
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

  private def value(writer: Schema, target: DataType, row: InternalRow, ordinal: Int, name: String): Step =
    (writer.getType, writer.getLogicalType, target) match {
      case (INT, _, IntegerType | DateType) => in => row.setInt(ordinal, in.readInt())
      case (INT, _, LongType) => in => row.setLong(ordinal, in.readInt().toLong)
      case (LONG, _: LogicalTypes.TimestampMillis, TimestampType) =>
        in => row.setLong(ordinal, millisToMicros(in.readLong(), name))
      case (LONG, _, LongType | TimestampType) => in => row.setLong(ordinal, in.readLong())
      case (FLOAT, _, FloatType) => in => row.setFloat(ordinal, in.readFloat())
      case (FLOAT, _, DoubleType) => in => row.setDouble(ordinal, in.readFloat().toDouble)
      case (DOUBLE, _, DoubleType) => in => row.setDouble(ordinal, in.readDouble())
      case (BOOLEAN, _, BooleanType) => in => row.setBoolean(ordinal, in.readBoolean())
      case (STRING, _, StringType) =>
        val utf8 = new Utf8()
        in => {
          val s = in.readString(utf8)
          row.update(ordinal, validUtf8(s.getBytes, s.getByteLength, name))
        }
      case (ENUM, _, StringType) =>
        val symbols = writer.getEnumSymbols.asScala.map(UTF8String.fromString).toArray
        in => row.update(ordinal, symbols(enumIndex(in, symbols.length, name)))
      case (BYTES, d: LogicalTypes.Decimal, t: DecimalType) =>
        var buffer = ByteBuffer.allocate(16)
        in => {
          buffer = in.readBytes(buffer)
          row.setDecimal(ordinal, decimal(buffer, d.getScale, t, name), t.precision)
        }
      case (FIXED, d: LogicalTypes.Decimal, t: DecimalType) =>
        val bytes = new Array[Byte](writer.getFixedSize)
        in => {
          in.readFixed(bytes)
          row.setDecimal(ordinal, decimal(ByteBuffer.wrap(bytes), d.getScale, t, name), t.precision)
        }
      case (BYTES, _, BinaryType) =>
        var buffer = ByteBuffer.allocate(64)
        in => {
          buffer = in.readBytes(buffer)
          row.update(ordinal, java.util.Arrays.copyOfRange(buffer.array(), buffer.position(), buffer.limit()))
        }
      case (FIXED, _, BinaryType) =>
        val size = writer.getFixedSize
        in => { val bytes = new Array[Byte](size); in.readFixed(bytes); row.update(ordinal, bytes) }
      case _ => throw new ReplicateException(ErrorId.IncompatibleVersions,
        s"column `$name` arrives as Avro ${writer.toString.take(200)}, which cannot be " +
          s"read as ${target.simpleString}")
    }

  /** Avro decoders do not check UTF-8; a string that is not valid UTF-8 is malformed, never replaced. */
  def validUtf8(bytes: Array[Byte], length: Int, name: String): UTF8String = {
    if (!Utf8Validator.isValid(bytes, 0, length)) throw new MalformedMessageException(ErrorId.InvalidUtf8,
      s"field `$name` is not valid UTF-8")
    UTF8String.fromBytes(bytes, 0, length)
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

  /** Avro decimals are two's-complement big-endian unscaled integers. */
  private def decimal(bytes: ByteBuffer, scale: Int, target: DecimalType, name: String): Decimal = {
    val unscaled = new BigInteger(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining())
    val value = Decimal(new JBigDecimal(unscaled, scale))
    if (!value.changePrecision(target.precision, target.scale)) throw new MalformedMessageException(
      ErrorId.BadValue, s"column `$name`: $value does not fit ${target.simpleString}")
    value
  }
}
