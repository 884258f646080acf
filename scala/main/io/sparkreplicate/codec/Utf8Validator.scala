package io.sparkreplicate.codec

/**
 * Strict UTF-8 validation of a slice, in place: accepts exactly what Spark's
 * `UTF8String.isValid` and Java's decoder with `CodingErrorAction.REPORT` accept, the well-formed
 * sequences of Unicode's table 3-7. So no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no
 * surrogates (ED A0..BF), nothing above U+10FFFF (F4 90.., F5..FF) and no stray or missing
 * continuation bytes. It runs on every string the reader returns that does not lie in an ASCII
 * run (see `SliceDecoder.isUtf8`), and that text is nearly all ASCII: 8 bytes are checked per
 * step, and a word with a non-ASCII byte goes straight to that byte's sequence.
 */
object Utf8Validator {
  /** Whether the slice is valid UTF-8: its leading ASCII run found word by word, then the rest checked. */
  def isValid(bytes: Array[Byte], offset: Int, length: Int): Boolean = {
    val end = offset + length
    isValidFrom(bytes, asciiEnd(bytes, offset, end), end)
  }

  /**
   * The index of the first byte of `[from, end)` with its high bit set, or `end`: how far the text
   * from `from` is ASCII, which needs no further check. Word by word.
   */
  def asciiEnd(bytes: Array[Byte], from: Int, end: Int): Int = {
    checkRange(bytes, from, end)
    var i = from
    while (i <= end - 8) {
      val high = ByteWords.highBits(bytes, i)
      if (high != 0) return i + ByteWords.firstByte(high)
      i += 8
    }
    if (i < end && bytes.length - i >= 8) {
      // The last few bytes in one word.
      val high = ByteWords.highBits(bytes, i, end - i)
      if (high != 0) i + ByteWords.firstByte(high) else end
    } else {
      while (i < end && bytes(i) >= 0) i += 1
      i
    }
  }

  /**
   * Whether `[from, end)` is valid UTF-8, for a caller that knows the text before `from` is ASCII:
   * the check of a string that [[asciiEnd]] found a non-ASCII byte in starts at that byte.
   */
  def isValidFrom(bytes: Array[Byte], from: Int, end: Int): Boolean = {
    checkRange(bytes, from, end)
    validFrom(bytes, from, end)
  }

  private def checkRange(bytes: Array[Byte], from: Int, end: Int): Unit =
    if (from < 0 || from > end || end > bytes.length) throw new IndexOutOfBoundsException(
      s"range [$from, $end) of an array of ${bytes.length} bytes")

  /**
   * Validates `[from, end)`, where a non-ASCII byte was seen (or the array's end is too near for a
   * word): straight to each word's first non-ASCII byte, then that byte's sequence.
   */
  private def validFrom(bytes: Array[Byte], from: Int, end: Int): Boolean = {
    var i = from
    while (i < end) {
      val left = end - i
      if (bytes.length - i >= 8) {
        val high = ByteWords.highBits(bytes, i, math.min(left, 8))
        if (high == 0) i += math.min(left, 8)
        else {
          // Straight to the first byte with its high bit set; the ASCII bytes before it are fine.
          i = afterSequence(bytes, i + ByteWords.firstByte(high), end)
          if (i < 0) return false
        }
      } else if (bytes(i) >= 0) i += 1
      else {
        i = afterSequence(bytes, i, end)
        if (i < 0) return false
      }
    }
    true
  }

  /** The index after the multi-byte sequence that starts at `i`, or -1 when it is ill-formed. */
  private def afterSequence(bytes: Array[Byte], i: Int, end: Int): Int = {
    val lead = bytes(i) & 0xff
    if (lead < 0xc2) -1 // a continuation byte, or the overlong leads C0 and C1
    else if (lead < 0xe0) {
      if (end - i >= 2 && isContinuation(bytes(i + 1))) i + 2 else -1
    } else if (lead < 0xf0) {
      // The second byte's range depends on the lead: E0 80..9F is overlong, ED A0..BF a surrogate.
      if (end - i < 3) return -1
      val second = bytes(i + 1) & 0xff
      val low = if (lead == 0xe0) 0xa0 else 0x80
      val high = if (lead == 0xed) 0x9f else 0xbf
      if (second >= low && second <= high && isContinuation(bytes(i + 2))) i + 3 else -1
    } else if (lead <= 0xf4) {
      // F0 80..8F is overlong; F4 90..BF and leads above F4 are beyond U+10FFFF.
      if (end - i < 4) return -1
      val second = bytes(i + 1) & 0xff
      val low = if (lead == 0xf0) 0x90 else 0x80
      val high = if (lead == 0xf4) 0x8f else 0xbf
      if (second >= low && second <= high && isContinuation(bytes(i + 2)) && isContinuation(bytes(i + 3))) i + 4
      else -1
    } else -1
  }

  /** 80..BF, which as a signed byte is -128..-65. */
  private def isContinuation(b: Byte): Boolean = b < -64
}
