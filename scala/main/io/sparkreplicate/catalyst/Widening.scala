package io.sparkreplicate.catalyst

import java.time.{LocalDate, ZoneId}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.{ErrorId, ReplicateException}

/**
 * How a column whose type changed between table versions is read as one type: safe widenings
 * only (int → long, float → double, decimal precision up at the same scale), and anything →
 * string when the user asks for it with `widenToString`.
 */
object Widening {

  /** The type that holds values of both `a` and `b` without loss; None when there is none. */
  def widen(a: DataType, b: DataType, toString: Boolean): Option[DataType] = (a, b) match {
    case _ if a == b => Some(a)
    case (IntegerType, LongType) | (LongType, IntegerType) => Some(LongType)
    case (FloatType, DoubleType) | (DoubleType, FloatType) => Some(DoubleType)
    case (x: DecimalType, y: DecimalType) if x.scale == y.scale =>
      Some(DecimalType(math.max(x.precision, y.precision), x.scale))
    case _ if toString => Some(StringType)
    case _ => None
  }

  type Converter = (InternalRow, InternalRow, Int) => Unit

  /**
   * Copies slot 0 of a row holding a `from` value into `to`'s slot as a `to` value; refused when
   * `to` is not a widening of `from` (a message whose own schema contradicts the layout).
   */
  def converter(from: DataType, to: DataType, typing: ColumnTyping, column: String): Converter = {
    if (!widen(from, to, typing.widenToString).contains(to)) throw new ReplicateException(ErrorId.IncompatibleVersions,
      s"column `$column` arrives as ${from.simpleString}, which cannot be read as ${to.simpleString}")
    convert(from, to, typing.timeZone, column)
  }

  private def convert(from: DataType, to: DataType, zone: ZoneId, column: String): Converter = (from, to) match {
    case (IntegerType, LongType) => (in, out, o) => out.setLong(o, in.getInt(0).toLong)
    case (FloatType, DoubleType) => (in, out, o) => out.setDouble(o, in.getFloat(0).toDouble)
    case (x: DecimalType, y: DecimalType) =>
      (in, out, o) => out.setDecimal(o, ValueWriters.fit(in.getDecimal(0, x.precision, x.scale).clone(), y, column), y.precision)
    case (_, StringType) =>
      val text = asText(from, zone)
      (in, out, o) => out.update(o, UTF8String.fromString(text(in)))
    case _ => throw new IllegalStateException(s"widen accepts ${from.simpleString} to ${to.simpleString} but has no converter")
  }

  /** The text of a value: as Replicate's own text forms write it when logical types are off. */
  private def asText(from: DataType, zone: ZoneId): InternalRow => String = from match {
    case IntegerType => _.getInt(0).toString
    case LongType => _.getLong(0).toString
    case FloatType => _.getFloat(0).toString
    case DoubleType => _.getDouble(0).toString
    case BooleanType => _.getBoolean(0).toString
    case t: DecimalType => _.getDecimal(0, t.precision, t.scale).toJavaBigDecimal.toPlainString
    case DateType => r => LocalDate.ofEpochDay(r.getInt(0).toLong).toString
    case TimestampType =>
      val timestamps = new LocalTimestamps(zone)
      r => timestamps.format(r.getLong(0))
    case BinaryType => _.getBinary(0).map(b => f"$b%02X").mkString
    case StringType => _.getUTF8String(0).toString
    case other => throw new IllegalStateException(s"no text form of ${other.simpleString}")
  }
}
