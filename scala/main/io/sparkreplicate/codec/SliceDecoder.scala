package io.sparkreplicate.codec

import java.nio.ByteBuffer

import org.apache.avro.io.Decoder
import org.apache.avro.util.Utf8

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * An Avro binary decoder over a slice of a byte array, reused for every message. Every length is
 * checked against the bytes left in the slice before anything is allocated, so a forged length
 * can neither allocate gigabytes nor read past the message: it is a [[MalformedMessageException]].
 * Avro's own BinaryDecoder allocates first and buffers input we already hold in memory.
 *
 * `field` names what is being read, for error messages; the envelope sets it per field, by its index
 * in [[SliceDecoder.Fields]].
 *
 * A decoder lives as long as its task, and once the collector counts it old (a long task's does),
 * storing a reference into it costs G1's write barrier a memory fence: so a decoder that reads
 * message after message stores no reference it already holds (the buffer, a block's, repeats),
 * and names its fields by an int. With the decoder's objects made old at once
 * (`-XX:MaxTenuringThreshold=0`), DecoderBench took about 940 ns per message instead of 1,110.
 */
final class SliceDecoder extends Decoder {
  private var buf: Array[Byte] = Array.emptyByteArray
  private var start = 0
  private var pos = 0
  private var end = 0
  /** The field being read, an index of [[SliceDecoder.Fields]]. */
  var fieldIndex: Int = SliceDecoder.Payload
  // Where the value last read by readSlice lies in `buf`.
  private var valueAt = 0
  private var valueBytes = 0
  // What readRecurringString read last in each slot: the bytes, and their String.
  private val recurringBytes = new Array[Array[Byte]](SliceDecoder.RecurringSlots)
  private val recurringStrings = new Array[String](SliceDecoder.RecurringSlots)
  // The ASCII run [asciiFrom, asciiTo) that isUtf8 found last in the slice: it ends at the slice's
  // end or at a byte with its high bit set. None after a reset.
  private var asciiFrom = Int.MaxValue
  private var asciiTo = -1

  def reset(bytes: Array[Byte], offset: Int, length: Int): SliceDecoder = {
    if (buf ne bytes) buf = bytes
    start = offset
    pos = offset
    end = offset + length
    fieldIndex = SliceDecoder.Payload
    asciiFrom = Int.MaxValue
    asciiTo = -1
    this
  }

  /**
   * Whether `[offset, offset + length)`, which lies in the slice, is valid UTF-8. Replicate's text
   * is nearly all ASCII and a message's strings lie a byte or two apart (a union branch, a length),
   * so the scan for a string's ASCII runs on past it to the slice's first non-ASCII byte after it,
   * and a string that ends before that byte needs no scan of its own (profile M: 22.6 strings a
   * message, 3.6 scans). A string that holds that byte gets the full check.
   */
  def isUtf8(offset: Int, length: Int): Boolean = {
    if (offset < asciiFrom || offset > asciiTo) {
      asciiFrom = offset
      asciiTo = Utf8Validator.asciiEnd(buf, offset, end)
    }
    // The run's end is the string's first non-ASCII byte: the check starts there.
    offset + length <= asciiTo || Utf8Validator.isValidFrom(buf, asciiTo, offset + length)
  }

  def field: String = SliceDecoder.Fields(fieldIndex)

  /** Bytes read so far in the slice. */
  def position: Int = pos - start
  def remaining: Int = end - pos
  /** Offset in the array of the next byte to read. */
  def arrayOffset: Int = pos
  /** Offset in the array of the slice's end. */
  def limit: Int = end
  /**
   * Moves to `arrayOffset`, which compiled code (see `StepChain`) read up to from [[array]] itself,
   * keeping its position in a local variable; it must lie in the slice, at or after where it started.
   */
  def seek(arrayOffset: Int): Unit = pos = arrayOffset
  def isEnd: Boolean = pos == end

  override def readNull(): Unit = ()

  override def readBoolean(): Boolean = {
    require(1)
    val b = buf(pos)
    pos += 1
    if (b == 0) false else if (b == 1) true else throw malformed(ErrorId.BadPayload, s"boolean byte $b")
  }

  override def readInt(): Int = {
    // One byte: union branches, enum indexes and most small numbers.
    if (pos < end && buf(pos) >= 0) {
      val b = buf(pos)
      pos += 1
      (b >>> 1) ^ -(b & 1)
    } else {
      val at = position
      val v = readLongBytes()
      if (v.toInt != v) throw malformed(ErrorId.BadPayload, s"int value $v out of range at byte $at")
      v.toInt
    }
  }

  override def readLong(): Long = {
    // Most values (lengths, union branches, small numbers) fit the first byte.
    if (pos < end && buf(pos) >= 0) {
      val b = buf(pos).toLong
      pos += 1
      (b >>> 1) ^ -(b & 1)
    } else readLongBytes()
  }

  private def readLongBytes(): Long = {
    val packed = SliceDecoder.packedVarint(buf, pos, end)
    if (packed != 0) {
      pos += SliceDecoder.varintBytes(packed)
      return SliceDecoder.varintValue(packed)
    }
    var value = 0L
    var shift = 0
    var b = 0
    while ({
      require(1)
      if (shift > 63) throw malformed(ErrorId.BadPayload, "varint longer than 10 bytes")
      b = buf(pos) & 0xff
      pos += 1
      value |= (b & 0x7fL) << shift
      shift += 7
      (b & 0x80) != 0
    }) ()
    (value >>> 1) ^ -(value & 1)
  }

  override def readFloat(): Float = {
    require(4)
    val bits = (buf(pos) & 0xff) | (buf(pos + 1) & 0xff) << 8 | (buf(pos + 2) & 0xff) << 16 | (buf(pos + 3) & 0xff) << 24
    pos += 4
    java.lang.Float.intBitsToFloat(bits)
  }

  override def readDouble(): Double = {
    require(8)
    var bits = 0L
    var i = 7
    while (i >= 0) { bits = (bits << 8) | (buf(pos + i) & 0xffL); i -= 1 }
    pos += 8
    java.lang.Double.longBitsToDouble(bits)
  }

  /** A length prefix, validated against the bytes left before anything is allocated. */
  def readLength(): Int = {
    val at = position
    val length = readLong()
    if (length < 0) throw malformed(ErrorId.BadPayload, s"negative length $length at byte $at")
    if (length > remaining) throw malformed(ErrorId.Truncated,
      s"length $length at byte $at exceeds the $remaining bytes left")
    length.toInt
  }

  override def readString(old: Utf8): Utf8 = {
    val length = readLength()
    val out = if (old != null) old else new Utf8()
    out.setByteLength(length)
    System.arraycopy(buf, pos, out.getBytes, 0, length)
    pos += length
    out
  }

  /**
   * Reads a string or bytes value without copying or decoding it: its bytes stay in [[array]] from
   * [[sliceStart]] for [[sliceLength]] bytes, valid until the array is reset. A caller reading a
   * string validates them as UTF-8.
   */
  def readSlice(): Unit = {
    val length = readLength()
    valueAt = pos
    valueBytes = length
    pos += length
  }

  /** [[readSlice]] for a `fixed` of `length` bytes. */
  def readFixedSlice(length: Int): Unit = {
    require(length)
    valueAt = pos
    valueBytes = length
    pos += length
  }

  /** The array the slice lies in, for [[readSlice]]'s bytes. */
  def array: Array[Byte] = buf
  def sliceStart: Int = valueAt
  def sliceLength: Int = valueBytes

  override def readString(): String = {
    readSlice()
    sliceString
  }

  /** The slice [[readSlice]] read, as a String: malformed unless valid UTF-8. */
  def sliceString: String = Utf8Strict.decode(buf, valueAt, valueBytes, field)

  /** Whether the slice [[readSlice]] read holds exactly `bytes`. */
  def sliceEquals(bytes: Array[Byte]): Boolean =
    java.util.Arrays.equals(buf, valueAt, valueAt + valueBytes, bytes, 0, bytes.length)

  /**
   * [[readString]] for a field whose value mostly repeats (the envelope's schema id and schema): when the
   * bytes equal those last read for the same `slot` (0 until [[SliceDecoder.RecurringSlots]]),
   * the String decoded then is returned, so a repeat costs a comparison, not a decode.
   */
  def readRecurringString(slot: Int): String = {
    readSlice()
    val last = recurringBytes(slot)
    if (last != null && sliceEquals(last)) {
      recurringStrings(slot)
    } else {
      val s = sliceString
      recurringBytes(slot) = java.util.Arrays.copyOfRange(buf, valueAt, valueAt + valueBytes)
      recurringStrings(slot) = s
      s
    }
  }

  override def skipString(): Unit = skipBytes()

  override def readBytes(old: ByteBuffer): ByteBuffer = {
    val length = readLength()
    val out = if (old != null && old.hasArray && old.capacity() >= length) { old.clear(); old } else ByteBuffer.allocate(length)
    System.arraycopy(buf, pos, out.array(), out.arrayOffset(), length)
    out.limit(length)
    pos += length
    out
  }

  override def skipBytes(): Unit = {
    val length = readLength() // before touching pos: `pos += readLength()` would read pos first
    pos += length
  }

  override def readFixed(bytes: Array[Byte], offset: Int, length: Int): Unit = {
    require(length)
    System.arraycopy(buf, pos, bytes, offset, length)
    pos += length
  }

  override def skipFixed(length: Int): Unit = { require(length); pos += length }

  override def readEnum(): Int = readInt()
  override def readIndex(): Int = readInt()

  override def readArrayStart(): Long = blockCount()
  override def arrayNext(): Long = blockCount()
  override def readMapStart(): Long = blockCount()
  override def mapNext(): Long = blockCount()

  /** Blocks that carry their byte size are skipped whole; others return their item count. */
  override def skipArray(): Long = skipBlocks()
  override def skipMap(): Long = skipBlocks()

  private def skipBlocks(): Long = {
    while (true) {
      val count = readLong()
      if (count >= 0) return checkedCount(count)
      val size = readLong()
      if (size < 0 || size > remaining) throw malformed(ErrorId.Truncated, s"block of $size bytes exceeds the $remaining bytes left")
      pos += size.toInt
    }
    0L
  }

  private def blockCount(): Long = {
    val count = readLong()
    if (count >= 0) checkedCount(count)
    else { readLong(); checkedCount(-count) }
  }

  /**
   * Each item takes at least one byte in the data Replicate writes, so a count beyond the bytes
   * left is forged; refusing it early stops a hostile count from spinning a reader for hours.
   */
  private def checkedCount(count: Long): Long = {
    if (count > remaining) throw malformed(ErrorId.Truncated, s"block of $count items exceeds the $remaining bytes left")
    count
  }

  private def require(n: Int): Unit =
    if (n > end - pos) throw malformed(ErrorId.Truncated, s"message ends inside `$field` at byte $position")

  private def malformed(id: ErrorId, detail: String) =
    new MalformedMessageException(id, s"$detail (reading `$field`)")
}

object SliceDecoder {
  private val names = scala.collection.mutable.ArrayBuffer.empty[String]
  /** The index of a new field name: each name is written once, its index follows from it. */
  private def named(name: String): Int = { names += name; names.size - 1 }

  // The fields a decoder names in its errors (by index: [[SliceDecoder.fieldIndex]]): a message's
  // payload, the envelope's fields and a container file's metadata.
  val Payload: Int = named("payload")
  val Magic: Int = named("magic")
  val Type: Int = named("type")
  val Headers: Int = named("headers")
  val MessageSchemaId: Int = named("messageSchemaId")
  val MessageSchema: Int = named("messageSchema")
  val Message: Int = named("message")
  val ContainerMetadata: Int = named("container metadata")
  /** Every field's name, at its index. */
  val Fields: Array[String] = names.toArray

  /** How many fields [[SliceDecoder.readRecurringString]] keeps apart. */
  val RecurringSlots = 2

  /**
   * The varint at `pos`, when it takes 1 to 8 bytes that end inside the slice (the values of
   * Replicate's rows, ints and longs up to 2^55^, union branches and lengths): its 7-bit groups
   * packed as (value << 8 | bytes), read by [[varintValue]] and [[varintBytes]]; else 0, and the
   * caller reads the varint byte by byte, checked. One function for the decoder and for the code
   * that `StepChain` compiles, which keeps its position in a local variable.
   */
  def packedVarint(buf: Array[Byte], pos: Int, end: Int): Long = {
    // One byte: union branches, short lengths, small numbers.
    if (pos < end && buf(pos) >= 0) return (buf(pos).toLong << 8) | 1
    // Two and three bytes (lengths up to 8 KB, ints up to about a million), byte by byte: cheaper
    // than the word below, and they are most of the longer varints (BuildComparison on profile M:
    // 4% less time a message).
    if (pos + 1 < end && buf(pos + 1) >= 0) return ((buf(pos) & 0x7fL | buf(pos + 1).toLong << 7) << 8) | 2
    if (pos + 2 < end && buf(pos + 2) >= 0)
      return ((buf(pos) & 0x7fL | (buf(pos + 1) & 0x7fL) << 7 | buf(pos + 2).toLong << 14) << 8) | 3
    // Up to 8 bytes at once: the first byte without its continuation bit ends the varint. The
    // word may reach past the slice while it stays inside the array; an end found past the
    // slice, and the rare varint of 9 or 10 bytes, are left to the caller.
    if (buf.length - pos < 8 || pos >= end) return 0
    val word = ByteWords.littleEndianLong(buf, pos)
    val ends = ~word & ByteWords.HIGH_BITS
    if (ends == 0) return 0
    val bytes = ByteWords.firstByte(ends) + 1
    if (bytes > end - pos) 0 else gatherSevenBitGroups(word & (-1L >>> (64 - 8 * bytes))) << 8 | bytes
  }

  /** The zigzag-decoded value of a nonzero [[packedVarint]]. */
  def varintValue(packed: Long): Long = (packed >>> 9) ^ -((packed >>> 8) & 1)

  /** The bytes a nonzero [[packedVarint]] took. */
  def varintBytes(packed: Long): Int = packed.toInt & 0xff

  /**
   * The value of up to 8 little-endian varint bytes: their low 7 bits each, packed together by
   * doubling the width of the packed groups in three steps (7 in 8 bits, 14 in 16, 28 in 32, 56).
   */
  private def gatherSevenBitGroups(word: Long): Long = {
    var x = word & 0x7f7f7f7f7f7f7f7fL
    x = (x & 0x007f007f007f007fL) | (x & 0x7f007f007f007f00L) >>> 1
    x = (x & 0x00003fff00003fffL) | (x & 0x3fff00003fff0000L) >>> 2
    (x & 0x000000000fffffffL) | (x & 0x0fffffff00000000L) >>> 4
  }
}

/** Strict UTF-8 decoding to a String: invalid bytes are a malformed message, never replaced. */
object Utf8Strict {
  import java.nio.charset.{CharacterCodingException, CodingErrorAction, StandardCharsets}

  def decode(buf: Array[Byte], offset: Int, length: Int, field: String): String =
    try {
      StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
        .decode(ByteBuffer.wrap(buf, offset, length)).toString
    } catch {
      case e: CharacterCodingException =>
        throw new MalformedMessageException(ErrorId.InvalidUtf8, s"field `$field` is not valid UTF-8", e)
    }
}
