package io.sparkreplicate

import java.io.ByteArrayOutputStream

import org.apache.avro.io.{DecoderFactory, EncoderFactory}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.codec.SliceDecoder

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
    val cut = Array.fill[Byte](4)(0x80.toByte)
    for (padding <- 0 to 12) {
      val tooLong = intercept[MalformedMessageException](new SliceDecoder().reset(eleven ++ Array.fill[Byte](padding)(0), 0, 11).readLong())
      assert(tooLong.errorId == ErrorId.BadPayload && tooLong.getMessage.contains("longer than 10 bytes"))
      val truncated = intercept[MalformedMessageException](new SliceDecoder().reset(cut ++ Array.fill[Byte](padding)(0), 0, 4).readLong())
      assert(truncated.errorId == ErrorId.Truncated)
    }
  }
}
