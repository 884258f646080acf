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
    val separator = if (length >= 19) buf(offset + 10) else 0
    val days = if (separator == ' ' || separator == 'T') CivilTime.epochDay(buf, offset) else Invalid
    val time = if (days == Invalid) Invalid else CivilTime.microsOfDay(buf, offset + 11, textEnd(buf, offset, length))
    if (time == Invalid) Invalid else days * CivilTime.MicrosPerDay + time
  }

  /** Where the text ends, before a trailing `Z`. */
  private[codec] def textEnd(buf: Array[Byte], offset: Int, length: Int): Int =
    if (length >= 19 && buf(offset + length - 1) == 'Z') offset + length - 1 else offset + length
}

/**
 * [[ChangeTimestamp.parseMicros]] for the header timestamps of one stream of messages, remembering
 * the minute of the last one: a source's changes are mostly seconds apart or less (97% of profile
 * M's messages share the minute of the message before), and a timestamp whose first 16 bytes,
 * `yyyy-MM-dd HH:mm`, are the last one's (two word comparisons) needs only its seconds parsed.
 * A timestamp that does not match, or whose seconds are bad, is parsed whole, with its own error.
 */
final class ChangeTimestampParser {
  import CivilTime.Invalid

  /** The last valid timestamp's first 16 bytes, as two little-endian words, and its minute's microseconds. */
  private var minuteHigh = 0L
  private var minuteLow = 0L
  private var minuteMicros = Invalid

  def parseMicros(buf: Array[Byte], offset: Int, length: Int): Long = {
    // 19 bytes at least, `yyyy-MM-dd HH:mm:ss`: the two words lie inside the text.
    if (length >= 19 && minuteMicros != Invalid && ByteWords.littleEndianLong(buf, offset) == minuteHigh &&
        ByteWords.littleEndianLong(buf, offset + 8) == minuteLow) {
      val seconds = CivilTime.microsOfMinute(buf, offset + 16, ChangeTimestamp.textEnd(buf, offset, length))
      if (seconds != Invalid) return minuteMicros + seconds
    }
    val micros = ChangeTimestamp.parseMicros(buf, offset, length)
    // Valid, so at least 19 bytes. The epoch starts a minute and UTC has no leap seconds here, so
    // the minute starts at the multiple of a minute at or below the value.
    minuteHigh = ByteWords.littleEndianLong(buf, offset)
    minuteLow = ByteWords.littleEndianLong(buf, offset + 8)
    minuteMicros = Math.floorDiv(micros, CivilTime.MicrosPerMinute) * CivilTime.MicrosPerMinute
    micros
  }
}
