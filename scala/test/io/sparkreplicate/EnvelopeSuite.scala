package io.sparkreplicate

import java.nio.charset.StandardCharsets.UTF_8

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.codec.{Envelope, MessageKind, SliceDecoder}

class EnvelopeSuite extends AnyFunSuite {

  private val payload = "payload bytes, opaque to the envelope".getBytes(UTF_8)
  private val id = "8FB9D3C10EA4B25751DF9CC8318F0A02"
  private val schemaText = """{"type":"record","name":"R","fields":[]}"""

  private def decode(bytes: Array[Byte]): Envelope = Envelope.decode(bytes, 0, bytes.length)
  private def payloadOf(bytes: Array[Byte], e: Envelope): Array[Byte] =
    bytes.slice(e.payloadOffset, e.payloadOffset + e.payloadLength)

  private def malformed(bytes: Array[Byte], offset: Int = 0, length: Int = -1): MalformedMessageException =
    intercept[MalformedMessageException](Envelope.decode(bytes, offset, if (length < 0) bytes.length - offset else length))

  test("an Avro-written envelope starts with the raw magic 61 74 4D 53 47 and then the documented layout") {
    val bytes = envelope("DT", payload, schemaId = id)
    assert(hex(bytes.take(5)) == "61744D5347")
    // type "DT" (length 2 zig-zag = 04), headers null (00), messageSchemaId string branch (02) of 32 chars (40)
    assert(hex(bytes.slice(5, 11)) == "04445400" + "0240")
    assert(new String(bytes.slice(11, 43), UTF_8) == id)
    assert(bytes(43) == 0, "messageSchema null branch")
    assert(Envelope.startsWithMagic(bytes, 0, bytes.length))
  }

  test("both messageSchemaId and messageSchema present (as in the real metadata sample)") {
    val bytes = envelope("MD", payload, schemaId = id, messageSchema = schemaText)
    val e = decode(bytes)
    assert(e.kind == MessageKind.Metadata)
    assert(e.schemaId == id)
    assert(e.messageSchema == schemaText)
    assert(payloadOf(bytes, e).sameElements(payload))
    assert(e.payloadOffset + e.payloadLength == bytes.length)
  }

  test("a reused decoder: repeated type, id and schema are the previous Strings, changed ones are decoded") {
    val other = "0123456789ABCDEF0123456789ABCDEF"
    val in = new SliceDecoder
    def decodeWith(bytes: Array[Byte]) = Envelope.decode(in, bytes, 0, bytes.length)
    val first = decodeWith(envelope("DT", payload, schemaId = id, messageSchema = schemaText))
    val repeat = decodeWith(envelope("DT", payload, schemaId = id, messageSchema = schemaText))
    assert((repeat.schemaId eq first.schemaId) && (repeat.messageSchema eq first.messageSchema))
    val changed = decodeWith(envelope("MD", payload, schemaId = other))
    assert(changed.kind == MessageKind.Metadata && changed.schemaId == other && changed.messageSchema == null)
    val back = decodeWith(envelope("DT", payload, schemaId = id, messageSchema = schemaText.replace("R", "S")))
    assert(back.kind == MessageKind.Data && back.schemaId == id && back.messageSchema == schemaText.replace("R", "S"))
    // A failed decode remembers nothing: the same bytes fail again.
    val bad = envelope("DT", payload, schemaId = "x")
    bad(bad.indexOf('x'.toByte)) = 0xff.toByte
    for (_ <- 1 to 2) assert(intercept[MalformedMessageException](decodeWith(bad)).errorId == ErrorId.InvalidUtf8)
  }

  test("an error names the envelope's field it was reading; a reused decoder then names the payload") {
    val bytes = envelope("DT", payload, schemaId = id, messageSchema = schemaText)
    val schemaAt = bytes.indexOfSlice(schemaText.getBytes(UTF_8))
    // Cut inside each field: the type's string, the schema id, the schema, the payload's bytes.
    for ((cut, field) <- Seq(6 -> "type", 20 -> "messageSchemaId", schemaAt + 3 -> "messageSchema",
        bytes.length - 2 -> "message")) {
      val e = malformed(bytes, length = cut)
      assert(e.getMessage.contains(s"`$field`"), s"cut at $cut: ${e.getMessage}")
    }
    val in = new SliceDecoder
    intercept[MalformedMessageException](Envelope.decode(in, bytes, 0, 20))
    in.reset(Array[Byte](1), 0, 1)
    assert(intercept[MalformedMessageException](in.skipFixed(2)).getMessage.contains("`payload`"))
  }

  test("only messageSchemaId present") {
    val bytes = envelope("DT", payload, schemaId = id)
    val e = decode(bytes)
    assert(e.kind == MessageKind.Data && e.schemaId == id && e.messageSchema == null)
    assert(payloadOf(bytes, e).sameElements(payload))
  }

  test("only messageSchema present (self-describing)") {
    val bytes = envelope("DT", payload, messageSchema = schemaText)
    val e = decode(bytes)
    assert(e.schemaId == null && e.messageSchema == schemaText)
    assert(payloadOf(bytes, e).sameElements(payload))
  }

  test("neither schema id nor schema: the envelope still decodes; finding the schema is the caller's job") {
    val bytes = envelope("DT", payload)
    val e = decode(bytes)
    assert(e.schemaId == null && e.messageSchema == null)
    assert(payloadOf(bytes, e).sameElements(payload))
  }

