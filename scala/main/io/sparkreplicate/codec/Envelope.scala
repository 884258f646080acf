package io.sparkreplicate.codec

import io.sparkreplicate.{ErrorId, MalformedMessageException}

sealed trait MessageKind
object MessageKind {
  case object Metadata extends MessageKind
  case object Data extends MessageKind
}

/**
 * One decoded Replicate envelope. The payload is not copied: it is the slice
 * `[payloadOffset, payloadOffset + payloadLength)` of the array the envelope was read from. A
 * reader that decodes message after message passes the same envelope to [[Envelope.decode]],
 * which refills it, so that nothing is allocated per message.
 */
final class Envelope {
  private var _kind: MessageKind = _
  private var _schemaId: String = _
  private var _messageSchema: String = _
  private var _payloadOffset = 0
  private var _payloadLength = 0

  def kind: MessageKind = _kind
  /** `messageSchemaId`, or null. */
  def schemaId: String = _schemaId
  /** `messageSchema` (Avro JSON of the payload), or null. */
  def messageSchema: String = _messageSchema
  def payloadOffset: Int = _payloadOffset
  def payloadLength: Int = _payloadLength

  private[codec] def set(kind: MessageKind, schemaId: String, messageSchema: String, payloadOffset: Int,
      payloadLength: Int): Envelope = {
    // Stored only when they change (see SliceDecoder on the write barrier): the same for message after message.
    if (_kind ne kind) _kind = kind
    if (_schemaId ne schemaId) _schemaId = schemaId
    if (_messageSchema ne messageSchema) _messageSchema = messageSchema
    _payloadOffset = payloadOffset
    _payloadLength = payloadLength
    this
  }
}

/**
 * Decodes the fixed `MessageEnvelope` layout of Replicate's Avro message format:
 * magic fixed(5) `atMSG`, type string, headers [null, map<string>], messageSchemaId
 * [null, string], messageSchema [null, string], message bytes. The whole slice must be consumed.
 */
object Envelope {
  val Magic: Array[Byte] = "atMSG".getBytes("US-ASCII")

  def startsWithMagic(buf: Array[Byte], offset: Int, length: Int): Boolean =
    length >= Magic.length && java.util.Arrays.equals(buf, offset, offset + Magic.length, Magic, 0, Magic.length)

  /** The envelope's types, compared as bytes: no String is read for them, nor hashed. */
  private val DataType = "DT".getBytes("US-ASCII")
  private val MetadataType = "MD".getBytes("US-ASCII")

  // The strings that repeat from message to message, read with SliceDecoder.readRecurringString.
  private val SchemaIdSlot = 0
  private val MessageSchemaSlot = 1

  def decode(buf: Array[Byte], offset: Int, length: Int): Envelope =
    decode(new SliceDecoder().reset(buf, offset, length), buf, offset, length)

  /**
   * Decodes with a reused decoder, which is left positioned at the start of the payload. A reused
   * decoder also remembers the last type, schema id and schema, so repeats are not decoded again.
   * The fields go `into` the envelope given, a new one by default.
   */
  def decode(in: SliceDecoder, buf: Array[Byte], offset: Int, length: Int, into: Envelope = new Envelope): Envelope = {
    in.reset(buf, offset, length)
    if (length == 0) throw new MalformedMessageException(ErrorId.Truncated, "empty message")
    if (length < Magic.length && (0 until length).forall(i => buf(offset + i) == Magic(i))) {
      throw new MalformedMessageException(ErrorId.Truncated, s"message ends after $length byte(s) of the magic")
    }
    if (!startsWithMagic(buf, offset, length)) {
      val shown = buf.slice(offset, offset + math.min(length, Magic.length))
        .map(b => f"${b & 0xff}%02x").mkString(" ")
      throw new MalformedMessageException(ErrorId.BadMagic,
        s"message does not start with the Replicate magic `atMSG` (61 74 4d 53 47) but with $shown")
    }
    in.fieldIndex = SliceDecoder.Magic
    in.skipFixed(Magic.length)
    in.fieldIndex = SliceDecoder.Type
    in.readSlice()
    val kind =
      if (in.sliceEquals(DataType)) MessageKind.Data
      else if (in.sliceEquals(MetadataType)) MessageKind.Metadata
      else throw new MalformedMessageException(ErrorId.UnknownMessageType,
        s"envelope type is `${in.sliceString.take(40)}`, expected `MD` or `DT`")
    in.fieldIndex = SliceDecoder.Headers
    if (nullableBranch(in)) { var n = in.skipMap(); while (n > 0) { skipEntries(in, n); n = in.skipMap() } }
    in.fieldIndex = SliceDecoder.MessageSchemaId
    val schemaId = if (nullableBranch(in)) in.readRecurringString(SchemaIdSlot) else null
    in.fieldIndex = SliceDecoder.MessageSchema
    val messageSchema = if (nullableBranch(in)) in.readRecurringString(MessageSchemaSlot) else null
    in.fieldIndex = SliceDecoder.Message
    val payloadLength = in.readLength()
    val payloadOffset = in.arrayOffset
    if (in.remaining != payloadLength) throw new MalformedMessageException(ErrorId.TrailingBytes,
      s"${in.remaining - payloadLength} bytes follow the envelope's `message` field")
    into.set(kind, schemaId, messageSchema, payloadOffset, payloadLength)
  }

  /** `[null, T]`: true when the value branch follows. */
  private def nullableBranch(in: SliceDecoder): Boolean = in.readIndex() match {
    case 0 => false
    case 1 => true
    case other => throw new MalformedMessageException(ErrorId.BadPayload,
      s"union branch $other out of range 0..1 in field `${in.field}`")
  }

  private def skipEntries(in: SliceDecoder, n: Long): Unit = {
    var i = 0L
    while (i < n) { in.skipString(); in.skipString(); i += 1 }
  }
}
