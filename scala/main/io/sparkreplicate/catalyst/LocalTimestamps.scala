package io.sparkreplicate.catalyst

import java.time.{LocalDateTime, ZonedDateTime, ZoneId, ZoneOffset}

/**
 * Converts between instants and wall-clock times in one zone, both as microseconds since the
 * epoch (a wall-clock time counted as if it were UTC). Fixed-offset zones, UTC above all, take a
 * subtraction; others go through java.time, which resolves a wall-clock time in a DST gap by
 * moving it forward by the gap and one in an overlap to the earlier offset, as Spark's casts do.
 */
final class LocalTimestamps(zone: ZoneId) {
  private val fixedOffsetMicros: Option[Long] =
    if (zone.getRules.isFixedOffset) Some(zone.getRules.getOffset(java.time.Instant.EPOCH).getTotalSeconds * 1_000_000L)
    else None

  def toUtcMicros(localMicros: Long): Long = fixedOffsetMicros match {
    case Some(offset) => localMicros - offset
    case None =>
      val zoned = ZonedDateTime.ofLocal(wallClock(localMicros), zone, null)
      zoned.toEpochSecond * 1_000_000L + zoned.getNano / 1000
  }

  def toLocalMicros(utcMicros: Long): Long = fixedOffsetMicros match {
    case Some(offset) => utcMicros + offset
    case None =>
      val offset = zone.getRules.getOffset(java.time.Instant.ofEpochSecond(Math.floorDiv(utcMicros, 1_000_000L)))
      utcMicros + offset.getTotalSeconds * 1_000_000L
  }

  /** `yyyy-MM-dd HH:mm:ss.ffffff`, Replicate's own DATETIME text, in this zone. */
  def format(utcMicros: Long): String = {
    val local = wallClock(toLocalMicros(utcMicros))
    f"${local.toLocalDate} ${local.getHour}%02d:${local.getMinute}%02d:${local.getSecond}%02d.${local.getNano / 1000}%06d"
  }

  private def wallClock(localMicros: Long): LocalDateTime =
    LocalDateTime.ofEpochSecond(Math.floorDiv(localMicros, 1_000_000L),
      (Math.floorMod(localMicros, 1_000_000L) * 1000).toInt, ZoneOffset.UTC)
}
