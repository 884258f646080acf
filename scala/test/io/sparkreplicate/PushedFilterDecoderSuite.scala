package io.sparkreplicate

import org.apache.spark.sql.sources.{EqualTo, Filter, In, IsNull, Not}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.catalyst.{ChangeRowDecoder, MessageFilter, OutputColumns => C, Outcome}

/**
 * The pushed filter inside the decoder: versions removed by id before the payload is touched,
 * operations decided by peeking at `headers.operation` (enum, string, nullable or absent), rows
 * decoded only when kept, and malformed payloads the peek cannot read left to the full decode.
 */
class PushedFilterDecoderSuite extends AnyFunSuite {

  private val enumOperation =
    """{"name":"operation","type":{"type":"enum","name":"operation","symbols":["INSERT","UPDATE","DELETE","REFRESH"]}},"""
  private def variant(id: Char, version: Long, operation: String) = TableDef(id.toString * 32, "employees",
    "salaries", version, salariesColumns, dataSchemaJson(salariesColumns).replace(enumOperation, operation))
  /** Version 4 sends the operation as `[null, string]`; version 5 sends none. */
  private lazy val stringOperation = variant('4', 4, """{"name":"operation","type":["null","string"]},""")
  private lazy val noOperation = variant('5', 5, "")

  private lazy val reg = registry(salaries, salaries70, stringOperation, noOperation, departments)

  private def decoder(filters: Filter*): ChangeRowDecoder = {
    val spec = readSpec(reg, salaries.name)
    new ChangeRowDecoder(if (filters.isEmpty) spec else spec.copy(filter = MessageFilter.push(filters, ParseMode.FailFast)._2))
  }

  private def decode(dec: ChangeRowDecoder, bytes: Array[Byte]): Outcome = dec.decode(bytes, 0, bytes.length)

  private def message(table: TableDef, operation: String, empNo: Int): Array[Byte] = {
    val headers = if (table == noOperation) cdcHeaders("INSERT") - "operation" else cdcHeaders(operation)
    dataEnvelope(table, salary(empNo, 1000 + empNo), headers = headers)
  }

  private val messages = Seq(
    "v1 INSERT" -> message(salaries, "INSERT", 1), "v1 UPDATE" -> message(salaries, "UPDATE", 2),
    "v2 DELETE" -> message(salaries70, "DELETE", 3), "v4 MERGE" -> message(stringOperation, "MERGE", 4),
    "v4 null" -> message(stringOperation, null, 5), "v4 INSERT" -> message(stringOperation, "INSERT", 6),
    "v5 absent" -> message(noOperation, null, 7))

  /** The messages a filtered decoder returns as rows; the others must be Filtered. */
  private def kept(filters: Filter*): Set[String] = {
    val dec = decoder(filters: _*)
    messages.flatMap { case (name, bytes) =>
      decode(dec, bytes) match {
        case Outcome.Row => Some(name)
        case Outcome.Filtered => None
        case other => fail(s"$name: $other")
      }
    }.toSet
  }

  test("the premise: unfiltered, each message's operation is as named") {
    val dec = decoder()
    val operations = messages.map { case (name, bytes) =>
      assert(decode(dec, bytes) == Outcome.Row)
      name -> rowValues(dec.out.row, dec.out.required)(C.Operation)
    }.toMap
    assert(operations == Map("v1 INSERT" -> "INSERT", "v1 UPDATE" -> "UPDATE", "v2 DELETE" -> "DELETE",
      "v4 MERGE" -> "MERGE", "v4 null" -> null, "v4 INSERT" -> "INSERT", "v5 absent" -> null))
  }

  test("an operation filter keeps exactly the messages whose operation passes, in every schema shape") {
    assert(kept(EqualTo(C.Operation, "INSERT")) == Set("v1 INSERT", "v4 INSERT"))
    assert(kept(IsNull(C.Operation)) == Set("v4 null", "v5 absent"))
    assert(kept(Not(EqualTo(C.Operation, "UPDATE"))) == Set("v1 INSERT", "v2 DELETE", "v4 MERGE", "v4 INSERT"))
    assert(kept(In(C.Operation, Array("MERGE", "DELETE"))) == Set("v2 DELETE", "v4 MERGE"))
    assert(kept(In(C.TableVersion, Array(1L, 4L)), Not(EqualTo(C.Operation, "INSERT"))) == Set("v1 UPDATE", "v4 MERGE"))
  }

