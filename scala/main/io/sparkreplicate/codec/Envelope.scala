package io.sparkreplicate.codec

import io.sparkreplicate.{ErrorId, MalformedMessageException}

sealed trait MessageKind
object MessageKind {
  case object Metadata extends MessageKind
  case object Data extends MessageKind
}

/**
 * One decoded Replicate envelope. The payload is not copied: it is the slice
 * `[payloadOffset, payloadOffset + payloadLength)` of the array the envelope was read from.
 *
 * @param schemaId     `messageSchemaId`, or null
 * @param messageSchema `messageSchema` (Avro JSON of the payload), or null
 */
final case class Envelope(
    kind: MessageKind,
    schemaId: String,
    messageSchema: String,
    payloadOffset: Int,
    payloadLength: Int)

/**
 * Decodes the fixed `MessageEnvelope` layout of Replicate's Avro message format:
 * magic fixed(5) `atMSG`, type string, headers [null, map<string>], messageSchemaId
 * [null, string], messageSchema [null, string], message bytes. The whole slice must be consumed.
 */
object Envelope {
  val Magic: Array[Byte] = "atMSG".getBytes("US-ASCII")

  def startsWithMagic(buf: Array[Byte], offset: Int, length: Int): Boolean =
    length >= Magic.length && (0 until Magic.length).forall(i => buf(offset + i) == Magic(i))

  def decode(buf: Array[Byte], offset: Int, length: Int): Envelope = {
    val in = new ByteReader(buf, offset, offset + length)
    if (length == 0) throw new MalformedMessageException(ErrorId.Truncated, "empty message")
    if (!startsWithMagic(buf, offset, length)) {
      val shown = buf.slice(offset, offset + math.min(length, Magic.length))
        .map(b => f"${b & 0xff}%02x").mkString(" ")
      throw new MalformedMessageException(ErrorId.BadMagic,
        s"message does not start with the Replicate magic `atMSG` (61 74 4d 53 47) but with $shown")
    }
    in.readFixed("magic", Magic.length)
    val kind = in.readString("type") match {
      case "MD" => MessageKind.Metadata
      case "DT" => MessageKind.Data
      case other => throw new MalformedMessageException(ErrorId.UnknownMessageType,
        s"envelope type is `${other.take(40)}`, expected `MD` or `DT`")
    }
    if (in.readUnionIndex("headers", 2) == 1) in.skipStringMap("headers")
    val schemaId = if (in.readUnionIndex("messageSchemaId", 2) == 1) {
      in.readString("messageSchemaId")
    } else null
    val messageSchema = if (in.readUnionIndex("messageSchema", 2) == 1) {
      in.readString("messageSchema")
    } else null
    val payloadLength = in.readLength("message")
    val payloadOffset = in.arrayOffset
    if (in.remaining != payloadLength) throw new MalformedMessageException(ErrorId.TrailingBytes,
      s"${in.remaining - payloadLength} bytes follow the envelope's `message` field")
    Envelope(kind, schemaId, messageSchema, payloadOffset, payloadLength)
  }
}
