package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods.roundNumberOfBytesToNearestWord
import org.apache.spark.unsafe.types.UTF8String

/**
 * The names of the columns a mask marks (`header__changed_columns`, `header__present_columns`),
 * for one table version. Masks repeat heavily (every INSERT of a version has the same column mask,
 * an UPDATE changes a few columns), so each array is built once per distinct mask content and
 * kept in a small direct-mapped cache: a repeated mask costs a hash and a comparison of a few
 * bytes. The arrays are UnsafeArrayData, which Spark's copy into its UnsafeRow takes in one
 * memory copy instead of one write per name; they are shared between rows and never modified.
 *
 * The mask must be valid for `columnNames` ([[io.sparkreplicate.codec.ChangeMask.validate]]).
 */
final class MaskNames(columnNames: Array[UTF8String]) {
  import MaskNames.Capacity

  private val keys = new Array[Array[Byte]](Capacity)
  private val values = new Array[ArrayData](Capacity)
  private val names = columnNames.map(_.getBytes)
  /** The 0-based columns of the mask being built. */
  private val marked = new Array[Int](columnNames.length)

  /** The names of the mask in `bytes` at `offset`. */
  def apply(bytes: Array[Byte], offset: Int, length: Int): ArrayData = {
    val end = offset + length
    var hash = 1
    var b = offset
    while (b < end) { hash = 31 * hash + bytes(b); b += 1 }
    val i = MaskNames.index(hash)
    val key = keys(i)
    if (key != null && java.util.Arrays.equals(key, 0, key.length, bytes, offset, end)) values(i)
    else {
      // A copy: the caller's bytes are reused for later messages.
      val mask = java.util.Arrays.copyOfRange(bytes, offset, end)
      val built = build(mask)
      keys(i) = mask
      values(i) = built
      built
    }
  }

  /**
   * Spark's UnsafeArrayData layout, written directly: the element count, null bits (none), one
   * (offset << 32 | length) word per element, then the names, each padded with zeros to 8 bytes.
   */
  private def build(mask: Array[Byte]): ArrayData = {
    // Bit i (from the least significant of the last byte) is column i, ascending. The bits are
    // walked here rather than by ChangeMask.ordinals, whose array per miss measured about 60 bytes
    // more allocation per message on profile M, where most change masks miss.
    var count = 0
    var dataBytes = 0
    var column = 0
    var byteIndex = mask.length - 1
    while (byteIndex >= 0) {
      val b = mask(byteIndex) & 0xff
      var bit = 0
      while (b >> bit != 0) {
        if ((b >> bit & 1) != 0) {
          marked(count) = column + bit
          dataBytes += roundNumberOfBytesToNearestWord(names(column + bit).length)
          count += 1
        }
        bit += 1
      }
      column += 8
      byteIndex -= 1
    }
    val header = UnsafeArrayData.calculateHeaderPortionInBytes(count)
    val size = header + 8 * count + dataBytes
    val bytes = new Array[Byte](size) // zeros: no null bits set, zero padding
    Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET, count.toLong)
    var cursor = header + 8 * count
    var j = 0
    while (j < count) {
      val name = names(marked(j))
      Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + header + 8L * j, cursor.toLong << 32 | name.length)
      System.arraycopy(name, 0, bytes, cursor, name.length)
      cursor += roundNumberOfBytesToNearestWord(name.length)
      j += 1
    }
    val array = new UnsafeArrayData
    array.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET, size)
    array
  }
}

object MaskNames {
  /**
   * Entries per table version, each about one KB for a table of 30 columns. On the benchmark's
   * profile M every column mask and a third of the (randomly generated) change masks hit; 4096
   * entries measured no faster, the misses being cheap next to a larger cache's memory traffic.
   */
  private val Capacity = 512

  /** Spreads the hash's bits: masks differ mostly in their last bytes. */
  private def index(hash: Int): Int = {
    val h = hash * 0x9e3779b9
    (h ^ (h >>> 16)) & (Capacity - 1)
  }
}
