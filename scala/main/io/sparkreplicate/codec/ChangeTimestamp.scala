package io.sparkreplicate.codec

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Parses Replicate's header timestamps, `2023-03-21 14:34:21.123456` (or with a `T`, and 0–9
 * fraction digits) in UTC, to microseconds since the epoch. Hand-written because it runs once per
 * message and java.time's parsers allocate several objects per call; this one allocates nothing
 * unless the timestamp is bad.
 */
object ChangeTimestamp {

  def parseMicros(buf: Array[Byte], offset: Int, length: Int): Long = {
    def fail() = throw new MalformedMessageException(ErrorId.BadValue,
      s"header timestamp `${new String(buf, offset, math.min(length, 64), "UTF-8")}` is not " +
        "`yyyy-MM-dd HH:mm:ss[.ffffff]`")
    def digits(at: Int, n: Int): Int = {
      var v = 0
      var i = 0
      while (i < n) {
        val c = buf(offset + at + i) - '0'
        if (c < 0 || c > 9) fail()
        v = v * 10 + c
        i += 1
      }
      v
    }
    def expect(at: Int, c: Char): Unit = if (buf(offset + at) != c) fail()

    if (length < 19) fail()
    val year = digits(0, 4); expect(4, '-')
    val month = digits(5, 2); expect(7, '-')
    val day = digits(8, 2)
    if (buf(offset + 10) != ' ' && buf(offset + 10) != 'T') fail()
    val hour = digits(11, 2); expect(13, ':')
    val minute = digits(14, 2); expect(16, ':')
    val second = digits(17, 2)
    var end = length
    if (buf(offset + end - 1) == 'Z') end -= 1
    var micros = 0L
    if (end > 19) {
      expect(19, '.')
      val fraction = end - 20
      if (fraction < 1 || fraction > 9) fail()
      val value = digits(20, fraction)
      micros = if (fraction <= 6) value * pow10(6 - fraction) else value / pow10(fraction - 6)
    }
    if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 ||
        minute > 59 || second > 59) fail()
    val days = daysFromCivil(year, month, day)
    ((days * 24 + hour) * 60 + minute) * 60_000_000L + second * 1_000_000L + micros
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
