package io.sparkreplicate

import java.io.ByteArrayOutputStream

import org.apache.avro.io.{DecoderFactory, EncoderFactory}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.codec.{SliceDecoder, Utf8Validator}

class SliceDecoderSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  private def avroLongs(values: Seq[Long]): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val encoder = EncoderFactory.get.binaryEncoder(out, null)
    values.foreach(encoder.writeLong)
    encoder.flush()
    out.toByteArray
  }

  /** Every varint size from 1 to 10 bytes, and the extremes. */
  private val anyLong = Gen.oneOf(Gen.choose(Long.MinValue, Long.MaxValue), Gen.choose(-200L, 200L),
    for (bits <- Gen.choose(0, 63); v <- Gen.choose(0L, (1L << bits) - 1); negative <- Gen.oneOf(true, false))
      yield if (negative) -v - 1 else v,
    Gen.oneOf(0L, -1L, 63L, -64L, 64L, Long.MaxValue, Long.MinValue, Int.MaxValue.toLong, Int.MinValue.toLong))

  test("varints of every size read as Avro's decoder reads them, at the end of the slice or not") {
    forAll(Gen.listOf(anyLong), Gen.choose(0, 12), Gen.oneOf(-1.toByte, 0.toByte)) { (values, padding, fill) =>
      val bytes = avroLongs(values)
      // Bytes beyond the slice must not count: fill them with continuation bits, or with bytes that
      // would end a varint read past the slice.
      val framed = Array.fill[Byte](3)(-1) ++ bytes ++ Array.fill[Byte](padding)(fill)
      val in = new SliceDecoder().reset(framed, 3, bytes.length)
      val avro = DecoderFactory.get.binaryDecoder(bytes, null)
      for (v <- values) {
        val read = in.readLong()
        assert(read == v && read == avro.readLong())
      }
      assert(in.isEnd)
    }
  }

  test("a varint longer than 10 bytes or cut by the end of the slice is malformed, wherever it sits") {
    val eleven = Array.fill[Byte](10)(0x80.toByte) :+ 1.toByte
    for (padding <- 0 to 12) {
      val tooLong = intercept[MalformedMessageException](new SliceDecoder().reset(eleven ++ Array.fill[Byte](padding)(0), 0, 11).readLong())
      assert(tooLong.errorId == ErrorId.BadPayload && tooLong.getMessage.contains("longer than 10 bytes"))
      // Cut after each of its first 9 bytes, the bytes past the slice ending it there.
      for (kept <- 1 to 9) {
        val cut = Array.fill[Byte](kept)(0x80.toByte) ++ Array.fill[Byte](padding)(0)
        val truncated = intercept[MalformedMessageException](new SliceDecoder().reset(cut, 0, kept).readLong())
        assert(truncated.errorId == ErrorId.Truncated)
      }
    }
  }

  /** Strings of ASCII text, with now and then a non-ASCII, an ill-formed or a lone high byte. */
  private val textByte = Gen.frequency(20 -> Gen.choose(0, 127), 1 -> Gen.oneOf(0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0xff))
    .map(_.toByte)

  test("isUtf8 of the strings of a slice, in order, agrees with the validator on each, across resets") {
    // The bytes between strings (a branch, a length) may be anything; strings may touch and be empty.
    val spans = for {
      bytes <- Gen.listOf(textByte).map(_.toArray)
      cuts <- Gen.listOf(Gen.choose(0, bytes.length)).map(c => (c :+ 0 :+ bytes.length).sorted)
    } yield (bytes, cuts.sliding(2).collect { case Seq(a, b) => (a, b - a) }.toSeq)
    val in = new SliceDecoder()
    forAll(spans, spans) { case ((first, firstSpans), (second, secondSpans)) =>
      // One array reused for both slices, as a container block's buffer is: what isUtf8 learnt of
      // the first slice's bytes must not hold for the second's.
      val buffer = new Array[Byte](math.max(first.length, second.length) + 8)
      for ((bytes, strings) <- Seq((first, firstSpans), (second, secondSpans))) {
        System.arraycopy(bytes, 0, buffer, 2, bytes.length)
        in.reset(buffer, 2, bytes.length)
        for ((at, n) <- strings)
          assert(in.isUtf8(2 + at, n) == Utf8Validator.isValid(buffer, 2 + at, n), s"[$at, ${at + n}) of ${Fixtures.hex(bytes)}")
      }
    }
  }

  test("isUtf8 forgets the slice's bytes at a reset: a string found ASCII, then made invalid in place") {
    val bytes = "abcdefghijklmnopqrstuvwxyz".getBytes("UTF-8")
    val in = new SliceDecoder().reset(bytes, 0, bytes.length)
    assert(in.isUtf8(0, 4) && in.isUtf8(10, 4))
    bytes(11) = 0xff.toByte
    in.reset(bytes, 0, bytes.length)
    assert(in.isUtf8(0, 4) && !in.isUtf8(10, 4) && in.isUtf8(12, 4))
  }
}
