package io.sparkreplicate.codec

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Parses Replicate's header timestamps, `2023-03-21 14:34:21.123456` (or with a `T`, and 0–9
 * fraction digits) in UTC, to microseconds since the epoch. Hand-written because it runs once per
 * message and java.time's parsers allocate several objects per call; this one allocates nothing
 * unless the timestamp is bad.
 */
object ChangeTimestamp {
  import CivilTime.Invalid

  def parseMicros(buf: Array[Byte], offset: Int, length: Int): Long = {
    val parsed = micros(buf, offset, length)
    if (parsed == Invalid) throw new MalformedMessageException(ErrorId.BadValue,
      s"header timestamp `${new String(buf, offset, math.min(length, 64), "UTF-8")}` is not " +
        "`yyyy-MM-dd HH:mm:ss[.ffffff]`")
    parsed
  }

  /** The same text's microseconds since the epoch, or [[CivilTime.Invalid]], for callers with errors of their own. */
  def micros(buf: Array[Byte], offset: Int, length: Int): Long = {
    val end = if (length >= 19 && buf(offset + length - 1) == 'Z') offset + length - 1 else offset + length
    val separator = if (length >= 19) buf(offset + 10) else 0
    val days = if (separator == ' ' || separator == 'T') CivilTime.epochDay(buf, offset) else Invalid
    val time = if (days == Invalid) Invalid else CivilTime.microsOfDay(buf, offset + 11, end)
    if (time == Invalid) Invalid else days * CivilTime.MicrosPerDay + time
  }
}
