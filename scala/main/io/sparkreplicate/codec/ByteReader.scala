package io.sparkreplicate.codec

import java.nio.charset.{CharacterCodingException, CodingErrorAction, StandardCharsets}
import java.nio.ByteBuffer

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Reads Avro binary primitives from a slice of a byte array, checking every length against the
 * bytes that are left before anything is allocated, and naming the field on failure. Used for
 * the envelope, whose layout is fixed, so no schema interpretation is needed per message.
 */
private[sparkreplicate] final class ByteReader(buf: Array[Byte], start: Int, end: Int) {
  private var pos = start

  def position: Int = pos - start
  def remaining: Int = end - pos

  def readLong(field: String): Long = {
    var value = 0L
    var shift = 0
    var b = 0
    while ({
      if (pos >= end) throw truncated(field)
      if (shift > 63) throw new MalformedMessageException(ErrorId.BadPayload,
        s"varint longer than 10 bytes in field `$field` at byte ${position}")
      b = buf(pos) & 0xff
      pos += 1
      value |= (b & 0x7fL) << shift
      shift += 7
      (b & 0x80) != 0
    }) ()
    (value >>> 1) ^ -(value & 1)
  }

  /** An Avro length prefix, validated against the bytes left. */
  def readLength(field: String): Int = {
    val at = position
    val length = readLong(field)
    if (length < 0) throw new MalformedMessageException(ErrorId.BadPayload,
      s"negative length $length in field `$field` at byte $at")
    if (length > remaining) throw new MalformedMessageException(ErrorId.Truncated,
      s"field `$field` at byte $at declares $length bytes but only $remaining are left")
    length.toInt
  }

  def readUnionIndex(field: String, branches: Int): Int = {
    val at = position
    val index = readLong(field)
    if (index < 0 || index >= branches) throw new MalformedMessageException(ErrorId.BadPayload,
      s"union branch $index out of range 0..${branches - 1} in field `$field` at byte $at")
    index.toInt
  }

  def readFixed(field: String, size: Int): Int = {
    if (size > remaining) throw truncated(field)
    val at = pos
    pos += size
    at
  }

  /** Strict UTF-8: invalid bytes are a malformed message, never replaced. */
  def readString(field: String): String = {
    val length = readLength(field)
    val at = pos
    pos += length
    ByteReader.decodeUtf8(buf, at, length, field)
  }

  def skipBytes(field: String): Unit = pos += readLength(field)

  /** Skips an Avro map<string> (blocks of key/value pairs, possibly with byte sizes). */
  def skipStringMap(field: String): Unit = {
    var count = readLong(field)
    while (count != 0) {
      if (count < 0) {
        readLong(field) // block size in bytes, not needed: entries are skipped one by one
        count = -count
      }
      if (count > remaining) throw truncated(field)
      var i = 0L
      while (i < count) { skipBytes(field); skipBytes(field); i += 1 }
      count = readLong(field)
    }
  }

  /** The byte offset (in the array) where the next read starts. */
  def arrayOffset: Int = pos

  private def truncated(field: String) = new MalformedMessageException(ErrorId.Truncated,
    s"message ends inside field `$field` at byte ${position}")
}

private[sparkreplicate] object ByteReader {
  def decodeUtf8(buf: Array[Byte], offset: Int, length: Int, field: String): String =
    try {
      StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
        .decode(ByteBuffer.wrap(buf, offset, length)).toString
    } catch {
      case e: CharacterCodingException => throw new MalformedMessageException(ErrorId.BadPayload,
        s"field `$field` is not valid UTF-8", e)
    }
}