  test("a headers map is skipped, whether written in one block or in byte-counted blocks") {
    val headers = Map("kafka.key" -> "HR.EMPLOYEES", "origin" -> "täsk-1", "" -> "")
    for (blocking <- Seq(false, true)) {
      val bytes = envelope("DT", payload, schemaId = id, headers = headers, blocking = blocking)
      val e = decode(bytes)
      assert(e.schemaId == id, s"blocking=$blocking")
      assert(payloadOf(bytes, e).sameElements(payload), s"blocking=$blocking")
    }
    // The blocking encoder really did write a negative block count (with a byte size) for the map.
    val blocked = envelope("DT", payload, headers = headers, blocking = true)
    val plain = envelope("DT", payload, headers = headers)
    assert(!blocked.sameElements(plain))
  }

  test("MD and DT are told apart; an empty payload is allowed") {
    assert(decode(envelope("MD", payload, schemaId = id)).kind == MessageKind.Metadata)
    assert(decode(envelope("DT", payload, schemaId = id)).kind == MessageKind.Data)
    val empty = decode(envelope("DT", Array.emptyByteArray, schemaId = id))
    assert(empty.payloadLength == 0)
  }

  test("an envelope in the middle of a larger array is decoded from its slice, offsets in the array") {
    val bytes = envelope("DT", payload, schemaId = id, messageSchema = schemaText)
    val framed = Array.fill[Byte](7)(0x55) ++ bytes ++ Array.fill[Byte](9)(0x66)
    val e = Envelope.decode(framed, 7, bytes.length)
    assert(e.schemaId == id && e.messageSchema == schemaText)
    assert(e.payloadOffset == 7 + bytes.length - payload.length)
    assert(framed.slice(e.payloadOffset, e.payloadOffset + e.payloadLength).sameElements(payload))
  }

  test("bad magic is BadMagic and shows the bytes it found") {
    val bytes = envelope("DT", payload, schemaId = id)
    val wrong = bytes.clone()
    wrong(2) = 'X'.toByte
    val e = malformed(wrong)
    assert(e.errorId == ErrorId.BadMagic)
    assert(e.getMessage.startsWith("[REPLICATE_BAD_MAGIC]"))
    assert(e.getMessage.contains("61 74 58 53 47"))
    assert(malformed("Obj\u0001 not an envelope".getBytes(UTF_8)).errorId == ErrorId.BadMagic)
  }

  test("an unknown message type is UnknownMessageType") {
    for (kind <- Seq("XX", "md", "", "DTX")) {
      val e = malformed(envelope(kind, payload, schemaId = id))
      assert(e.errorId == ErrorId.UnknownMessageType, kind)
      assert(e.detail == s"envelope type is `$kind`, expected `MD` or `DT`")
    }
  }

  test("an empty message is Truncated") {
    val e = malformed(Array.emptyByteArray)
    assert(e.errorId == ErrorId.Truncated)
    assert(malformed(envelope("DT", payload), offset = 3, length = 0).errorId == ErrorId.Truncated)
  }

  test("bytes after the message field are TrailingBytes") {
    val bytes = envelope("DT", payload, schemaId = id) ++ Array[Byte](0, 1, 2)
    val e = malformed(bytes)
    assert(e.errorId == ErrorId.TrailingBytes)
    assert(e.detail.contains("3 bytes"))
  }

  // The contract: a truncated envelope is malformed as Truncated (or, where the cut leaves a
  // nonsensical length or branch, BadPayload); nothing else may escape.
  test("truncation at every byte position is Truncated or BadPayload") {
    val bytes = envelope("MD", payload, schemaId = id, messageSchema = schemaText, headers = Map("k" -> "v"))
    val unexpected = (0 until bytes.length).flatMap { cut =>
      try {
        Envelope.decode(bytes, 0, cut)
        Some(s"cut $cut: decoded without error")
      } catch {
        case e: MalformedMessageException =>
          if (e.errorId == ErrorId.Truncated || e.errorId == ErrorId.BadPayload) None
          else Some(s"cut $cut: ${e.errorId}")
        case e: Throwable => Some(s"cut $cut: ${e.getClass.getName}: ${e.getMessage}")
      }
    }
    assert(unexpected.isEmpty, unexpected.mkString("\n"))
  }

  test("truncation at every byte position never throws anything but MalformedMessageException") {
    val bytes = envelope("DT", payload, schemaId = id, messageSchema = schemaText, headers = Map("a" -> "b", "c" -> "d"))
    for (cut <- 0 until bytes.length) {
      // The array goes on past the cut: the decoder must stop at the slice's end, not the array's.
      val e = intercept[MalformedMessageException](Envelope.decode(bytes, 0, cut))
      assert(e.errorId != null, s"cut $cut")
    }
  }

  test("a length that runs past the end is Truncated, a negative one BadPayload, a bad branch BadPayload") {
    val bytes = envelope("DT", payload, schemaId = id)
    assert(bytes(10) == 0x40, "the messageSchemaId length, 32 zig-zag encoded")
    // The length replaced by 1000 (zig-zag 2000 = D0 0F): far more than the bytes left.
    val long = bytes.take(10) ++ Array(0xD0.toByte, 0x0F.toByte) ++ bytes.drop(11)
    assert(malformed(long).errorId == ErrorId.Truncated)
    val negative = bytes.clone(); negative(10) = 0x41 // zig-zag -33
    assert(malformed(negative).errorId == ErrorId.BadPayload)
    val branch = bytes.clone(); branch(9) = 0x04 // union index 2 of a 2-branch union
    assert(malformed(branch).errorId == ErrorId.BadPayload)
  }

  test("invalid UTF-8 in a string field is malformed, never replaced") {
    val bytes = envelope("DT", payload, schemaId = id)
    val broken = bytes.clone(); broken(11) = 0xC3.toByte; broken(12) = 0x28
    val e = malformed(broken)
    assert(e.errorId == ErrorId.InvalidUtf8 || e.errorId == ErrorId.BadPayload, e.errorId)
  }
}
