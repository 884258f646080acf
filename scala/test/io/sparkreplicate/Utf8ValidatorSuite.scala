package io.sparkreplicate

import java.nio.{ByteBuffer, CharBuffer}
import java.nio.charset.CodingErrorAction
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.unsafe.types.UTF8String
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.Fixtures.hex
import io.sparkreplicate.codec.Utf8Validator

/**
 * The validator against the three references it must agree with: Java's UTF-8 decoder with
 * REPORT, the round trip through `new String` (which replaces what is ill-formed), and Spark's
 * `UTF8String.isValid`, which the reader used before.
 */
class Utf8ValidatorSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 20000)

  // One decoder, asked for its result rather than an exception: most of the exhaustive cases are
  // ill-formed, and an exception per case made that test several times slower.
  private val jdk = UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
    .onUnmappableCharacter(CodingErrorAction.REPORT)

  private def jdkAccepts(bytes: Array[Byte]): Boolean = {
    val out = CharBuffer.allocate(bytes.length)
    jdk.reset()
    !jdk.decode(ByteBuffer.wrap(bytes), out, true).isError && !jdk.flush(out).isError
  }

  private def roundTrips(bytes: Array[Byte]): Boolean = java.util.Arrays.equals(new String(bytes, UTF_8).getBytes(UTF_8), bytes)

  /** Every reference, then the validator on the bytes alone and inside a larger, invalid array. */
  // The messages are built only on a failure: an assert's clue is evaluated for every case.
  private def check(bytes: Array[Byte]): Unit = {
    val expected = jdkAccepts(bytes)
    if (roundTrips(bytes) != expected) fail(s"the references disagree on ${hex(bytes)}")
    if (UTF8String.fromBytes(bytes).isValid != expected) fail(s"UTF8String.isValid disagrees on ${hex(bytes)}")
    if (Utf8Validator.isValid(bytes, 0, bytes.length) != expected) fail(s"${hex(bytes)}: expected valid = $expected")
    // Ill-formed bytes around the slice must not be looked at.
    val framed = Array[Byte](-1, -128) ++ bytes ++ Array[Byte](-32, -1)
    if (Utf8Validator.isValid(framed, 2, bytes.length) != expected) fail(s"${hex(bytes)} inside ${hex(framed)}")
  }

  private val ascii = Gen.stringOf(Gen.choose(0.toChar, 127.toChar)).map(_.getBytes(UTF_8))
  private val codePoint = Gen.frequency(
    5 -> Gen.choose(0, 0x7f), 2 -> Gen.choose(0x80, 0x7ff), 2 -> Gen.choose(0x800, 0xffff).filterNot(cp => Character.isSurrogate(cp.toChar)),
    1 -> Gen.choose(0x10000, 0x10ffff))
  private val wellFormed = Gen.listOf(codePoint).map(cps => new String(cps.toArray, 0, cps.size).getBytes(UTF_8))
  private val anyByte = Gen.choose(-128, 127).map(_.toByte)
  /** Bytes that sit on the boundaries of table 3-7. */
  private val edgeByte = Gen.oneOf(0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed,
    0xee, 0xef, 0xf0, 0xf4, 0xf5, 0xff).map(_.toByte)

  /** A well-formed text with one byte changed, inserted or removed, or cut short. */
  private val damaged = for {
    bytes <- wellFormed.filter(_.nonEmpty)
    at <- Gen.choose(0, bytes.length - 1)
    b <- Gen.oneOf(anyByte, edgeByte)
    how <- Gen.choose(0, 3)
  } yield how match {
    case 0 => bytes.updated(at, b)
    case 1 => (bytes.take(at) :+ b) ++ bytes.drop(at)
    case 2 => bytes.take(at) ++ bytes.drop(at + 1)
    case _ => bytes.take(at)
  }

  test("random bytes, well-formed and damaged text, edge bytes between ASCII runs") {
    val mixed = Gen.listOf(Gen.oneOf(ascii, wellFormed, Gen.listOf(edgeByte).map(_.toArray))).map(_.toArray.flatten)
    forAll(Gen.oneOf(Gen.listOf(anyByte).map(_.toArray), wellFormed, damaged, mixed))(check)
  }

  test("every 1- and 2-byte array; every lead and second byte with boundary third and fourth bytes") {
    for (a <- 0 to 255) {
      check(Array(a.toByte))
      for (b <- 0 to 255) check(Array(a.toByte, b.toByte))
    }
    val boundary = Seq(0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xff).map(_.toByte)
    for (a <- 0xc0 to 0xff; b <- 0 to 255; c <- boundary) {
      check(Array(a.toByte, b.toByte, c))
      for (d <- boundary) check(Array(a.toByte, b.toByte, c, d))
    }
  }

  test("named cases: overlongs, surrogates, the end of Unicode, sequences cut by the end of the slice") {
    def bytes(h: String) = h.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
    val valid = Seq("", "41", "C280", "DFBF", "E0A080", "ED9FBF", "EE8080", "EFBFBF", "F0908080", "F48FBFBF", "E282AC")
    val invalid = Seq("80", "BF", "C080", "C1BF", "C2", "C27F", "C2C0", "E080", "E09FBF", "EDA080", "EDBFBF",
      "E282", "F08FBFBF", "F4908080", "F5808080", "FF", "F0908080" + "80", "E2" + "41" + "AC")
    for (h <- valid) assert(Utf8Validator.isValid(bytes(h), 0, h.length / 2), h)
    for (h <- invalid) assert(!Utf8Validator.isValid(bytes(h), 0, h.length / 2), h)
    // The same after ASCII runs of every length around the 8-byte steps, and before more ASCII.
    for (n <- 0 to 17; h <- valid ++ invalid) check(("x" * n).getBytes(UTF_8) ++ bytes(h) ++ "tail".getBytes(UTF_8))
  }

  test("a slice outside the array is refused before anything is read") {
    val bytes = "abcdefgh".getBytes(UTF_8)
    for ((offset, length) <- Seq((-1, 2), (0, 9), (4, 5), (1, -1), (Int.MaxValue, 8)))
      intercept[IndexOutOfBoundsException](Utf8Validator.isValid(bytes, offset, length))
    // A negative length is refused even where a word of the array could be read.
    intercept[IndexOutOfBoundsException](Utf8Validator.isValid(bytes ++ bytes, 0, -1))
    assert(Utf8Validator.isValid(bytes, 8, 0))
  }

  test("asciiEnd is the first byte with its high bit set, or the range's end, wherever the range lies") {
    val bytes = Gen.listOf(Gen.frequency(12 -> Gen.choose(0, 127), 1 -> Gen.choose(128, 255)).map(_.toByte)).map(_.toArray)
    forAll(bytes, Gen.choose(0, 40), Gen.choose(0, 40)) { (array, a, b) =>
      val (from, end) = (math.min(a, b) min array.length, math.max(a, b) min array.length)
      val expected = (from until end).find(i => array(i) < 0).getOrElse(end)
      assert(Utf8Validator.asciiEnd(array, from, end) == expected, s"[$from, $end) of ${hex(array)}")
    }
    for ((from, end) <- Seq((-1, 2), (3, 2), (0, 9)))
      intercept[IndexOutOfBoundsException](Utf8Validator.asciiEnd("abcdefgh".getBytes(UTF_8), from, end))
  }
}
