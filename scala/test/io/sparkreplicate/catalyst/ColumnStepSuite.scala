package io.sparkreplicate.catalyst

import java.io.ByteArrayOutputStream
import java.math.{BigDecimal => JBigDecimal, BigInteger}
import java.nio.charset.StandardCharsets.UTF_8
import java.time.{LocalDateTime, ZoneOffset}

import org.apache.avro.Schema
import org.apache.avro.io.{Encoder, EncoderFactory}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalacheck.{Arbitrary, Gen}
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.{ColumnInfo, DecodeStep, SliceDecoder, SourceText}

/**
 * Every specialised column step (one per Avro type and conversion), plain and as `[null, T]` in
 * both branch orders: random values written by Avro's own encoder read back as the Spark value
 * computed independently here, nulls as null, and a branch out of range as malformed.
 */
class ColumnStepSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 200)

  private val untyped = ColumnTyping(sourceTypes = false, ZoneOffset.UTC, widenToString = false)
  private val typed = ColumnTyping(sourceTypes = true, ZoneOffset.UTC, widenToString = false)
  private def column(sourceType: String = "", precision: Int = 0, scale: Int = 0) =
    ColumnInfo("C", 1, sourceType, 0, precision, scale, 0, nullable = true)

  /**
   * One Avro type read as `target`: `write` encodes a value, `expected` is what the row then holds
   * (as `InternalRow.get` returns it, strings and decimals compared by value).
   */
  private case class Case[T](label: String, avro: String, target: DataType, values: Gen[T], write: (Encoder, T) => Unit,
      expected: T => Any, info: ColumnInfo = column(), typing: ColumnTyping = untyped, header: Boolean = false)

  private val unicode = Gen.asciiPrintableStr.flatMap(a => Arbitrary.arbitrary[String].map(b => a + b.filterNot(Character.isSurrogate)))
  private def unscaled(v: BigInteger): Array[Byte] = v.toByteArray
  private def decimalText(precision: Int, scale: Int): Gen[String] =
    Gen.choose(BigInt(10).pow(precision) * -1 + 1, BigInt(10).pow(precision) - 1).map(u => new JBigDecimal(u.bigInteger, scale).toPlainString)

  private val cases: Seq[Case[_]] = Seq(
    Case[Int]("int", "\"int\"", IntegerType, Arbitrary.arbitrary[Int], _.writeInt(_), identity),
    Case[Int]("int as a long header", "\"int\"", LongType, Arbitrary.arbitrary[Int], _.writeInt(_), _.toLong, header = true),
    Case[Int]("int widened to long", "\"int\"", LongType, Arbitrary.arbitrary[Int], _.writeInt(_), _.toLong),
    Case[Int]("date", """{"type":"int","logicalType":"date"}""", DateType, Gen.choose(-800000, 800000), _.writeInt(_), identity),
    Case[Long]("long", "\"long\"", LongType, Arbitrary.arbitrary[Long], _.writeLong(_), identity),
    Case[Long]("timestamp-micros", """{"type":"long","logicalType":"timestamp-micros"}""", TimestampType,
      Arbitrary.arbitrary[Long], _.writeLong(_), identity),
    Case[Long]("timestamp-millis", """{"type":"long","logicalType":"timestamp-millis"}""", TimestampType,
      Gen.choose(Long.MinValue / 1000, Long.MaxValue / 1000), _.writeLong(_), _ * 1000),
    Case[Int]("time-millis", """{"type":"int","logicalType":"time-millis"}""", StringType, Gen.choose(0, 86399999),
      _.writeInt(_), ms => UTF8String.fromString(SourceText.formatTime(ms * 1000L, "C"))),
    Case[Long]("time-micros", """{"type":"long","logicalType":"time-micros"}""", StringType, Gen.choose(0L, 86399999999L),
      _.writeLong(_), us => UTF8String.fromString(SourceText.formatTime(us, "C"))),
    Case[Float]("float", "\"float\"", FloatType, Arbitrary.arbitrary[Float], _.writeFloat(_), identity),
    Case[Float]("float as a double header", "\"float\"", DoubleType, Arbitrary.arbitrary[Float], _.writeFloat(_), _.toDouble,
      header = true),
    Case[Float]("float widened to double", "\"float\"", DoubleType, Arbitrary.arbitrary[Float], _.writeFloat(_), _.toDouble),
    Case[Double]("double", "\"double\"", DoubleType, Arbitrary.arbitrary[Double], _.writeDouble(_), identity),
    Case[Boolean]("boolean", "\"boolean\"", BooleanType, Arbitrary.arbitrary[Boolean], _.writeBoolean(_), identity),
    Case[String]("string", "\"string\"", StringType, unicode, _.writeString(_), UTF8String.fromString),
    Case[Int]("enum", """{"type":"enum","name":"E","symbols":["A","BB","CCC"]}""", StringType, Gen.choose(0, 2),
      _.writeEnum(_), i => UTF8String.fromString(Seq("A", "BB", "CCC")(i))),
    Case[Array[Byte]]("bytes", "\"bytes\"", BinaryType, Gen.listOf(Arbitrary.arbitrary[Byte]).map(_.toArray),
      _.writeBytes(_), identity),
    Case[Array[Byte]]("fixed", """{"type":"fixed","name":"F","size":3}""", BinaryType,
      Gen.listOfN(3, Arbitrary.arbitrary[Byte]).map(_.toArray), _.writeFixed(_), identity),
    // Decimals within a long and beyond it, from bytes and fixed, and NUMERIC as unscaled bytes or text.
    Case[BigInteger]("decimal(10, 2) bytes", """{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}""",
      DecimalType(10, 2), Gen.choose(-9999999999L, 9999999999L).map(BigInteger.valueOf),
      (e, v) => e.writeBytes(unscaled(v)), v => Decimal(new JBigDecimal(v, 2))),
    Case[BigInteger]("decimal(30, 4) bytes", """{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}""",
      DecimalType(30, 4), Gen.choose(BigInt(10).pow(30) * -1 + 1, BigInt(10).pow(30) - 1).map(_.bigInteger),
      (e, v) => e.writeBytes(unscaled(v)), v => Decimal(new JBigDecimal(v, 4))),
    Case[BigInteger]("decimal(40, 2) bytes, beyond Spark's decimals", """{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}""",
      StringType, Gen.choose(BigInt(10).pow(40) * -1 + 1, BigInt(10).pow(40) - 1).map(_.bigInteger),
      (e, v) => e.writeBytes(unscaled(v)), v => UTF8String.fromString(new JBigDecimal(v, 2).toPlainString)),
    Case[BigInteger]("decimal(6, 3) fixed", """{"type":"fixed","name":"D","size":4,"logicalType":"decimal","precision":6,"scale":3}""",
      DecimalType(6, 3), Gen.choose(-999999L, 999999L).map(BigInteger.valueOf),
      (e, v) => e.writeFixed(Array.fill[Byte](4 - v.toByteArray.length)(if (v.signum < 0) -1 else 0) ++ v.toByteArray),
      v => Decimal(new JBigDecimal(v, 3))),
    Case[BigInteger]("NUMERIC(12, 2) as unscaled bytes", "\"bytes\"", DecimalType(12, 2),
      Gen.choose(-999999999999L, 999999999999L).map(BigInteger.valueOf), (e, v) => e.writeBytes(unscaled(v)),
      v => Decimal(new JBigDecimal(v, 2)), column("NUMERIC", 12, 2), typed),
    Case[BigInteger]("NUMERIC(8, -2) as unscaled bytes", "\"bytes\"", DecimalType(10, 0),
      Gen.choose(-99999999L, 99999999L).map(BigInteger.valueOf), (e, v) => e.writeBytes(unscaled(v)),
      v => Decimal(new JBigDecimal(v, -2).setScale(0)), column("NUMERIC", 8, -2), typed),
    Case[String]("NUMERIC(12, 2) as text", "\"string\"", DecimalType(12, 2), decimalText(12, 2), _.writeString(_),
      s => Decimal(new JBigDecimal(s).setScale(2)), column("NUMERIC", 12, 2), typed),
    Case[String]("NUMERIC(25, 5) as text", "\"string\"", DecimalType(25, 5), decimalText(25, 5), _.writeString(_),
      s => Decimal(new JBigDecimal(s).setScale(5)), column("NUMERIC", 25, 5), typed),
    Case[String]("NUMERIC without precision as text", "\"string\"", StringType, decimalText(20, 3), _.writeString(_),
      s => UTF8String.fromString(new JBigDecimal(s).toPlainString), column("NUMERIC"), typed),
    Case[Long]("DATETIME as text", "\"string\"", TimestampType, Gen.choose(-30000000000L, 250000000000L),
      (e, seconds) => e.writeString(LocalDateTime.ofEpochSecond(seconds, 123456000, ZoneOffset.UTC).toString.replace('T', ' ')),
      _ * 1000000L + 123456, column("DATETIME", 26, 6), typed),
    Case[Int]("INT4 as text", "\"string\"", IntegerType, Arbitrary.arbitrary[Int], (e, v) => e.writeString(v.toString),
      identity, column("INT4"), typed),
    Case[Long]("INT8 as text", "\"string\"", LongType, Arbitrary.arbitrary[Long], (e, v) => e.writeString(v.toString),
      identity, column("INT8"), typed))

  private val nullabilities = Seq("plain" -> ((t: String) => t), "[null, T]" -> ((t: String) => s"""["null",$t]"""),
    "[T, null]" -> ((t: String) => s"""[$t,"null"]"""))

  /**
   * The ways a record's steps run: each step alone, compiled by [[StepChain]] (which reads the
   * common values inline), and in the plain loop it falls back on past its maximum of shapes.
   */
  private val runners = Seq[(String, Array[DecodeStep] => DecodeStep)](
    "the steps" -> (steps => in => steps.foreach(_(in))),
    "compiled" -> (steps => StepChain(steps)),
    "the plain loop" -> (steps => new StepChain(maxShapes = 0)(steps)))

  private def step(c: Case[_], schema: Schema, row: InternalRow, ordinal: Int): DecodeStep =
    if (c.header) ValueWriters.column(schema, c.target, row, ordinal, "C")
    else ValueWriters.tableColumn(schema, c.info, c.typing, c.target, row, ordinal)

  /**
   * Decodes `bytes` with the step of `schema` (run by `run`) into slot 0 of a fresh reader row:
   * the row's value and the bytes left, or the error.
   */
  private def outcome(c: Case[_], schema: Schema, bytes: Array[Byte],
      run: Array[DecodeStep] => DecodeStep): Either[ReplicateException, (Any, Int)] = {
    val row = StringSlot.row(Seq(c.target))
    val decoder = run(Array(step(c, schema, row, 0)))
    // Sentinel bytes around the value: a step must read exactly its own.
    val in = new SliceDecoder().reset(Array[Byte](7, 7) ++ bytes ++ Array[Byte](9), 2, bytes.length)
    try { decoder(in); Right((row.get(0, c.target), in.remaining)) }
    catch { case e: ReplicateException => Left(e) }
  }

  /** What the steps decode, checked to be what the compiled and looped steps decode too. */
  private def agreed(c: Case[_], schema: Schema, bytes: Array[Byte]): Either[ReplicateException, (Any, Int)] = {
    val outcomes = runners.map { case (how, run) => how -> outcome(c, schema, bytes, run) }
    for ((how, other) <- outcomes.tail) assert(agree(outcomes.head._2, other), s"${c.label}: $how $other, the steps ${outcomes.head._2}")
    outcomes.head._2
  }

  /** The value the steps decode, read whole (the same, compiled or looped). */
  private def decode(c: Case[_], schema: Schema, bytes: Array[Byte]): Any = agreed(c, schema, bytes) match {
    case Right((value, left)) => assert(left == 0, s"${c.label}: $left bytes left"); value
    case Left(error) => throw error
  }

  private def agree(a: Either[ReplicateException, (Any, Int)], b: Either[ReplicateException, (Any, Int)]): Boolean =
    (a, b) match {
      case (Right((x, n)), Right((y, m))) => same(x, y) && n == m
      case (Left(x), Left(y)) => x.errorId == y.errorId && x.getMessage == y.getMessage
      case _ => false
    }

  private def encoded(write: Encoder => Unit): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val encoder = EncoderFactory.get.binaryEncoder(out, null)
    write(encoder)
    encoder.flush()
    out.toByteArray
  }

  /** A value (None: null) as a column of `c`, with its union branch when `nullIndex` >= 0. */
  private def write(e: Encoder, c: Case[_], nullIndex: Int, value: Option[Any]): Unit = {
    if (nullIndex >= 0) e.writeIndex(if (value.isEmpty) nullIndex else 1 - nullIndex)
    value.foreach(v => c.write.asInstanceOf[(Encoder, Any) => Unit](e, v))
  }

  private def same(actual: Any, expected: Any): Boolean = (actual, expected) match {
    case (a: Array[Byte], e: Array[Byte]) => a.sameElements(e)
    case (a: Float, e: Float) => java.lang.Float.compare(a, e) == 0
    case (a: Double, e: Double) => java.lang.Double.compare(a, e) == 0
    case _ => actual == expected
  }

  for (c <- cases; (nullability, wrap) <- nullabilities) {
    test(s"${c.label}, $nullability: values and nulls read back as written") {
      val schema = new Schema.Parser().parse(wrap(c.avro))
      val nullIndex = ValueWriters.nullIndex(schema, "C")
      val values = if (nullIndex < 0) c.values.map(Some(_)) else Gen.option(c.values)
      forAll(values) { value =>
        val bytes = encoded(write(_, c, nullIndex, value))
        val expected = value.map(c.expected.asInstanceOf[Any => Any]).orNull
        val actual = decode(c, schema, bytes)
        assert(same(actual, expected), s"${c.label}: read $actual, expected $expected")
      }
      if (nullIndex >= 0) {
        val e = intercept[MalformedMessageException](decode(c, schema, encoded(_.writeIndex(2))))
        assert(e.errorId == ErrorId.BadPayload && e.getMessage.contains("union branch 2"), e.getMessage)
      }
    }
  }

  /** Longs of every varint length, from 1 to 10 bytes. */
  private val longs = Gen.choose(0, 63).flatMap(bits => Gen.choose(-(1L << bits), 1L << bits))

  /**
   * Variants of a value's bytes: cut short, one byte changed, a long varint where one byte would
   * do, or any long after the first byte (the branch of a nullable value) or instead of it all.
   */
  private def damaged(bytes: Array[Byte]): Gen[Array[Byte]] = Gen.oneOf(
    Gen.choose(0, bytes.length).map(bytes.take),
    Gen.zip(Gen.choose(0, 1), longs).map { case (kept, l) => bytes.take(kept) ++ encoded(_.writeLong(l)) },
    Gen.zip(Gen.choose(0, bytes.length - 1), Arbitrary.arbitrary[Byte]).map { case (at, b) => bytes.updated(at, b) },
    Gen.choose(1, 3).map(extra => Array.fill(extra)(0x80.toByte).updated(0, (bytes(0) | 0x80).toByte) ++ Array[Byte](0) ++
      bytes.drop(1)).filter(_ => bytes(0) >= 0))

  for (c <- cases; (nullability, wrap) <- nullabilities) {
    test(s"${c.label}, $nullability: damaged bytes fail or read the same, compiled, looped or step by step") {
      val schema = new Schema.Parser().parse(wrap(c.avro))
      val nullIndex = ValueWriters.nullIndex(schema, "C")
      val values = if (nullIndex < 0) c.values.map(Some(_)) else Gen.option(c.values)
      val inputs = values.map(value => encoded(write(_, c, nullIndex, value))).filter(_.nonEmpty).flatMap(damaged)
      forAll(inputs)(bytes => agreed(c, schema, bytes))
    }
  }

  test("a record of every kind of column reads the same compiled (in several methods), looped or step by step") {
    val columns = for (c <- cases; (_, wrap) <- nullabilities) yield (c, new Schema.Parser().parse(wrap(c.avro)))
    assert(columns.size > 3 * StepChain.MaxCalls)
    val record = Gen.sequence[Seq[Option[Any]], Option[Any]](columns.map { case (c, schema) =>
      if (ValueWriters.nullIndex(schema, "C") < 0) c.values.map(Some(_)) else Gen.option(c.values)
    })
    forAll(record) { values =>
      val bytes = encoded { e =>
        for (((c, schema), value) <- columns.zip(values)) write(e, c, ValueWriters.nullIndex(schema, "C"), value)
      }
      val read = runners.map { case (how, run) =>
        val row = StringSlot.row(columns.map(_._1.target))
        val in = new SliceDecoder().reset(bytes, 0, bytes.length)
        run(columns.zipWithIndex.map { case ((c, schema), i) => step(c, schema, row, i) }.toArray)(in)
        assert(in.isEnd, s"$how: ${in.remaining} bytes left")
        how -> columns.indices.map(i => row.get(i, columns(i)._1.target))
      }
      for ((how, row) <- read.tail; i <- columns.indices)
        assert(same(row(i), read.head._2(i)), s"${columns(i)._1.label}: $how read ${row(i)}, the steps ${read.head._2(i)}")
    }
  }

  test("a string that is not valid UTF-8 is malformed, plain or nullable") {
    for ((_, wrap) <- nullabilities) {
      val schema = new Schema.Parser().parse(wrap("\"string\""))
      val nullIndex = ValueWriters.nullIndex(schema, "C")
      val bytes = encoded { e =>
        if (nullIndex >= 0) e.writeIndex(1 - nullIndex)
        e.writeBytes(Array[Byte]('a', 0xc0.toByte, 0x80.toByte))
      }
      val e = intercept[MalformedMessageException](decode(cases.find(_.label == "string").get, schema, bytes))
      assert(e.errorId == ErrorId.InvalidUtf8)
    }
  }

  test("a string slot reads the decoder's current array; its copy keeps the string once the decoder moves on") {
    val row = StringSlot.row(Seq(StringType))
    val slot = StringSlot.of(row, 0)
    val in = new SliceDecoder().reset("xxhello".getBytes(UTF_8), 0, 7)
    slot.set(in, 2, 5)
    val copy = slot.copy()
    // The next message, in an array of its own, as from_replicate decodes one.
    in.reset("yyWORLD".getBytes(UTF_8), 0, 7)
    assert(row.getUTF8String(0).toString == "WORLD" && copy.boxed.toString == "hello")
    slot.isNull = true
    assert(slot.copy().isNull && slot.copy().boxed == null)
  }

  test("a string slot hands out one view, re-pointed per value, with nothing worked out for the last value kept") {
    val row = StringSlot.row(Seq(StringType))
    val slot = StringSlot.of(row, 0)
    val in = new SliceDecoder().reset("héllo wörld".getBytes(UTF_8), 0, "héllo wörld".getBytes(UTF_8).length)
    slot.set(in, 0, 6) // "héllo"
    val first = row.getUTF8String(0)
    // What Spark caches in a UTF8String once asked: its characters, validity, ASCII-ness.
    assert(first.numChars == 5 && first.isValid && !first.isFullAscii && first.toString == "héllo")
    slot.set(in, 7, 6) // "wörld"
    val second = row.getUTF8String(0)
    assert(second eq first, "one view per slot")
    assert(second.numChars == 5 && second.toString == "wörld")
    in.reset("ab".getBytes(UTF_8), 0, 2)
    slot.set(in, 0, 2)
    assert(row.getUTF8String(0).numChars == 2 && row.getUTF8String(0).isFullAscii, "the caches of the last value are reset")
    assert(row.getUTF8String(0).toUpperCase.toString == "AB")
    in.reset(Array[Byte](0x61, 0xff.toByte), 0, 2)
    slot.set(in, 0, 2)
    assert(!row.getUTF8String(0).isValid && row.getUTF8String(0).makeValid.toString == "a\ufffd",
      "a valid value's validity is not taken for the next")
  }

  test("a slot assigned from another keeps the value where it lies once the other's view moves on") {
    val (from, to) = (StringSlot.row(Seq(StringType)), StringSlot.row(Seq(StringType)))
    val in = new SliceDecoder().reset("onetwo".getBytes(UTF_8), 0, 6)
    StringSlot.of(from, 0).set(in, 0, 3)
    StringSlot.of(to, 0).assign(StringSlot.of(from, 0))
    StringSlot.of(from, 0).set(in, 3, 3)
    assert(from.getUTF8String(0).toString == "two" && to.getUTF8String(0).toString == "one")
    StringSlot.of(from, 0).update(UTF8String.fromString("whole"))
    StringSlot.of(to, 0).assign(StringSlot.of(from, 0))
    assert(to.getUTF8String(0).toString == "whole")
    StringSlot.of(from, 0).isNull = true
    StringSlot.of(to, 0).assign(StringSlot.of(from, 0))
    assert(to.isNullAt(0))
  }

  test("decimal text: the allocation-free parse agrees with BigDecimal's on any text, value or error") {
    val alphabet = Gen.frequency(10 -> Gen.numChar, 2 -> Gen.const('.'), 1 -> Gen.oneOf('-', '+', 'e', 'E', ' ', 'x'))
    val texts = Gen.oneOf(Gen.listOf(alphabet).map(_.mkString), decimalText(18, 4), decimalText(20, 2),
      decimalText(6, 0).map(_ + ".000"), decimalText(6, 6).map("0" * 30 + _))
    for (t <- Seq(DecimalType(4, 2), DecimalType(18, 4), DecimalType(19, 0), DecimalType(38, 10))) {
      forAll(texts) { s =>
        val bytes = s"[$s]".getBytes(UTF_8)
        def outcome(f: => Decimal): Either[ErrorId, Decimal] =
          try Right(f.clone()) catch { case e: ReplicateException => Left(e.errorId) }
        val row = StringSlot.row(Seq(t))
        val fast = outcome { DecimalTarget(row, 0, t, "C").setText(bytes, 1, bytes.length - 2); row.getDecimal(0, t.precision, t.scale) }
        val reference = outcome(ValueWriters.fit(Decimal(SourceText.parseDecimal(bytes, 1, bytes.length - 2, t.scale, "C")), t, "C"))
        assert(fast == reference, s"`$s` as $t")
      }
    }
  }
}
