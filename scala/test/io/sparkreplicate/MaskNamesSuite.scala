package io.sparkreplicate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeArrayData, UnsafeProjection}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.Fixtures.{hex, unhex}
import io.sparkreplicate.catalyst.MaskNames
import io.sparkreplicate.codec.ChangeMask

class MaskNamesSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  private val columns = (1 to 30).map(i => s"COL_$i")
  private def names(data: org.apache.spark.sql.catalyst.util.ArrayData): Seq[String] =
    (0 until data.numElements()).map(data.getUTF8String(_).toString)

  /** Looks the mask up as the reader does, in place inside a message's bytes. */
  private implicit class Lookup(cache: MaskNames) {
    def apply(mask: Array[Byte]): org.apache.spark.sql.catalyst.util.ArrayData = {
      val message = Array[Byte](7, -1) ++ mask ++ Array[Byte](-1, 3)
      cache(message, 2, mask.length)
    }
  }

  test("the names of the set bits, in ordinal order, as an UnsafeArrayData") {
    val cache = new MaskNames(columns.map(UTF8String.fromString).toArray)
    val a = cache(unhex("00000005"))
    assert(a.isInstanceOf[UnsafeArrayData])
    assert(names(a) == Seq("COL_1", "COL_3"))
    assert(names(cache(unhex("20000000"))) == Seq("COL_30"))
    assert(names(cache(unhex(""))).isEmpty)
  }

  /** The mask's array once it is cached: the second lookup caches it. */
  private def cached(cache: MaskNames, mask: String) = { cache(unhex(mask)); cache(unhex(mask)) }

  test("a mask seen once is built in the one scratch array; seen again, it is cached") {
    val cache = new MaskNames(columns.map(UTF8String.fromString).toArray)
    val once = cache(unhex("00000005"))
    assert(names(once) == Seq("COL_1", "COL_3"))
    assert(cache(unhex("00000003")) eq once)
    assert(names(once) == Seq("COL_1", "COL_2"))
    val again = cache(unhex("00000005"))
    assert(again ne once)
    assert(names(again) == Seq("COL_1", "COL_3"))
    assert(cache(unhex("00000005")) eq again)
  }

  test("an equal mask gets the same array, even from another array or after the first was changed") {
    val cache = new MaskNames(columns.map(UTF8String.fromString).toArray)
    val mask = unhex("0000000B")
    val first = cached(cache, "0000000B")
    assert(cache(mask) eq first)
    mask(3) = 1 // the caller reusing its array must not change what the cache holds
    assert(names(cache(mask)) == Seq("COL_1"))
    assert(names(cache(unhex("0000000B"))) == Seq("COL_1", "COL_2", "COL_4"))
    // Extra leading zero bytes do not change the mask's value: the same entry.
    assert(cache(unhex("000000000B")) eq first)
    assert(names(cache(unhex("00000000000000000000000B"))) == Seq("COL_1", "COL_2", "COL_4"))
  }

  test("bits past the last column are ignored: the entry of the mask without them") {
    val cache = new MaskNames((1 to 26).map(i => s"COL_$i").map(UTF8String.fromString).toArray)
    // A real UPDATE over 26 columns: the change mask's only bit is ordinal 27.
    assert(names(cache(unhex("04000000"))).isEmpty)
    assert(cache(unhex("04000000")) eq cached(cache, "00"))
    assert(names(cache(unhex("07000043"))) == Seq("COL_1", "COL_2", "COL_7", "COL_25", "COL_26"))
    assert(cache(unhex("FF" * 12 + "03000043")) eq cached(cache, "03000043"))
  }

  for (columnCount <- Seq(26, 30, 64, 65, 130)) {
    test(s"property: any bytes as a mask over $columnCount columns name the columns ChangeMask.ordinals gives") {
      val cache = new MaskNames((1 to columnCount).map(i => UTF8String.fromString(s"COL_$i")).toArray)
      forAll(Gen.listOf(Gen.choose(0, 255)).map(_.map(_.toByte).toArray), minSuccessful(300)) { mask =>
        assert(names(cache(mask)) == ChangeMask.ordinals(mask, columnCount).map(i => s"COL_$i").toSeq, hex(mask))
      }
    }
  }

  for (columnCount <- Seq(30, 64, 65, 130)) {
    test(s"many distinct masks over $columnCount columns (more than the cache holds, so slots are shared): " +
      "the bytes Spark's own writer makes") {
      val columns = (1 to columnCount).map(i => s"COL_$i")
      val cache = new MaskNames(columns.map(UTF8String.fromString).toArray)
      val toUnsafe = UnsafeProjection.create(Array[DataType](ArrayType(StringType, containsNull = false)))
      def spark(mask: Array[Byte]) = toUnsafe(InternalRow(new GenericArrayData(
        ChangeMask.ordinals(mask, columnCount).map(i => UTF8String.fromString(columns(i - 1)): Any)))).getArray(0).copy()
      val masks = for {
        ordinals <- Gen.listOf(Gen.choose(1, columnCount))
        leadingZeros <- Gen.frequency(4 -> Gen.const(0), 1 -> Gen.choose(1, 9))
      } yield new Array[Byte](leadingZeros) ++ ChangeMask.encode(ordinals, columnCount)
      forAll(Gen.listOfN(3000, masks), minSuccessful(5)) { batch =>
        for (mask <- batch ++ batch.reverse) assert(cache(mask) == spark(mask), hex(mask))
      }
    }
  }
}
