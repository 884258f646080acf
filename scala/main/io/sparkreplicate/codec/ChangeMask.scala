package io.sparkreplicate.codec

/**
 * Replicate's `changeMask` / `columnMask`: the bytes are one big-endian unsigned integer whose
 * bit i (0 = least significant) stands for the column with ordinal i + 1. Extra leading zero
 * bytes are allowed.
 *
 * A set bit past the table's last column names no column and is ignored. Real Replicate output
 * sends such bits: UPDATEs of Oracle-sourced tables of 26 and 37 columns carry the change masks
 * 04000000 (ordinal 27) and 2000000000 (ordinal 38) beside column masks that match the data
 * exactly, so the bit says nothing about the columns the reader knows.
 */
object ChangeMask {

  /** Ordinals (1-based, ascending) whose bit is set, among the table's `columnCount` columns. */
  def ordinals(mask: Array[Byte], columnCount: Int): Array[Int] = {
    val found = Array.newBuilder[Int]
    var byteIndex = mask.length - 1
    var base = 0
    while (byteIndex >= 0 && base < columnCount) {
      val b = mask(byteIndex) & 0xff
      var bit = 0
      while (bit < 8 && base + bit < columnCount) {
        if ((b & (1 << bit)) != 0) found += base + bit + 1
        bit += 1
      }
      base += 8
      byteIndex -= 1
    }
    found.result()
  }

  /** Whether the mask in `bytes` at `offset` sets a bit past the table's last column. */
  def setsBitsBeyond(bytes: Array[Byte], offset: Int, length: Int, columnCount: Int): Boolean = {
    val end = offset + length
    var i = offset
    while (i < end && bytes(i) == 0) i += 1
    i < end && (end - 1 - i) * 8 + (32 - Integer.numberOfLeadingZeros(bytes(i) & 0xff)) > columnCount
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
}
