package io.sparkreplicate.catalyst

import java.math.{BigDecimal => JBigDecimal, BigInteger}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{Decimal, DecimalType}
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.codec.SourceText

/**
 * Where a decimal column's values go, from unscaled two's-complement bytes or from text: a Spark
 * decimal of the layout's type, or (beyond 38 digits) the exact plain text.
 */
private[catalyst] sealed abstract class DecimalTarget {
  def setUnscaled(bytes: Array[Byte], at: Int, n: Int, scale: Int): Unit
  def setText(bytes: Array[Byte], at: Int, n: Int): Unit
}

private[catalyst] object DecimalTarget {
  def apply(row: InternalRow, ordinal: Int, target: DecimalType, name: String): DecimalTarget =
    new ToDecimal(row, ordinal, target, name)

  /** Text without a precision (an unconstrained number) is kept at the scale it was sent with. */
  def asText(row: InternalRow, ordinal: Int, textScale: Option[Int], name: String): DecimalTarget =
    new ToText(row, ordinal, textScale, name)

  private def unscaled(bytes: Array[Byte], at: Int, n: Int, scale: Int): JBigDecimal =
    new JBigDecimal(new BigInteger(bytes, at, n), scale)

  /**
   * Values of up to 18 digits at the target's scale, nearly all of them, are set as a long in a
   * new Decimal: no BigInteger, BigDecimal or String in between. A new one per value, not one
   * reused as the row is: Spark's `InternalRow.copyValue`, which an operator that keeps a value
   * calls, copies strings, structs and arrays but keeps a Decimal by reference, so
   * `collect_list(from_replicate(value))` kept one reused Decimal and showed the last message's
   * value in every row. Any other value (wider, at another scale, or malformed) takes BigDecimal's
   * path, whose result and errors are the reference.
   */
  private final class ToDecimal(row: InternalRow, o: Int, t: DecimalType, name: String) extends DecimalTarget {
    /** Unscaled longs of at most `t.precision` digits lie strictly within this bound. */
    private val bound = if (t.precision > 18) Long.MaxValue else pow10(t.precision)

    def setUnscaled(bytes: Array[Byte], at: Int, n: Int, scale: Int): Unit = {
      val shift = t.scale - scale
      if (n >= 1 && n <= 8 && shift >= 0 && shift <= 18) {
        val value = signedLong(bytes, at, n)
        val factor = pow10(shift)
        val high = Math.multiplyHigh(value, factor)
        val scaled = value * factor
        // The product fits a long when its high word is only the sign of its low word.
        if (high == (scaled >> 63) && scaled > -bound && scaled < bound) return setLong(scaled)
      }
      setExact(unscaled(bytes, at, n, scale))
    }

    def setText(bytes: Array[Byte], at: Int, n: Int): Unit = {
      val value = SourceText.plainUnscaled(bytes, at, n, t.scale)
      if (value != SourceText.NotPlain && value > -bound && value < bound) setLong(value)
      else setExact(SourceText.parseDecimal(bytes, at, n, t.scale, name))
    }

    private def setLong(value: Long): Unit = row.setDecimal(o, Decimal.createUnsafe(value, t.precision, t.scale), t.precision)

    private def setExact(value: JBigDecimal): Unit = row.setDecimal(o, ValueWriters.fit(Decimal(value), t, name), t.precision)
  }

  private final class ToText(row: InternalRow, o: Int, textScale: Option[Int], name: String) extends DecimalTarget {
    def setUnscaled(bytes: Array[Byte], at: Int, n: Int, scale: Int): Unit = set(unscaled(bytes, at, n, scale))

    def setText(bytes: Array[Byte], at: Int, n: Int): Unit = set(textScale match {
      case Some(scale) => SourceText.parseDecimal(bytes, at, n, scale, name)
      case None => SourceText.parseDecimal(bytes, at, n, name)
    })

    private def set(value: JBigDecimal): Unit = row.update(o, UTF8String.fromString(value.toPlainString))
  }

  /** The big-endian two's-complement value of 1 to 8 bytes. */
  private def signedLong(bytes: Array[Byte], at: Int, n: Int): Long = {
    var value = bytes(at).toLong // sign-extended
    var i = 1
    while (i < n) { value = value << 8 | (bytes(at + i) & 0xffL); i += 1 }
    value
  }

  private def pow10(n: Int): Long = { var r = 1L; var i = 0; while (i < n) { r *= 10; i += 1 }; r }
}
