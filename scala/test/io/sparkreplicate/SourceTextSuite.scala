package io.sparkreplicate

import java.math.{BigDecimal => JBigDecimal, BigInteger}
import java.nio.charset.StandardCharsets.UTF_8
import java.time.LocalDate

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.codec.{ByteWords, SourceText}

/**
 * The parsers of Replicate's text forms (logical data types off): values formatted as a source
 * database writes them parse back equal; anything else is a malformed value naming the column.
 * Every text is parsed from the middle of a larger buffer, as the decoder hands it over.
 */
class SourceTextSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 500)

  private val Column = "COL"

  /** Calls `parse(buffer, offset, length, column)` on `text` surrounded by other bytes. */
  private def parsed[T](text: String)(parse: (Array[Byte], Int, Int, String) => T): T = {
    val bytes = text.getBytes(UTF_8)
    val buffer = "9:.".getBytes(UTF_8) ++ bytes ++ "1-0".getBytes(UTF_8)
    parse(buffer, 3, bytes.length, Column)
  }

  private def rejected[T](text: String)(parse: (Array[Byte], Int, Int, String) => T): Unit = {
    val e = intercept[MalformedMessageException](parsed(text)(parse))
    assert(e.errorId == ErrorId.BadValue, text)
    assert(e.getMessage.contains(s"column `$Column`"), e.getMessage)
    assert(e.getMessage.contains(text.take(64)), e.getMessage)
  }

  test("integers: every Int and Long formatted in decimal, with or without a plus sign") {
    forAll { (i: Int) =>
      assert(parsed(i.toString)(SourceText.parseInt) == i)
      if (i >= 0) assert(parsed(s"+$i")(SourceText.parseInt) == i)
    }
    forAll { (l: Long) => assert(parsed(l.toString)(SourceText.parseLong) == l) }
    for (l <- Seq(Long.MinValue, Long.MaxValue, 0L, -1L)) assert(parsed(l.toString)(SourceText.parseLong) == l)
    assert(parsed("007")(SourceText.parseInt) == 7)
  }

  test("integers out of range are malformed, not wrapped") {
    val beyondInt = Gen.oneOf(Gen.choose(Int.MaxValue.toLong + 1, Long.MaxValue), Gen.choose(Long.MinValue, Int.MinValue.toLong - 1))
    forAll(beyondInt) { l => rejected(l.toString)(SourceText.parseInt) }
    val beyondLong = Gen.choose(BigInt(1), BigInt(10).pow(30)).map(k => Seq(BigInt(Long.MaxValue) + k, BigInt(Long.MinValue) - k))
    forAll(beyondLong) { values => values.foreach(v => rejected(v.toString)(SourceText.parseLong)) }
  }

  test("integers: anything but an optional sign and digits is malformed") {
    for (text <- Seq("", "-", "+", "1.0", "1e3", " 1", "1 ", "--1", "0x1F", "١٢", "12a", "1_000"))
      rejected(text)(SourceText.parseLong)
    val noDigit = Gen.asciiPrintableChar.suchThat(c => !c.isDigit)
    forAll(Gen.posNum[Long], noDigit, Gen.choose(0, 18)) { (l, c, at) =>
      val digits = l.toString
      val i = math.min(at, digits.length)
      val text = digits.take(i) + c + digits.drop(i)
      whenever(!(i == 0 && (c == '-' || c == '+'))) { rejected(text)(SourceText.parseLong) }
    }
  }

  private val decimals: Gen[JBigDecimal] = for {
    digits <- Gen.choose(1, 40)
    unscaled <- Gen.listOfN(digits, Gen.numChar).map(d => new BigInteger(d.mkString))
    negative <- Gen.oneOf(true, false)
    scale <- Gen.choose(-5, 20)
  } yield new JBigDecimal(if (negative) unscaled.negate() else unscaled, scale)

  test("decimals: plain and exponent forms parse to the same value, exactly at the scale asked for") {
    forAll(decimals, Gen.choose(0, 5)) { (value, extra) =>
      for (text <- Seq(value.toPlainString, value.toString)) {
        val at = parsed(text)(SourceText.parseDecimal(_, _, _, value.scale, _))
        assert(at == value, text)
        // A larger scale only appends zeros.
        val wider = parsed(text)(SourceText.parseDecimal(_, _, _, value.scale + extra, _))
        assert(wider.scale == value.scale + extra && wider.compareTo(value) == 0, text)
      }
    }
  }

  test("decimals: a digit beyond the scale would need rounding, so it is malformed") {
    forAll(decimals, Gen.choose(1, 9)) { (value, digit) =>
      val finer = value.add(new JBigDecimal(BigInteger.valueOf(digit.toLong), value.scale + 1))
      rejected(finer.toPlainString)(SourceText.parseDecimal(_, _, _, value.scale, _))
    }
    assert(parsed("12.500")(SourceText.parseDecimal(_, _, _, 1, _)) == new JBigDecimal("12.5"))
    assert(parsed("12300")(SourceText.parseDecimal(_, _, _, -2, _)) == new JBigDecimal("1.23E+4"))
    rejected("12350")(SourceText.parseDecimal(_, _, _, -2, _))
    for (text <- Seq("", ".", "-", "1,5", "1.2.3", "1-2", "NaN", "Infinity", "0x10", "1e", "e5", "12 ", "€1"))
      rejected(text)(SourceText.parseDecimal(_, _, _, 2, _))
    // Exponents that would need a billion digits are refused at once, not computed.
    for (text <- Seq("1E+999999999", "1E-999999999", "-5e2147483647")) rejected(text)(SourceText.parseDecimal(_, _, _, 2, _))
  }

  test("plain decimals: the unscaled long at the scale, or NotPlain where BigDecimal must decide") {
    def plain(text: String, scale: Int) = parsed(text)((b, at, n, _) => SourceText.plainUnscaled(b, at, n, scale))
    val cases = Seq(("0", 2) -> 0L, ("-0.00", 2) -> 0L, ("+12.5", 2) -> 1250L, ("-12.50", 2) -> -1250L,
      ("007.10", 1) -> 71L, (".5", 1) -> 5L, ("5.", 0) -> 5L, ("-.05", 2) -> -5L, ("0.000000000000000001", 18) -> 1L,
      ("0000000000000000000000000000000001", 0) -> 1L, ("99999999999999999.9", 1) -> 999999999999999999L,
      ("12.300000", 1) -> 123L, ("123456789012345678", 0) -> 123456789012345678L)
    for (((text, scale), unscaled) <- cases) assert(plain(text, scale) == unscaled, text)
    val notPlain = Seq("1234567890123456789" -> 0, "99999999999999999.9" -> 2, "1" -> 18, "1.25" -> 1, "1e2" -> 0,
      "" -> 0, "." -> 2, "-" -> 0, "+." -> 1, "1.2.3" -> 2, "--1" -> 0, "1-" -> 0, " 1" -> 0, "1 " -> 0, "1" -> 19, "1" -> -1)
    for ((text, scale) <- notPlain) assert(plain(text, scale) == SourceText.NotPlain, s"`$text` at scale $scale")
    // Whatever it takes, it takes at BigDecimal's value.
    forAll(decimals.map(_.toPlainString), Gen.choose(0, 18)) { (text, scale) =>
      val unscaled = plain(text, scale)
      if (unscaled != SourceText.NotPlain) {
        val reference = parsed(text)(SourceText.parseDecimal(_, _, _, scale, _))
        assert(reference.unscaledValue == BigInteger.valueOf(unscaled), text)
      }
    }
  }

  test("digit words: the count of leading ASCII digits and their value, for any bytes after them") {
    val bytes = Gen.frequency(4 -> Gen.choose('0'.toByte, '9'.toByte), 1 -> Gen.choose(Byte.MinValue, Byte.MaxValue))
    forAll(Gen.listOfN(8, bytes)) { word =>
      val array = word.toArray
      val digits = array.indexWhere(b => b < '0' || b > '9') match { case -1 => 8; case n => n }
      val packed = ByteWords.littleEndianLong(array, 0)
      assert(ByteWords.leadingDigits(packed) == digits, array.mkString(","))
      for (n <- 1 to digits) {
        assert(ByteWords.digitsValue(packed, n) == new String(array, 0, n, UTF_8).toLong, array.mkString(","))
      }
    }
    // Every byte value in every position, behind digits and before them.
    for (position <- 0 until 8; b <- Byte.MinValue to Byte.MaxValue) {
      val array = Array.fill[Byte](8)('7')
      array(position) = b.toByte
      val isDigit = b >= '0' && b <= '9'
      assert(ByteWords.leadingDigits(ByteWords.littleEndianLong(array, 0)) == (if (isDigit) 8 else position), s"$b at $position")
    }
  }

  test("plain decimals read a word at a time never take the digits after their text") {
    for (text <- Seq("1", "12.5", "1234567", "12345678", "123456789", "-1234567.89", "0012345678901234.5", "7.")) {
      val bytes = text.getBytes(UTF_8)
      for (offset <- 0 to 9) {
        val buffer = Array.fill[Byte](offset)('4') ++ bytes ++ Array.fill[Byte](16)('3')
        val expected = new JBigDecimal(text).setScale(2).unscaledValue.longValueExact
        assert(SourceText.plainUnscaled(buffer, offset, bytes.length, 2) == expected, s"$text at $offset")
      }
    }
  }

  test("floating point: every finite Double and Float round trips through its text") {
    forAll { (d: Double) =>
      whenever(!d.isNaN && !d.isInfinite) { assert(parsed(d.toString)(SourceText.parseDouble) == d) }
    }
    forAll { (f: Float) =>
      whenever(!f.isNaN && !f.isInfinite) { assert(parsed(f.toString)(SourceText.parseFloat) == f) }
    }
    assert(parsed("NaN")(SourceText.parseDouble).isNaN)
    assert(parsed("-Infinity")(SourceText.parseDouble) == Double.NegativeInfinity)
    assert(parsed("1e-50")(SourceText.parseFloat) == 0f)
    for (text <- Seq("", "1f", "1.5d", "0x1p3", "inf", "1,5", "e5", "1e", "1.2.3", "--1", " 1"))
      rejected(text)(SourceText.parseDouble)
    rejected("3.5e38")(SourceText.parseFloat) // beyond Float.MaxValue
  }

  test("booleans: true/false in any case, 1 and 0") {
    for ((text, value) <- Seq("true" -> true, "TRUE" -> true, "False" -> false, "1" -> true, "0" -> false))
      assert(parsed(text)(SourceText.parseBoolean) == value, text)
    for (text <- Seq("", "yes", "t", "2", "true ", "-1")) rejected(text)(SourceText.parseBoolean)
  }

  test("dates: every day from 0001-01-01 to 9999-12-31, proleptic Gregorian, as days since 1970") {
    val days = Gen.choose(LocalDate.of(1, 1, 1).toEpochDay, LocalDate.of(9999, 12, 31).toEpochDay)
    forAll(days) { day => assert(parsed(LocalDate.ofEpochDay(day).toString)(SourceText.parseDate) == day) }
    assert(parsed("1969-12-31")(SourceText.parseDate) == -1)
    assert(parsed("1582-10-04")(SourceText.parseDate) + 1 == parsed("1582-10-05")(SourceText.parseDate))
    for (text <- Seq("", "2023-02-29", "2024-02-30", "2023-13-01", "2023-00-10", "2023-1-01", "20230101",
        "2023/01/01", "2023-01-01 ", "+2023-01-01", "2023-01-0a"))
      rejected(text)(SourceText.parseDate)
  }

  private val MicrosPerDay = io.sparkreplicate.codec.CivilTime.MicrosPerDay

  test("times: HH:mm:ss with 0 to 9 fraction digits, beyond microseconds truncated") {
    forAll(Gen.choose(0L, MicrosPerDay * 1000 - 1), Gen.choose(0, 9)) { (nanosOfDay, digits) =>
      val seconds = nanosOfDay / 1_000_000_000L
      val nanos = nanosOfDay % 1_000_000_000L
      val fraction = f"$nanos%09d".take(digits)
      val text = f"${seconds / 3600}%02d:${seconds / 60 % 60}%02d:${seconds % 60}%02d" +
        (if (digits > 0) "." + fraction else "")
      val micros = if (digits == 0) 0L else (fraction + "000000000").take(6).toLong
      assert(parsed(text)(SourceText.parseTime) == seconds * 1_000_000L + micros, text)
    }
    for (text <- Seq("", "24:00:00", "23:60:00", "23:59:60", "1:02:03", "01:02", "01:02:03.", "01:02:03.1234567890",
        "01:02:03,5", "01-02-03", "01:02:03 ", "T01:02:03"))
      rejected(text)(SourceText.parseTime)
  }

  test("times are written HH:mm:ss.ffffff, which parses back to the same time") {
    forAll(Gen.choose(0L, MicrosPerDay - 1)) { micros =>
      val text = SourceText.formatTime(micros, Column)
      assert(text.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{6}"), text)
      assert(parsed(text)(SourceText.parseTime) == micros)
    }
    assert(SourceText.formatTime(0, Column) == "00:00:00.000000")
    assert(SourceText.formatTime(MicrosPerDay - 1, Column) == "23:59:59.999999")
    for (micros <- Seq(-1L, MicrosPerDay)) {
      val e = intercept[MalformedMessageException](SourceText.formatTime(micros, Column))
      assert(e.errorId == ErrorId.BadValue && e.getMessage.contains(s"`$Column`"))
    }
  }

  test("binary: hexadecimal in either case") {
    forAll { (bytes: Array[Byte]) =>
      val hex = bytes.map(b => f"$b%02X").mkString
      assert(parsed(hex)(SourceText.parseHex).sameElements(bytes))
      assert(parsed(hex.toLowerCase)(SourceText.parseHex).sameElements(bytes))
    }
    for (text <- Seq("0", "ABC", "0G", "0x00", "00 ", "é0")) rejected(text)(SourceText.parseHex)
  }
}