  test("a kept message decodes into the same row as without the filter") {
    val bytes = message(salaries70, "DELETE", 3)
    val plain = decoder()
    decode(plain, bytes)
    val filtered = decoder(EqualTo(C.Operation, "DELETE"))
    assert(decode(filtered, bytes) == Outcome.Row)
    assert(rowValues(filtered.out.row, filtered.out.required) == rowValues(plain.out.row, plain.out.required))
  }

  private def malformed(dec: ChangeRowDecoder, bytes: Array[Byte]): ErrorId =
    intercept[MalformedMessageException](decode(dec, bytes)).errorId

  test("a removed version is skipped by id, its payload never read; a self-describing one once matched") {
    val garbage = envelope("DT", Array[Byte](0x7f, 0x7f, 0x7f), salaries.schemaId)
    assert(malformed(decoder(), garbage) == ErrorId.BadPayload)
    assert(decode(decoder(EqualTo(C.TableVersion, 2L)), garbage) == Outcome.Filtered)
    val embedded = dataEnvelope(salaries, salary(1, 1), byId = false, embed = true)
    assert(decode(decoder(EqualTo(C.TableVersion, 2L)), embedded) == Outcome.Filtered)
    assert(decode(decoder(EqualTo(C.TableVersion, 1L)), embedded) == Outcome.Row)
  }

  test("a message removed by its operation is not validated past it; a kept one is") {
    val payload = dataPayload(salaries.dataSchema, salary(1, 1), null, cdcHeaders("UPDATE")) :+ 0.toByte
    val bytes = envelope("DT", payload, salaries.schemaId)
    assert(malformed(decoder(), bytes) == ErrorId.TrailingBytes)
    assert(decode(decoder(EqualTo(C.Operation, "INSERT")), bytes) == Outcome.Filtered)
    assert(malformed(decoder(EqualTo(C.Operation, "UPDATE")), bytes) == ErrorId.TrailingBytes)
  }

  test("a payload the peek cannot read is decoded fully and reported as it would be unfiltered") {
    val payload = dataPayload(salaries.dataSchema, salary(7, 7), null, cdcHeaders("UPDATE"))
    val cut = envelope("DT", payload.take(2), salaries.schemaId)
    assert(malformed(decoder(), cut) == ErrorId.Truncated)
    assert(malformed(decoder(EqualTo(C.Operation, "INSERT")), cut) == ErrorId.Truncated)
    // An operation string that is not UTF-8: the row could not hold it, so the filter cannot decide it.
    val marked = message(stringOperation, "ZZZZ", 9)
    val at = marked.indexOfSlice("ZZZZ".getBytes("US-ASCII"))
    val invalid = marked.patch(at, Array.fill[Byte](4)(0xff.toByte), 4)
    assert(malformed(decoder(), invalid) == ErrorId.InvalidUtf8)
    assert(malformed(decoder(EqualTo(C.Operation, "INSERT")), invalid) == ErrorId.InvalidUtf8)
  }

  test("a `[null, Headers]` record is peeked through its union, as the converter reads it") {
    val schema = dataSchemaJson(salariesColumns)
    val headersType = schema.substring(schema.indexOf("{\"type\":\"record\",\"name\":\"Headers\""), schema.length - 3)
    val nullableHeaders = TableDef("6" * 32, "employees", "salaries", 6, salariesColumns,
      schema.replace(headersType, s"""["null",$headersType]"""))
    val spec = readSpec(registry(nullableHeaders), salaries.name)
    def keptBy(filter: Filter): Seq[Outcome] = {
      val dec = new ChangeRowDecoder(spec.copy(filter = MessageFilter.push(Seq(filter), ParseMode.FailFast)._2))
      Seq(cdcHeaders("UPDATE"), cdcHeaders("INSERT"), null).map(h => decode(dec, dataEnvelope(nullableHeaders, salary(1, 1), headers = h)))
    }
    assert(keptBy(EqualTo(C.Operation, "UPDATE")) == Seq(Outcome.Row, Outcome.Filtered, Outcome.Filtered))
    assert(keptBy(IsNull(C.Operation)) == Seq(Outcome.Filtered, Outcome.Filtered, Outcome.Row))
  }
}
