package io.sparkreplicate

import scala.collection.mutable
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.catalyst.{ChangeRowDecoder, OutputColumns => C, Outcome}
import io.sparkreplicate.codec.{ChangeMask, Envelope, MessageKind, MetadataMessage}

/**
 * Seeded fuzzing of everything that touches message bytes: mutated and random envelopes go
 * through the data decoder (as a reader would) and, when they are metadata, through the
 * metadata decoder (as the schema-topic scan would). Each must end in an Outcome or a
 * MalformedMessageException; anything else (a ClassCastException, an ArrayIndexOutOfBounds,
 * an OutOfMemoryError from a forged length, a hang) is a bug.
 *
 * The seeded run reaches an embedded metadata schema that types a number field (`ordinal`,
 * `length`, ...) as string/bytes/boolean, which once escaped as a raw ClassCastException.
 *
 * `-Dreplicate.fuzz.cases=N` raises the number of cases, `-Dreplicate.fuzz.seed=S` changes the seed.
 */
class DecoderFuzzSuite extends AnyFunSuite {
  import DecoderFuzzSuite.Finding

  private val cases = sys.props.get("replicate.fuzz.cases").map(_.toInt).getOrElse(5000)
  private val seed = sys.props.get("replicate.fuzz.seed").map(_.toLong).getOrElse(0x5EEDL)

  private lazy val reg = registry(salaries, salaries70, salariesNullableData, departments)

  /** Valid messages of every shape, the material the mutations start from. */
  private lazy val valid: IndexedSeq[(String, Array[Byte])] = {
    val full = cdcHeaders("UPDATE", changeMask = ChangeMask.encode(Seq(2), 4), columnMask = unhex("0F"))
    val newer = cdcHeaders("UPDATE", changeMask = unhex("02"), columnMask = unhex("0F"),
      extra = Map("transactionEventCounter" -> 7L, "transactionLastEvent" -> true, "externalSchemaId" -> "ext"))
    IndexedSeq(
      "DT 6.3 by id" -> dataEnvelope(salaries, salary(10001, 62102), salary(10001, 60117), full),
      "DT 7.0 by id" -> dataEnvelope(salaries70, salary(10002, 1), salary(10002, 2), newer),
      "DT self-describing" -> dataEnvelope(salaries, salary(10003, 3), headers = full, byId = false, embed = true),
      "DT id and schema" -> dataEnvelope(salaries70, salary(10004, 4), headers = newer, embed = true),
      "DT data null" -> dataEnvelope(salariesNullableData, null, salary(10005, 5), cdcHeaders("DELETE")),
      "DT REFRESH" -> dataEnvelope(salaries, salary(14472, 49592), headers = cdcHeaders("REFRESH", "", "", "", "")),
      "DT other table" -> dataEnvelope(departments, Map("dept_no" -> "d001", "budget" -> BigDecimal("1.50"))),
      "DT with headers map" -> envelope("DT", dataPayload(salaries63Schema, salary(1, 1), null, full),
        SampleSchemaId, headers = Map("k" -> "v", "key2" -> "value2")),
      "MD sample" -> sampleMetadataEnvelope,
      "MD departments" -> departments.metadataEnvelope())
  }

  /** Byte sequences that make a length, count, index or varint absurd when written anywhere. */
  private val hostile: IndexedSeq[Array[Byte]] = IndexedSeq(
    Array(0xFE, 0xFF, 0xFF, 0xFF, 0x0F), // 2^31 - 1
    Array(0xFE, 0xFF, 0xFF, 0xFF, 0x07), // 2^30 - 1, as zig-zag
    Array(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), // an 11-byte varint
    Array(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01), // Long.MinValue
    Array(0x01), Array(0x03), Array(0x7F), Array(0x80, 0x01)
  ).map(_.map(_.toByte))

