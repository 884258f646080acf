package io.sparkreplicate.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Eight bytes of a byte array read as one little-endian long, whatever the machine's byte order:
 * byte {@code i} lands in the low 8 bits. The varint reader, the UTF-8 validator and the digit
 * parsers scan a word at a time with it; the load is bounds-checked, so a word never reads past
 * the array.
 *
 * <p>Java, not Scala, for one reason: the JIT folds a {@code static final} VarHandle into a plain
 * load, and Scala has no static finals. Held in a Scala object's field, every read went through
 * the VarHandle's generic guard (3.2% of the typed read's CPU samples on profile M once the
 * digit parsers used it).
 */
public final class ByteWords {
  private ByteWords() {}

  private static final VarHandle LITTLE_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /** The high bit of each of the word's 8 bytes. */
  public static final long HIGH_BITS = 0x8080808080808080L;

  private static final long HIGH_NIBBLES = 0xf0f0f0f0f0f0f0f0L;
  private static final long ZEROS = 0x3030303030303030L;

  /** Bytes {@code i} to {@code i + 7}, the first in the low bits. */
  public static long littleEndianLong(byte[] bytes, int i) {
    return (long) LITTLE_ENDIAN_LONG.get(bytes, i);
  }

  /** The high bits of bytes {@code i} to {@code i + 7}: nonzero when one of them is not ASCII. */
  public static long highBits(byte[] bytes, int i) {
    return littleEndianLong(bytes, i) & HIGH_BITS;
  }

  /**
   * The high bits of the {@code n} (1 to 8; 0 masks nothing) bytes from {@code i}, read as one word
   * that may reach past them while it stays inside the array: the bytes past them are masked out.
   */
  public static long highBits(byte[] bytes, int i, int n) {
    return highBits(bytes, i) & (-1L >>> (64 - 8 * n));
  }

  /** The index, 0 to 7, of the word's first byte in {@code bits} (nonzero, at most the high bits). */
  public static int firstByte(long bits) {
    return Long.numberOfTrailingZeros(bits) >>> 3;
  }

  /**
   * How many of the word's bytes, from its first, are ASCII digits (0 to 8). A byte is a digit when
   * its high nibble is 3 both as it is and plus 6. The additions carry only out of a byte that is
   * not a digit, into bytes after it, which the count never looks at.
   */
  public static int leadingDigits(long word) {
    long notDigits = ((word & HIGH_NIBBLES) ^ ZEROS) | (((word + 0x0606060606060606L) & HIGH_NIBBLES) ^ ZEROS);
    return Long.numberOfTrailingZeros(notDigits) >>> 3;
  }

  /**
   * The value of the word's first {@code n} bytes (1 to 8), ASCII digits, the first the most
   * significant: shifted up so that they end the word behind zero bytes (leading zeros), then
   * combined pairwise into 2, 4 and 8-digit values, three multiplications in all.
   */
  public static long digitsValue(long word, int n) {
    long digits = (word << (8 * (8 - n))) & 0x0f0f0f0f0f0f0f0fL;
    long pairs = (digits * 2561) >>> 8;
    long quads = ((pairs & 0x00ff00ff00ff00ffL) * 6553601) >>> 16;
    return ((quads & 0x0000ffff0000ffffL) * 42949672960001L) >>> 32;
  }
}
