package io.sparkreplicate.codec

import java.lang.invoke.{MethodHandles, VarHandle}
import java.nio.ByteOrder

/**
 * Eight bytes of a byte array read as one little-endian long, whatever the machine's byte order:
 * byte `i` lands in the low 8 bits. The varint reader and the UTF-8 validator scan a word at a
 * time with it; the load is bounds-checked, so a word never reads past the array.
 */
object ByteWords {
  private val LittleEndianLong: VarHandle = MethodHandles.byteArrayViewVarHandle(classOf[Array[Long]], ByteOrder.LITTLE_ENDIAN)

  /** The high bit of each of the word's 8 bytes. */
  final val HighBits = 0x8080808080808080L

  /** Bytes `i` to `i + 7`, the first in the low bits. */
  def littleEndianLong(bytes: Array[Byte], i: Int): Long = LittleEndianLong.get(bytes, i)

  /** The high bits of bytes `i` to `i + 7`: nonzero when one of them is not ASCII. */
  def highBits(bytes: Array[Byte], i: Int): Long = littleEndianLong(bytes, i) & HighBits

  /**
   * The high bits of the `n` (1 to 8; 0 masks nothing) bytes from `i`, read as one word that may
   * reach past them while it stays inside the array: the bytes past them are masked out.
   */
  def highBits(bytes: Array[Byte], i: Int, n: Int): Long = highBits(bytes, i) & (-1L >>> (64 - 8 * n))

  /** The index, 0 to 7, of the word's first byte in `bits` (nonzero, at most the high bits). */
  def firstByte(bits: Long): Int = java.lang.Long.numberOfTrailingZeros(bits) >>> 3
}
