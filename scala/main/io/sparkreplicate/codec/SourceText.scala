package io.sparkreplicate.codec

import java.math.{BigDecimal => JBigDecimal}
import java.nio.charset.StandardCharsets.UTF_8

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Parses the text forms Replicate sends when its "logical data types" are off: integers, decimals,
 * dates `yyyy-MM-dd`, times `HH:mm:ss[.f]` and booleans, read straight from the decoder's bytes.
 * A value that does not parse is a malformed message naming the column: never a silent null.
 */
object SourceText {

  def parseInt(buf: Array[Byte], offset: Int, length: Int, column: String): Int = {
    val v = parseLong(buf, offset, length, column)
    if (v < Int.MinValue || v > Int.MaxValue) fail(buf, offset, length, column, "a 32-bit integer")
    v.toInt
  }

  /** An optional sign and 1 to 19 digits; overflow is malformed, not wrapped. */
  def parseLong(buf: Array[Byte], offset: Int, length: Int, column: String): Long = {
    val signed = length > 0 && (buf(offset) == '-' || buf(offset) == '+')
    val start = if (signed) 1 else 0
    if (length - start < 1 || length - start > 19) fail(buf, offset, length, column, "an integer")
    val negative = signed && buf(offset) == '-'
    // Accumulated negatively, so that Long.MinValue parses.
    var v = 0L
    var i = start
    while (i < length) {
      val d = buf(offset + i) - '0'
      if (d < 0 || d > 9) fail(buf, offset, length, column, "an integer")
      if (v < (Long.MinValue + d) / 10) fail(buf, offset, length, column, "a 64-bit integer")
      v = v * 10 - d
      i += 1
    }
    if (negative) v
    else if (v == Long.MinValue) fail(buf, offset, length, column, "a 64-bit integer")
    else -v
  }

  /**
   * A decimal number held exactly at `scale`: more significant fraction digits than the scale
   * would need rounding, so they make the value malformed. Exponents are accepted.
   */
  def parseDecimal(buf: Array[Byte], offset: Int, length: Int, scale: Int, column: String): JBigDecimal =
    try parseDecimal(buf, offset, length, column).setScale(scale) catch {
      case _: ArithmeticException => fail(buf, offset, length, column, s"a decimal number exact at scale $scale")
    }

  /** A decimal number at the scale its text has. */
  def parseDecimal(buf: Array[Byte], offset: Int, length: Int, column: String): JBigDecimal = {
    val text = ascii(buf, offset, length)
    def bad = fail(buf, offset, length, column, "a decimal number")
    if (!isDecimalText(text)) bad
    val value = try new JBigDecimal(text) catch { case _: NumberFormatException => bad }
    // An exponent can ask for a billion digits; rescaling to them would take minutes. Text of at
    // most 400 characters without one never has a scale beyond 400.
    if (math.abs(value.scale) > MaxScale) bad
    value
  }

  private val MaxScale = 1000

  /** What [[plainUnscaled]] returns for text it leaves to [[parseDecimal]]. */
  val NotPlain: Long = Long.MinValue

  /**
   * The unscaled value at `scale` of a plain decimal text, `[+-]digits[.digits]` of at most 18
   * digits once scaled, read without allocating; [[NotPlain]] for anything else (an exponent, more
   * digits, fraction digits the scale would round away, text that is no number at all), which the
   * caller parses with [[parseDecimal]]: it gives the same value, or the error.
   */
  def plainUnscaled(buf: Array[Byte], offset: Int, length: Int, scale: Int): Long = {
    if (scale < 0 || scale > 18 || length > MaxPlainText) return NotPlain
    val end = offset + length
    var i = offset
    val negative = i < end && buf(i) == '-'
    if (i < end && (buf(i) == '-' || buf(i) == '+')) i += 1
    val digitsFrom = i
    // Digits join `value` only while it stays within 18 digits: below 10^(18 - n) before n more.
    // Leading zeros keep `value` 0 and so never count. The integer digits are read a word at a
    // time while the array holds a whole word (bytes past `end` are never counted), the rest one by
    // one.
    var value = 0L
    var run = 8
    while (run == 8 && i <= buf.length - 8) {
      val word = ByteWords.littleEndianLong(buf, i)
      run = math.min(ByteWords.leadingDigits(word), end - i)
      if (run > 0) {
        if (value >= Pow10(18 - run)) return NotPlain
        value = value * Pow10(run) + ByteWords.digitsValue(word, run)
        i += run
      }
    }
    var d = 0
    while (i < end && { d = buf(i) - '0'; d >= 0 && d <= 9 }) {
      if (value >= Pow10(17)) return NotPlain
      value = value * 10 + d
      i += 1
    }
    var anyDigit = i > digitsFrom
    var fraction = 0 // fraction digits in `value`
    if (i < end && buf(i) == '.') {
      i += 1
      while (i < end && { d = buf(i) - '0'; d >= 0 && d <= 9 }) {
        anyDigit = true
        // A fraction digit beyond the scale must be 0, or setScale would have to round.
        if (fraction < scale) {
          if (value >= Pow10(17)) return NotPlain
          value = value * 10 + d
          fraction += 1
        } else if (d != 0) return NotPlain
        i += 1
      }
    }
    if (i != end || !anyDigit) return NotPlain
    if (value != 0) {
      val up = scale - fraction
      if (value >= Pow10(18 - up)) return NotPlain
      value *= Pow10(up)
    }
    if (negative) -value else value
  }

