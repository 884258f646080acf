package io.sparkreplicate

import java.nio.charset.StandardCharsets.US_ASCII
import java.time.{Instant, LocalDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter

import scala.util.Try

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.Fixtures.micros
import io.sparkreplicate.codec.{ChangeTimestamp, ChangeTimestampParser}

class ChangeTimestampSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  /**
   * The text parsed alone in its array, and followed by digits, which the parser must not take
   * (its fraction is read a word at a time where the array holds one): the same value or error.
   */
  private def parse(s: String): Long = {
    def at(bytes: Array[Byte]) = Try(ChangeTimestamp.parseMicros(bytes, 0, s.length))
    val alone = at(s.getBytes(US_ASCII))
    val followed = at((s + "987654321").getBytes(US_ASCII))
    assert(alone.toOption == followed.toOption, s)
    alone.get
  }

  /** What java.time says: the local date-time read as UTC, in microseconds. */
  private def expected(iso: String): Long = micros(LocalDateTime.parse(iso).toInstant(ZoneOffset.UTC))

  test("Replicate's header format with six fraction digits") {
    assert(parse("2023-03-21 14:34:21.123456") == expected("2023-03-21T14:34:21.123456"))
    assert(parse("2023-03-21 14:34:21.123456") == 1679409261123456L)
  }

  test("a T separator and a trailing Z are accepted") {
    val want = expected("2023-03-21T14:34:21.123456")
    assert(parse("2023-03-21T14:34:21.123456") == want)
    assert(parse("2023-03-21 14:34:21.123456Z") == want)
    assert(parse("2023-03-21T14:34:21.123456Z") == want)
    assert(parse("2023-03-21T14:34:21Z") == expected("2023-03-21T14:34:21"))
  }

  test("0, 3, 6 and 9 fraction digits; beyond microseconds is truncated") {
    assert(parse("2023-03-21 14:34:21") == expected("2023-03-21T14:34:21"))
    assert(parse("2023-03-21 14:34:21.123") == expected("2023-03-21T14:34:21.123"))
    assert(parse("2023-03-21 14:34:21.000123") == expected("2023-03-21T14:34:21.000123"))
    assert(parse("2023-03-21 14:34:21.123456789") == expected("2023-03-21T14:34:21.123456"))
    assert(parse("2023-03-21 14:34:21.5") == expected("2023-03-21T14:34:21.5"))
  }

  test("leap days, the epoch and dates before 1970") {
    assert(parse("2024-02-29 23:59:59.999999") == expected("2024-02-29T23:59:59.999999"))
    assert(parse("2000-02-29 00:00:00") == expected("2000-02-29T00:00:00"))
    assert(parse("1970-01-01 00:00:00") == 0L)
    assert(parse("1969-12-31 23:59:59.999999") == -1L)
    assert(parse("1900-03-01 12:00:00.5") == expected("1900-03-01T12:00:00.5"))
    assert(parse("0001-01-01 00:00:00") == expected("0001-01-01T00:00:00"))
    assert(parse("9999-12-31 23:59:59.999999") == expected("9999-12-31T23:59:59.999999"))
  }

  test("a timestamp inside a larger buffer is read from its slice only") {
    val bytes = "xx2023-03-21 14:34:21.123yy".getBytes(US_ASCII)
    assert(ChangeTimestamp.parseMicros(bytes, 2, bytes.length - 4) == expected("2023-03-21T14:34:21.123"))
  }

  test("malformed strings are BadValue") {
    val bad = Seq("", "2023-03-21", "2023-03-21 14:34", "2023-03-21 14:34:2", "2023/03/21 14:34:21",
      "2023-03-21X14:34:21", "2023-03-21 14:34:21,123", "2023-03-21 14:34:21.", "2023-03-21 14:34:21.Z",
      "2023-03-21 14:34:21.1234567890", "2023-03-21 14:34:21.12a", "2023-03-21 14:34:21ZZ",
      " 2023-03-21 14:34:21", "2023-03-21 14:34:21 ", "abcd-03-21 14:34:21", "2023-13-01 00:00:00",
      "2023-00-10 00:00:00", "2023-02-29 00:00:00", "1900-02-29 00:00:00", "2023-04-31 00:00:00",
      "2023-03-00 00:00:00", "2023-03-21 24:00:00", "2023-03-21 14:60:00", "2023-03-21 14:34:60",
      "+2023-03-21 14:34:21", "-023-03-21 14:34:21", "2023-03-21 14:34:21+01:00")
    for (s <- bad) {
      val e = intercept[MalformedMessageException](parse(s))
      assert(e.errorId == ErrorId.BadValue, s)
    }
  }

  private val instants: Gen[Instant] = Gen.choose(
    LocalDateTime.parse("0001-01-01T00:00:00").toEpochSecond(ZoneOffset.UTC),
    LocalDateTime.parse("9999-12-31T23:59:59").toEpochSecond(ZoneOffset.UTC)
  ).flatMap(s => Gen.choose(0, 999999999).map(n => Instant.ofEpochSecond(s, n.toLong)))

  private val dateTime = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC)

  test("property: random instants 0001..9999 with 0..9 fraction digits agree with java.time") {
    forAll(instants, Gen.choose(0, 9), Gen.oneOf(" ", "T"), Gen.oneOf("", "Z"), minSuccessful(2000)) {
      (instant, digits, separator, zone) =>
        val fraction = f"${instant.getNano}%09d".take(digits)
        val text = dateTime.format(instant).replace(" ", separator) + (if (digits > 0) "." + fraction else "") + zone
        val nanos = if (digits == 0) 0L else fraction.padTo(9, '0').toLong
        val want = micros(Instant.ofEpochSecond(instant.getEpochSecond, nanos))
        assert(parse(text) == want, text)
    }
  }

  test("property: arbitrary short ASCII strings either parse or are BadValue, nothing else") {
    val chars = Gen.frequency(5 -> Gen.oneOf("0123456789-: T.Z"), 1 -> Gen.choose(' ', '~'))
    val template = "2023-03-21 14:34:21.123456Z"
    val mutated = for {
      n <- Gen.choose(0, 3)
      edits <- Gen.listOfN(n, Gen.zip(Gen.choose(0, template.length - 1), chars))
      cut <- Gen.choose(0, template.length)
    } yield edits.foldLeft(template) { case (s, (i, c)) => s.updated(i, c) }.take(cut)
    forAll(Gen.oneOf(mutated, Gen.stringOf(chars)), minSuccessful(2000)) { s =>
      try parse(s) catch {
        case e: MalformedMessageException => assert(e.errorId == ErrorId.BadValue, s)
      }
    }
  }

  /** What one parser of a stream gives for each text in turn: its value, or None when it is BadValue. */
  private def parsedInTurn(texts: Seq[String]): Seq[Option[Long]] = {
    val parser = new ChangeTimestampParser
    texts.map { t =>
      val bytes = t.getBytes(US_ASCII)
      try Some(parser.parseMicros(bytes, 0, bytes.length)) catch {
        case e: MalformedMessageException => assert(e.errorId == ErrorId.BadValue, t); None
      }
    }
  }

  private def parsedAlone(text: String): Option[Long] =
    try Some(parse(text)) catch { case _: MalformedMessageException => None }

  test("a stream's parser remembers the last minute, and gives what each text gives alone") {
    // Bad seconds right after their minute (the remembered one), then minutes that differ in one word or the other.
    val texts = Seq("2023-03-21 14:34:21.5", "2023-03-21 14:34:59.999999", "2023-03-21 14:34:00",
      "2023-03-21 14:34:60", "2023-03-21 14:34:21.", "2023-03-21 14:34:7", "2023-03-21T14:34:07Z",
      "2023-03-21 14:35:07", "2023-03-21 14:34:07", "2023-03-22 14:34:07", "2023-03-21 14:34", "2023-03-21 14:34:08")
    assert(parsedInTurn(texts) == texts.map(parsedAlone))
    assert(parsedInTurn(texts).count(_.isEmpty) == 4)
  }

  test("property: streams of timestamps sharing their minutes, some seconds mutated, agree with parsing alone") {
    val minute = Gen.oneOf("2023-03-21 14:34", "2023-03-21 14:35", "2023-03-21T14:34", "1969-12-31 23:59")
    val seconds = Gen.frequency(
      5 -> Gen.zip(Gen.choose(0, 59), Gen.choose(0, 9), Gen.oneOf("", "Z")).map { case (ss, digits, zone) =>
        f":$ss%02d" + (if (digits > 0) "." + "123456789".take(digits) else "") + zone },
      1 -> Gen.stringOf(Gen.oneOf(":0123456789.Z6x")).map(_.take(12)))
    forAll(Gen.listOf(Gen.zip(minute, seconds)), minSuccessful(500)) { pairs =>
      val texts = pairs.map { case (m, s) => m + s }
      assert(parsedInTurn(texts) == texts.map(parsedAlone), texts)
    }
  }
}
