package io.sparkreplicate

import java.time.{DateTimeException, ZoneId}
import java.util.Locale

import org.apache.spark.network.util.JavaUtils

/**
 * Reader options as Spark hands them over, looked up by name in any case (as everywhere in
 * Spark), with the typed readings every options class shares. A bad value fails naming the
 * option and the values it accepts.
 */
final class OptionMap(options: Map[String, String]) {
  private val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }

  def get(name: String): Option[String] = lower.get(name.toLowerCase(Locale.ROOT))

  /** The value with blanks trimmed; None when absent or blank. */
  def nonBlank(name: String): Option[String] = get(name).map(_.trim).filter(_.nonEmpty)

  def boolean(name: String, default: => Boolean): Boolean = get(name).fold(default) { value =>
    value.trim.toLowerCase(Locale.ROOT) match {
      case "true" => true
      case "false" => false
      case _ => OptionMap.invalid(name, value, "true or false")
    }
  }

  def oneOf[T](name: String, all: Seq[T], default: T)(label: T => String): T = get(name).fold(default) { value =>
    all.find(label(_).equalsIgnoreCase(value.trim))
      .getOrElse(OptionMap.invalid(name, value, all.map(label).mkString(", ")))
  }

  def positiveInt(name: String, default: Int): Int = get(name).fold(default) { value =>
    value.trim.toIntOption.filter(_ > 0).getOrElse(OptionMap.invalid(name, value, "a positive integer"))
  }

  /** `1048576`, `512k`, `16m`, `1g` (binary units), at most 2 GiB - 1. */
  def byteSize(name: String, default: Int): Int =
    get(name).fold(default)(size(name, _, Int.MaxValue, "a size between 1 byte and 2g").toInt)

  /** A size as [[byteSize]] reads it, without its 2 GiB bound; None when absent. */
  def largeByteSize(name: String): Option[Long] =
    get(name).map(size(name, _, Long.MaxValue, "a positive size such as 1048576, 512m or 10g"))

  private def size(name: String, value: String, most: Long, range: String): Long = value match {
    case OptionMap.ByteSize(digits, unit) =>
      val shift = unit.toLowerCase(Locale.ROOT) match { case "k" => 10 case "m" => 20 case "g" => 30 case _ => 0 }
      val bytes = BigInt(digits) << shift
      if (bytes <= 0 || bytes > most) OptionMap.invalid(name, value, range)
      bytes.toLong
    case _ => OptionMap.invalid(name, value, "a size such as 1048576, 512k or 16m")
  }

  /** A duration in Spark's notation (`500ms`, `30s`, `5m`, `1h`), in milliseconds; at least 0. */
  def durationMillis(name: String, default: Long): Long = get(name).fold(default) { value =>
    val millis = try JavaUtils.timeStringAsMs(value.trim) catch { case _: NumberFormatException => -1L }
    if (millis < 0) OptionMap.invalid(name, value, "a duration such as 500ms, 30s, 5m or 1h")
    millis
  }

  /**
   * A region (`Europe/Paris`), an offset (`+01:00`), `UTC`, or one of Java's short ids (`PST`);
   * `fallback` names the session setting used when the option is absent.
   */
  def zone(name: String, fallback: (String, String)): ZoneId = {
    val (setting, value) = get(name).map(name -> _).getOrElse(fallback)
    try ZoneId.of(value.trim, ZoneId.SHORT_IDS) catch {
      case _: DateTimeException => OptionMap.invalid(setting, value, "a time zone such as UTC, Europe/Paris or +01:00")
    }
  }
}

object OptionMap {
  private val ByteSize = "(?i)\\s*(\\d+)\\s*([kmg]?)i?b?\\s*".r

  def invalid(name: String, value: String, expected: String): Nothing =
    throw new ReplicateException(ErrorId.InvalidOption, s"option `$name` has the value `$value`; expected $expected")
}