  private def mutate(r: Random, original: Array[Byte], depth: Int = 0): (String, Array[Byte]) = {
    val b = original.clone()
    def at(n: Int = b.length) = if (n <= 0) 0 else r.nextInt(n)
    def randomBytes(n: Int) = Array.fill(n)(r.nextInt(256).toByte)
    r.nextInt(10) match {
      case 0 if b.nonEmpty => val i = at(); b(i) = (b(i) ^ (1 << r.nextInt(8))).toByte; s"flip bit at $i" -> b
      case 1 if b.nonEmpty =>
        val i = at(); val n = 1 + r.nextInt(4)
        (i until math.min(b.length, i + n)).foreach(j => b(j) = r.nextInt(256).toByte); s"overwrite $n at $i" -> b
      case 2 => val i = at(b.length + 1); val n = 1 + r.nextInt(8); s"insert $n at $i" -> (b.take(i) ++ randomBytes(n) ++ b.drop(i))
      case 3 => val i = at(); val n = 1 + r.nextInt(16); s"delete $n at $i" -> (b.take(i) ++ b.drop(i + n))
      case 4 => val i = at(); s"truncate to $i" -> b.take(i)
      case 5 =>
        val i = at(); val h = hostile(r.nextInt(hostile.length))
        if (r.nextBoolean()) s"hostile ${hex(h)} over $i" -> (b.take(i) ++ h ++ b.drop(i + h.length))
        else s"hostile ${hex(h)} inserted at $i" -> (b.take(i) ++ h ++ b.drop(i))
      case 6 => val i = at(); val n = 1 + r.nextInt(32); s"duplicate $n at $i" -> (b.take(i + n) ++ b.slice(i, i + n) ++ b.drop(i + n))
      case 7 => val n = r.nextInt(300); s"random $n bytes" -> randomBytes(n)
      case 8 => val n = r.nextInt(200); s"magic + random $n bytes" -> (Envelope.Magic ++ randomBytes(n))
      case _ if depth < 3 =>
        val (first, once) = mutate(r, b, depth + 1)
        val (second, twice) = mutate(r, once, depth + 1)
        s"$first, then $second" -> twice
      case _ => "unchanged" -> b
    }
  }

  private val typeTokens = IndexedSeq("\"int\"", "\"long\"", "\"string\"", "\"bytes\"", "\"boolean\"", "\"null\"",
    "\"double\"", "\"Data\"")

  /**
   * One fuzz input from a valid message: the whole envelope mutated, or only its payload (re-wrapped
   * in a valid envelope, to reach the payload decoders), or its embedded schema's text.
   */
  private def variant(r: Random, original: Array[Byte]): (String, Array[Byte]) = {
    val e = Envelope.decode(original, 0, original.length)
    val kind = if (e.kind == MessageKind.Metadata) "MD" else "DT"
    val payload = original.slice(e.payloadOffset, e.payloadOffset + e.payloadLength)
    r.nextInt(20) match {
      case n if n < 9 => mutate(r, original)
      case n if n < 17 =>
        val (mutation, mutated) = mutate(r, payload)
        s"payload: $mutation" -> envelope(kind, mutated, e.schemaId, e.messageSchema)
      case _ if e.messageSchema != null =>
        val text = e.messageSchema
        val found = typeTokens.filter(text.contains)
        val from = found(r.nextInt(found.size))
        val to = typeTokens(r.nextInt(typeTokens.size))
        val at = Iterator.iterate(text.indexOf(from))(i => text.indexOf(from, i + 1)).takeWhile(_ >= 0).toIndexedSeq
        val i = at(r.nextInt(at.size))
        s"schema: $from at $i to $to" ->
          envelope(kind, payload, e.schemaId, text.substring(0, i) + to + text.substring(i + from.length))
      case _ => mutate(r, original)
    }
  }

  private def run(what: String, input: Array[Byte], decode: => Any, outcomes: mutable.Map[String, Int],
      findings: mutable.Buffer[Finding]): Unit =
    try {
      decode match {
        case o: Outcome => outcomes(o.toString) = outcomes.getOrElse(o.toString, 0) + 1
        case _ => outcomes("decoded") = outcomes.getOrElse("decoded", 0) + 1
      }
    } catch {
      case e: MalformedMessageException =>
        outcomes(e.errorId.name) = outcomes.getOrElse(e.errorId.name, 0) + 1
      case e: Throwable => findings += Finding(what, input, e)
    }