  /** 10^0 to 10^18. */
  private val Pow10: Array[Long] = Array.iterate(1L, 19)(_ * 10)

  /** What [[parseDecimal]] accepts at most. */
  private val MaxPlainText = 400

  def parseDouble(buf: Array[Byte], offset: Int, length: Int, column: String): Double = {
    val text = ascii(buf, offset, length)
    // Java's parser also takes hex floats and `1f`/`1d` suffixes, which no database writes.
    if (!isDecimalText(text) && text != "NaN" && text != "Infinity" && text != "-Infinity")
      fail(buf, offset, length, column, "a floating-point number")
    try text.toDouble catch { case _: NumberFormatException => fail(buf, offset, length, column, "a floating-point number") }
  }

  def parseFloat(buf: Array[Byte], offset: Int, length: Int, column: String): Float = {
    val d = parseDouble(buf, offset, length, column)
    val f = d.toFloat
    if (f.isInfinite && !d.isInfinite) fail(buf, offset, length, column, "a 32-bit floating-point number")
    f
  }

  /** `true`/`false` in any case, or `1`/`0` as some sources send booleans. */
  def parseBoolean(buf: Array[Byte], offset: Int, length: Int, column: String): Boolean =
    ascii(buf, offset, length).toLowerCase(java.util.Locale.ROOT) match {
      case "true" | "1" => true
      case "false" | "0" => false
      case _ => fail(buf, offset, length, column, "a boolean (true, false, 1 or 0)")
    }

  /** `yyyy-MM-dd`, proleptic Gregorian as Spark's DateType, to days since 1970-01-01. */
  def parseDate(buf: Array[Byte], offset: Int, length: Int, column: String): Int = {
    val days = if (length == 10) CivilTime.epochDay(buf, offset) else CivilTime.Invalid
    if (days == CivilTime.Invalid) fail(buf, offset, length, column, "a date yyyy-MM-dd")
    days.toInt
  }

  /** `HH:mm:ss` with 0 to 9 fraction digits (beyond microseconds truncated), to microseconds of the day. */
  def parseTime(buf: Array[Byte], offset: Int, length: Int, column: String): Long = {
    val micros = CivilTime.microsOfDay(buf, offset, offset + length)
    if (micros == CivilTime.Invalid) fail(buf, offset, length, column, "a time HH:mm:ss[.ffffff]")
    micros
  }

  /** A DATETIME as Replicate writes it, `yyyy-MM-dd HH:mm:ss.ffffff` without a zone, to microseconds of that civil time. */
  def parseTimestamp(buf: Array[Byte], offset: Int, length: Int, column: String): Long = {
    val micros = ChangeTimestamp.micros(buf, offset, length)
    if (micros == CivilTime.Invalid) fail(buf, offset, length, column, "a timestamp yyyy-MM-dd HH:mm:ss[.ffffff]")
    micros
  }

  /** `HH:mm:ss.ffffff`: the one form TIME values take whatever Replicate sent. */
  def formatTime(microsOfDay: Long, column: String): String = {
    if (microsOfDay < 0 || microsOfDay >= CivilTime.MicrosPerDay) throw new MalformedMessageException(ErrorId.BadValue,
      s"column `$column`: time of day $microsOfDay µs is out of range")
    val seconds = microsOfDay / 1_000_000L
    f"${seconds / 3600}%02d:${seconds / 60 % 60}%02d:${seconds % 60}%02d.${microsOfDay % 1_000_000L}%06d"
  }

  /** Hexadecimal, as Replicate's text forms write binary. */
  def parseHex(buf: Array[Byte], offset: Int, length: Int, column: String): Array[Byte] = {
    if (length % 2 != 0) fail(buf, offset, length, column, "hexadecimal bytes")
    val out = new Array[Byte](length / 2)
    var i = 0
    while (i < out.length) {
      val hi = Character.digit(buf(offset + 2 * i), 16)
      val lo = Character.digit(buf(offset + 2 * i + 1), 16)
      if (hi < 0 || lo < 0) fail(buf, offset, length, column, "hexadecimal bytes")
      out(i) = ((hi << 4) | lo).toByte
      i += 1
    }
    out
  }

  /** Digits, sign, one point and an exponent: what `BigDecimal` and `toDouble` accept, minus the exotic forms. */
  private def isDecimalText(text: String): Boolean =
    text.nonEmpty && text.length <= MaxPlainText && text.exists(_.isDigit) &&
      text.forall(c => (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')

  private def ascii(buf: Array[Byte], offset: Int, length: Int): String =
    new String(buf, offset, math.min(length, 4096), UTF_8)

  private def fail(buf: Array[Byte], offset: Int, length: Int, column: String, expected: String): Nothing =
    throw new MalformedMessageException(ErrorId.BadValue,
      s"column `$column`: `${new String(buf, offset, math.min(length, 64), UTF_8)}` is not $expected")
}
