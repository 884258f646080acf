package io.sparkreplicate

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.Fixtures.{hex, unhex}
import io.sparkreplicate.codec.ChangeMask

class ChangeMaskSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  private def ordinals(hexMask: String, columns: Int): Seq[Int] = ChangeMask.ordinals(unhex(hexMask), columns).toSeq

  test("big-endian masks: 008080 over 16 columns is 8 and 16; 05 is 1 and 3; 0B is 1, 2 and 4") {
    assert(ordinals("008080", 16) == Seq(8, 16))
    assert(ordinals("05", 3) == Seq(1, 3))
    assert(ordinals("0B", 4) == Seq(1, 2, 4))
  }

  test("extra leading zero bytes change nothing") {
    assert(ordinals("0000000005", 3) == Seq(1, 3))
    assert(ordinals("00000B", 8) == Seq(1, 2, 4))
    assert(ordinals("00", 1).isEmpty)
    assert(ordinals("", 5).isEmpty)
  }

  test("tables of 9, 17, 65 and 130 columns: first, last and every column") {
    for (n <- Seq(9, 17, 65, 130)) {
      val bytes = (n + 7) / 8
      val last = ChangeMask.encode(Seq(n), n)
      assert(last.length == bytes, s"$n columns")
      // The last column is the most significant bit in use, in the first byte.
      assert((last(0) & 0xff) == 1 << ((n - 1) % 8), s"$n columns: ${hex(last)}")
      assert(ChangeMask.ordinals(last, n).toSeq == Seq(n))
      val first = ChangeMask.encode(Seq(1), n)
      assert(first.last == 1 && first.init.forall(_ == 0), s"$n columns: ${hex(first)}")
      assert(ChangeMask.ordinals(first, n).toSeq == Seq(1))
      val all = ChangeMask.encode(1 to n, n)
      assert(ChangeMask.ordinals(all, n).toSeq == (1 to n))
    }
    // Hand-written masks, independent of encode: 9 columns, ordinals 1 and 9.
    assert(ordinals("0101", 9) == Seq(1, 9))
    // 17 columns, ordinal 17 alone.
    assert(ordinals("010000", 17) == Seq(17))
    // 65 columns: ordinal 65 and ordinal 64.
    assert(ordinals("01" + "80" + "00" * 7, 65) == Seq(64, 65))
    // 130 columns: ordinal 130 is bit 1 of the first of 17 bytes.
    assert(ordinals("02" + "00" * 16, 130) == Seq(130))
  }

  test("a set bit past the table's last column is ignored, never malformed") {
    assert(ordinals("0100", 8).isEmpty)
    assert(ordinals("0B", 3) == Seq(1, 2))
    assert(ordinals("80" + "00" * 15 + "01", 130) == Seq(1))
    assert(!ChangeMask.setsBitsBeyond(unhex("0080"), 0, 2, 8))
    assert(ChangeMask.setsBitsBeyond(unhex("0100"), 0, 2, 8))
    assert(ChangeMask.setsBitsBeyond(unhex("0B"), 0, 1, 3))
  }

  // Masks of real Replicate messages (Oracle sources), with the column counts of their tables.
  test("real UPDATE change masks whose only bit is past the last column name no column") {
    assert(ordinals("04000000", 26).isEmpty)
    assert(ChangeMask.setsBitsBeyond(unhex("04000000"), 0, 4, 26))
    assert(ordinals("2000000000", 37).isEmpty)
    assert(ChangeMask.setsBitsBeyond(unhex("2000000000"), 0, 5, 37))
  }

  test("real column masks beside them: 01000043 over 26 columns, 0000000015 over 37") {
    assert(ordinals("01000043", 26) == Seq(1, 2, 7, 25))
    assert(!ChangeMask.setsBitsBeyond(unhex("01000043"), 0, 4, 26))
    assert(ordinals("0000000015", 37) == Seq(1, 3, 5))
    assert(!ChangeMask.setsBitsBeyond(unhex("0000000015"), 0, 5, 37))
  }

  test("a real INSERT over 117 columns whose 15-byte masks have holes") {
    val mask = "1F903C3000003FFFFFFFFFFFFFFFFF"
    assert(ordinals(mask, 117) == (1 to 70) ++ Seq(93, 94) ++ (99 to 102) ++ Seq(109) ++ (112 to 117))
    assert(!ChangeMask.setsBitsBeyond(unhex(mask), 0, 15, 117))
  }

  test("a no-op UPDATE's change mask 00 names no column") {
    assert(ordinals("00", 26).isEmpty)
    assert(!ChangeMask.setsBitsBeyond(unhex("00"), 0, 1, 26))
  }

  test("hex prints the mask as the JSON message format does") {
    assert(ChangeMask.hex(unhex("008080")) == "008080")
    assert(ChangeMask.hex(ChangeMask.encode(Seq(1, 2, 4), 4)) == "0B")
  }

  private val subsets: Gen[(Int, Seq[Int])] = for {
    columns <- Gen.choose(1, 300)
    chosen <- Gen.listOf(Gen.choose(1, columns))
  } yield (columns, chosen.distinct.sorted)

  test("property: encode then ordinals round-trips, with or without extra leading zero bytes") {
    forAll(subsets, Gen.choose(0, 3), minSuccessful(500)) { case ((columns, chosen), padding) =>
      val mask = ChangeMask.encode(chosen, columns)
      assert(mask.length == (columns + 7) / 8)
      assert(ChangeMask.ordinals(mask, columns).toSeq == chosen)
      assert(ChangeMask.ordinals(new Array[Byte](padding) ++ mask, columns).toSeq == chosen)
    }
  }

  test("property: ordinals agrees with reading the mask as a big-endian unsigned integer, up to the last column") {
    forAll(Gen.listOf(Gen.choose(0, 255)).map(_.map(_.toByte).toArray), Gen.choose(0, 40), minSuccessful(500)) {
      (mask, columns) =>
        val value = BigInt(1, mask)
        assert(ChangeMask.ordinals(mask, columns).toSeq == (0 until columns).filter(value.testBit).map(_ + 1))
        // In place inside a message: the bytes around the mask are not looked at.
        val message = Array[Byte](-1) ++ mask ++ Array[Byte](-1)
        assert(ChangeMask.setsBitsBeyond(message, 1, mask.length, columns) == (value.bitLength > columns))
    }
  }
}