  test(s"$cases mutated and random envelopes end in an Outcome or a MalformedMessageException (seeded)") {
    val r = new Random(seed)
    val decoder = new ChangeRowDecoder(readSpec(reg, salaries.name))
    val outcomes = mutable.Map.empty[String, Int]
    val metadataOutcomes = mutable.Map.empty[String, Int]
    val findings = mutable.Buffer.empty[Finding]
    val started = System.nanoTime()
    for (i <- 0 until cases) {
      val (name, original) = valid(r.nextInt(valid.length))
      val (mutation, input) = variant(r, original)
      val what = s"case $i (seed $seed): $name, $mutation"
      run(what, input, decoder.decode(input, 0, input.length), outcomes, findings)
      // What the schema-topic scan does with a message that still looks like metadata.
      val metadata = try Some(Envelope.decode(input, 0, input.length)).filter(_.kind == MessageKind.Metadata)
        catch { case _: MalformedMessageException => None }
      metadata.foreach(e => run(what + " [metadata]", input, MetadataMessage.decode(input, e, "fuzz"), metadataOutcomes, findings))
    }
    val seconds = (System.nanoTime() - started) / 1e9
    info(f"$cases cases in $seconds%.1f s; data decoder: ${outcomes.toSeq.sortBy(-_._2).mkString(", ")}")
    info(s"metadata decoder: ${metadataOutcomes.toSeq.sortBy(-_._2).mkString(", ")}")
    assert(findings.isEmpty, s"${findings.size} of $cases cases broke the contract, e.g.:\n" +
      findings.groupBy(f => f.error.getClass.getName + f.error.getMessage.take(60)).values.map(_.head).take(12).mkString("\n"))
    // The mutations reached deep enough to matter: rows, and failures of several kinds.
    assert(outcomes.getOrElse("Row", 0) > 0)
    assert(outcomes.keySet.count(_.startsWith("REPLICATE_")) >= 5, outcomes)
  }

  test("after any amount of garbage the same decoder still decodes valid messages correctly") {
    val r = new Random(seed + 1)
    val decoder = new ChangeRowDecoder(readSpec(reg, salaries.name))
    for (_ <- 0 until 500) {
      val (_, input) = variant(r, valid(r.nextInt(valid.length))._2)
      try decoder.decode(input, 0, input.length) catch { case _: ReplicateException => () }
    }
    val bytes = dataEnvelope(salaries70, salary(77, 7700), headers = cdcHeaders("INSERT",
      extra = Map("transactionEventCounter" -> 1L, "transactionLastEvent" -> false, "externalSchemaId" -> null)))
    assert(decoder.decode(bytes, 0, bytes.length) == Outcome.Row)
    val row = rowValues(decoder.out.row, decoder.out.required)
    assert(row("emp_no") == 77 && row("salary") == 7700 && row(C.TableVersion) == 2L && row(C.BeforeImage) == null)
  }

  test("hostile lengths in a payload's strings, bytes and masks fail fast without allocating them") {
    val payload = dataPayload(salaries63Schema, salary(1, 1), null,
      cdcHeaders("UPDATE", changeMask = unhex("01"), columnMask = unhex("0F")))
    val decoder = new ChangeRowDecoder(readSpec(reg, salaries.name))
    for (i <- payload.indices; h <- hostile) {
      val forged = payload.take(i) ++ h ++ payload.drop(i + 1)
      val bytes = envelope("DT", forged, SampleSchemaId)
      try decoder.decode(bytes, 0, bytes.length) catch {
        case _: MalformedMessageException => ()
        case e: Throwable => fail(s"hostile ${hex(h)} at payload byte $i: $e", e)
      }
    }
  }
}

object DecoderFuzzSuite {
  /** One input that broke the contract, with what is needed to reproduce it. */
  private final case class Finding(what: String, input: Array[Byte], error: Throwable) {
    override def toString: String =
      s"$what (${input.length} bytes ${hex(input.take(48))}...): ${error.getClass.getName}: ${String.valueOf(error.getMessage).take(300)}"
  }
}
