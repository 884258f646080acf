package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods.roundNumberOfBytesToNearestWord
import org.apache.spark.unsafe.types.UTF8String

/**
 * The names of the columns a mask marks (`header__changed_columns`, `header__present_columns`),
 * for one table version. Masks repeat heavily (every INSERT of a version has the same column mask,
 * an UPDATE changes a few columns), so each array is built once per distinct mask value and kept
 * in a small direct-mapped cache. The arrays are UnsafeArrayData, which Spark's copy into its
 * UnsafeRow takes in one memory copy instead of one write per name; they are shared between rows.
 * A miss rebuilds its slot's array in place, growing its bytes only when they are too short, so a
 * stream of distinct masks allocates nothing once the slots have grown: the array a row got stays
 * valid until the next message, as every value of the reused row does. A converter keeps one
 * cache per mask, so the two masks of one message never share a slot.
 *
 * A mask is keyed by its value as 64-bit words (one word up to 64 columns), held in one flat
 * array of longs: a lookup reads a few cache lines that stay hot instead of a byte array per slot
 * that a miss-heavy stream of masks has long evicted. Extra leading zero bytes do not change the
 * value, so they share the entry.
 *
 * Bits past the last column name no column and are ignored: only the mask's last
 * `8 * wordsPerKey` bytes are read, and the bits of their top word past the last column are
 * cleared, so such a mask shares the entry of the same mask without them.
 *
 * A mask enters the cache the second time it is seen in its slot: the first time, its names are
 * built in one scratch array, which stays in the processor's cache, and only its key is noted.
 * Many masks may never come back (in the benchmark's generated data an INSERT's change mask names
 * its non-null columns, so nulls make most of them new): building those into the cache's own
 * arrays wrote to memory a miss-heavy stream had long evicted, and evicted the entries that repeat.
 */
final class MaskNames(columnNames: Array[UTF8String]) {
  import MaskNames.{Capacity, IndexBits, Scratch}

  private val wordsPerKey = math.max(1, (columnNames.length + 63) / 64)
  /** The bits of the key's top word that stand for columns. */
  private val topWordColumns = {
    val columnsInTop = columnNames.length - 64 * (wordsPerKey - 1)
    if (columnsInTop == 64) -1L else (1L << columnsInTop) - 1
  }
  private val keys = new Array[Long](Capacity * wordsPerKey)
  /** The masks seen once, per slot, and whether a slot has one. */
  private val seenKeys = new Array[Long](Capacity * wordsPerKey)
  private val seen = new Array[Boolean](Capacity)
  /** The arrays of the slots, then the scratch array, at [[Scratch]]. */
  private val values = new Array[UnsafeArrayData](Capacity + 1)
  /** The bytes under each array: rewritten by a build, replaced only to grow. */
  private val buffers = new Array[Array[Byte]](Capacity + 1)
  /**
   * Each name's bytes zero-padded to whole words, as the array holds them: a build moves a name
   * in one or two word moves, with no zero fill before and no per-name array copy.
   */
  private val paddedNames = columnNames.map { n =>
    java.util.Arrays.copyOf(n.getBytes, roundNumberOfBytesToNearestWord(n.numBytes))
  }
  private val nameLengths = columnNames.map(_.numBytes)
  /** The mask being looked up, least significant word first. */
  private val key = new Array[Long](wordsPerKey)
  /** The 0-based columns of the mask being built. */
  private val marked = new Array[Int](columnNames.length)

  /** The names of the mask in `bytes` at `offset`. */
  def apply(bytes: Array[Byte], offset: Int, length: Int): ArrayData = {
    var hash = 0L
    var w = 0
    var last = offset + length - 1
    while (w < wordsPerKey) {
      val first = math.max(offset, last - 7)
      var word = 0L
      var b = first
      while (b <= last) { word = word << 8 | (bytes(b) & 0xffL); b += 1 }
      if (w == wordsPerKey - 1) word &= topWordColumns
      key(w) = word
      hash = (hash ^ word) * 0x9e3779b97f4a7c15L
      last = first - 1
      w += 1
    }
    val slot = (hash >>> (64 - IndexBits)).toInt
    val base = slot * wordsPerKey
    if (values(slot) != null && holdsKey(keys, base)) values(slot)
    else if (seen(slot) && holdsKey(seenKeys, base)) {
      build(slot)
      System.arraycopy(key, 0, keys, base, wordsPerKey)
      values(slot)
    } else {
      System.arraycopy(key, 0, seenKeys, base, wordsPerKey)
      seen(slot) = true
      build(Scratch)
      values(Scratch)
    }
  }

  private def holdsKey(table: Array[Long], base: Int): Boolean = {
    var same = true
    var w = 0
    while (same && w < wordsPerKey) { same = table(base + w) == key(w); w += 1 }
    same
  }

  /**
   * The names of the columns set in `key`, into `slot` (or [[Scratch]]), in Spark's UnsafeArrayData layout written directly:
   * the element count, null bits (none), one (offset << 32 | length) word per element, then the
   * names, each padded with zeros to 8 bytes.
   */
  private def build(slot: Int): Unit = {
    // Bit i of word w is column 64 * w + i: set bits are taken lowest first, without a branch per
    // column, which on random masks the branch predictor cannot learn.
    var count = 0
    var dataBytes = 0
    var w = 0
    while (w < wordsPerKey) {
      var bits = key(w)
      while (bits != 0) {
        val column = 64 * w + java.lang.Long.numberOfTrailingZeros(bits)
        marked(count) = column
        dataBytes += paddedNames(column).length
        count += 1
        bits &= bits - 1
      }
      w += 1
    }
    val header = UnsafeArrayData.calculateHeaderPortionInBytes(count)
    val size = header + 8 * count + dataBytes
    var bytes = buffers(slot)
    if (bytes == null || bytes.length < size) {
      bytes = new Array[Byte](math.max(size, 2 * (if (bytes == null) 0 else bytes.length)))
      buffers(slot) = bytes
      values(slot) = new UnsafeArrayData
    }
    // Every word up to `size` is written: the count, the null bits (none), the offsets, the names.
    Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET, count.toLong)
    var at = 8
    while (at < header) { Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + at, 0L); at += 8 }
    var cursor = header + 8 * count
    var j = 0
    while (j < count) {
      val column = marked(j)
      val name = paddedNames(column)
      Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + header + 8L * j, cursor.toLong << 32 | nameLengths(column))
      var k = 0
      while (k < name.length) {
        Platform.putLong(bytes, Platform.BYTE_ARRAY_OFFSET + cursor + k, Platform.getLong(name, Platform.BYTE_ARRAY_OFFSET + k))
        k += 8
      }
      cursor += name.length
      j += 1
    }
    values(slot).pointTo(bytes, Platform.BYTE_ARRAY_OFFSET, size)
  }
}

object MaskNames {
  /**
   * Entries per table version, each about one KB for a table of 30 columns. On the benchmark's
   * profile M every column mask and a third of the (randomly generated) change masks hit; 4096
   * entries measured no faster, the misses being cheap next to a larger cache's memory traffic.
   */
  private val IndexBits = 9
  private val Capacity = 1 << IndexBits
  /** The index of the scratch array, past the slots. */
  private val Scratch = Capacity
}
