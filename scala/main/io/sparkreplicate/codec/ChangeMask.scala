package io.sparkreplicate.codec

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Replicate's `changeMask` / `columnMask`: the bytes are one big-endian unsigned integer whose
 * bit i (0 = least significant) stands for the column with ordinal i + 1. Extra leading zero
 * bytes are allowed; a set bit beyond the table's last column is malformed, because it would name
 * a column the reader cannot know.
 */
object ChangeMask {

  /** Ordinals (1-based, ascending) whose bit is set. */
  def ordinals(mask: Array[Byte], columnCount: Int): Array[Int] = {
    val out = new Array[Int](bitCount(mask))
    var found = 0
    var byteIndex = mask.length - 1
    while (byteIndex >= 0) {
      val b = mask(byteIndex) & 0xff
      if (b != 0) {
        val base = (mask.length - 1 - byteIndex) * 8
        var bit = 0
        while (bit < 8) {
          if ((b & (1 << bit)) != 0) {
            val ordinal = base + bit + 1
            if (ordinal > columnCount) throw new MalformedMessageException(ErrorId.BadMask,
              s"mask ${hex(mask)} sets the bit of column $ordinal but the table has $columnCount columns")
            out(found) = ordinal
            found += 1
          }
          bit += 1
        }
      }
      byteIndex -= 1
    }
    out
  }

  /** Fails as [[ordinals]] would on the mask in `bytes` at `offset`, without materialising the ordinals. */
  def validate(bytes: Array[Byte], offset: Int, length: Int, columnCount: Int): Unit = {
    val end = offset + length
    var i = offset
    while (i < end && bytes(i) == 0) i += 1
    if (i < end) {
      val highest = (end - 1 - i) * 8 + (32 - Integer.numberOfLeadingZeros(bytes(i) & 0xff))
      if (highest > columnCount) throw new MalformedMessageException(ErrorId.BadMask,
        s"mask ${hex(java.util.Arrays.copyOfRange(bytes, offset, end))} sets the bit of column $highest " +
          s"but the table has $columnCount columns")
    }
  }

  /** The mask for a set of 1-based ordinals, in the fewest bytes that cover `columnCount`. */
  def encode(ordinals: Seq[Int], columnCount: Int): Array[Byte] = {
    val out = new Array[Byte]((columnCount + 7) / 8)
    ordinals.foreach { ordinal =>
      val bit = ordinal - 1
      val byteIndex = out.length - 1 - bit / 8
      out(byteIndex) = (out(byteIndex) | (1 << (bit % 8))).toByte
    }
    out
  }

  def hex(mask: Array[Byte]): String = mask.map(b => f"${b & 0xff}%02X").mkString

  private def bitCount(mask: Array[Byte]): Int = mask.foldLeft(0)((n, b) => n + Integer.bitCount(b & 0xff))
}
