package io.sparkreplicate.codec

/**
 * The date and time-of-day parts of Replicate's text forms, `yyyy-MM-dd` and `HH:mm:ss[.f]` (1 to
 * 9 fraction digits, beyond microseconds truncated), read straight from bytes without allocating,
 * in the proleptic Gregorian calendar of Spark's dates. Bad text gives [[Invalid]]: the header
 * timestamps and the column values report it each in their own terms.
 */
object CivilTime {
  val MicrosPerDay: Long = 86_400_000_000L
  val MicrosPerMinute: Long = 60_000_000L
  val Invalid: Long = Long.MinValue

  /** Days since 1970-01-01 of the 10 bytes `yyyy-MM-dd` at `at`, or [[Invalid]]. */
  def epochDay(buf: Array[Byte], at: Int): Long = {
    if (buf(at + 4) != '-' || buf(at + 7) != '-') return Invalid
    val high = twoDigits(buf, at)
    val low = twoDigits(buf, at + 2)
    val year = if (high < 0 || low < 0) -1 else high * 100 + low
    val month = twoDigits(buf, at + 5)
    val day = twoDigits(buf, at + 8)
    // Every month has 28 days: the month's own length is looked up only past them.
    if (year < 0 || month < 1 || month > 12 || day < 1 || (day > 28 && day > daysInMonth(year, month))) Invalid
    else daysFromCivil(year, month, day)
  }

  /** Microseconds since midnight of `HH:mm:ss[.f]` in `buf[at, end)`, or [[Invalid]]. */
  def microsOfDay(buf: Array[Byte], at: Int, end: Int): Long = {
    if (end - at < 8 || buf(at + 2) != ':') return Invalid
    val hour = twoDigits(buf, at)
    val minute = twoDigits(buf, at + 3)
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return Invalid
    val seconds = microsOfMinute(buf, at + 5, end)
    if (seconds == Invalid) Invalid else (hour * 60L + minute) * MicrosPerMinute + seconds
  }

  /** Microseconds into the minute of `:ss[.f]` in `buf[at, end)`, the end of `HH:mm:ss[.f]`, or [[Invalid]]. */
  def microsOfMinute(buf: Array[Byte], at: Int, end: Int): Long = {
    if (end - at < 3 || buf(at) != ':') return Invalid
    val second = twoDigits(buf, at + 1)
    if (second < 0 || second > 59) return Invalid
    var micros = 0L
    if (end - at > 3) {
      val fraction = end - at - 4
      if (buf(at + 3) != '.' || fraction < 1 || fraction > 9) return Invalid
      val value = fractionDigits(buf, at + 4, fraction)
      if (value < 0) return Invalid
      micros = if (fraction <= 6) value * pow10(6 - fraction) else value / pow10(fraction - 6)
    }
    second * 1_000_000L + micros
  }

  /** The value of 2 ASCII digits, or -1 if either is not a digit: the loop of [[digits]] unrolled, as most fields are 2. */
  private def twoDigits(buf: Array[Byte], at: Int): Int = {
    val tens = buf(at) - '0'
    val ones = buf(at + 1) - '0'
    if (tens < 0 || tens > 9 || ones < 0 || ones > 9) -1 else tens * 10 + ones
  }

  /**
   * The value of `n` (1 to 9) ASCII digits, or -1 if any is not a digit: up to 8 read as one word
   * where the array holds a whole word from `at`, else one by one.
   */
  private def fractionDigits(buf: Array[Byte], at: Int, n: Int): Int =
    if (n <= 8 && at <= buf.length - 8) {
      val word = ByteWords.littleEndianLong(buf, at)
      if (ByteWords.leadingDigits(word) < n) -1 else ByteWords.digitsValue(word, n).toInt
    } else digits(buf, at, n)

  /** The value of `n` ASCII digits, or -1 if any is not a digit. */
  private def digits(buf: Array[Byte], at: Int, n: Int): Int = {
    var v = 0
    var i = 0
    while (i < n) {
      val d = buf(at + i) - '0'
      if (d < 0 || d > 9) return -1
      v = v * 10 + d
      i += 1
    }
    v
  }

  private def pow10(n: Int): Long = { var r = 1L; var i = 0; while (i < n) { r *= 10; i += 1 }; r }

  private def isLeap(y: Int) = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0

  private def daysInMonth(y: Int, m: Int): Int = m match {
    case 2 => if (isLeap(y)) 29 else 28
    case 4 | 6 | 9 | 11 => 30
    case _ => 31
  }

  /** Days since 1970-01-01 of a proleptic Gregorian date (the standard civil-calendar formula). */
  private def daysFromCivil(year: Int, month: Int, day: Int): Long = {
    val y = if (month <= 2) year - 1 else year
    val era = (if (y >= 0) y else y - 399) / 400
    val yoe = y - era * 400
    val doy = (153 * (if (month > 2) month - 3 else month + 9) + 2) / 5 + day - 1
    val doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    era.toLong * 146097 + doe - 719468
  }
}
