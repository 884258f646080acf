package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.expressions.codegen.{UnsafeArrayWriter, UnsafeRowWriter}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.codec.ChangeMask

/**
 * The names of the columns a mask marks (`header__changed_columns`, `header__present_columns`),
 * for one table version. Masks repeat heavily (every INSERT of a version has the same column mask,
 * an UPDATE changes a few columns), so each array is built once per distinct mask content and
 * kept in a small direct-mapped cache: a repeated mask costs a hash and a comparison of a few
 * bytes. The arrays are UnsafeArrayData, which Spark's copy into its UnsafeRow takes in one
 * memory copy instead of one write per name; they are shared between rows and never modified.
 *
 * The mask must be valid for `columnNames` ([[ChangeMask.validate]]).
 */
final class MaskNames(columnNames: Array[UTF8String]) {
  import MaskNames.Capacity

  private val keys = new Array[Array[Byte]](Capacity)
  private val values = new Array[ArrayData](Capacity)
  private val rowWriter = new UnsafeRowWriter(1)
  private val arrayWriter = new UnsafeArrayWriter(rowWriter, 8)

  def apply(mask: Array[Byte]): ArrayData = {
    val i = MaskNames.index(java.util.Arrays.hashCode(mask))
    val key = keys(i)
    if (key != null && java.util.Arrays.equals(key, mask)) values(i)
    else {
      val names = build(mask)
      // A copy: the caller's array may be reused for later masks.
      keys(i) = mask.clone()
      values(i) = names
      names
    }
  }

  private def build(mask: Array[Byte]): ArrayData = {
    val ordinals = ChangeMask.ordinals(mask, columnNames.length)
    rowWriter.reset()
    val start = rowWriter.cursor()
    arrayWriter.initialize(ordinals.length)
    var j = 0
    while (j < ordinals.length) { arrayWriter.write(j, columnNames(ordinals(j) - 1)); j += 1 }
    rowWriter.setOffsetAndSizeFromPreviousCursor(0, start)
    rowWriter.getRow.getArray(0).copy()
  }
}

object MaskNames {
  /**
   * Entries per table version: about one KB each for a table of 30 columns. On profile M of the
   * benchmark every column mask and about half of the change masks hit.
   */
  private val Capacity = 512

  /** Spreads the hash's bits: masks differ mostly in their last bytes. */
  private def index(hash: Int): Int = {
    val h = hash * 0x9e3779b9
    (h ^ (h >>> 16)) & (Capacity - 1)
  }
}
