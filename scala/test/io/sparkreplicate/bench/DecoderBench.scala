package io.sparkreplicate.bench

import java.lang.management.ManagementFactory
import java.math.BigInteger
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.time.{LocalDateTime, ZoneOffset}
import java.time.format.DateTimeFormatter
import java.time.temporal.ChronoUnit

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.generic.{GenericDatumReader, GenericRecord}
import org.apache.avro.io.{BinaryDecoder, DecoderFactory}
import org.apache.avro.util.Utf8
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.DecodeOptions
import io.sparkreplicate.catalyst.{ChangeRowDecoder, OutputColumns => C, Outcome, ReadSpec, TableLayout}
import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}
import io.sparkreplicate.files.{FileOptions, FilePlanner, FileSplit, Framing, MessageSource}

/**
 * Micro-benchmark of the decoder alone, on one thread, with no Spark job: the connector's
 * [[ChangeRowDecoder]] (one reused row, converters built once per schema) against Avro's
 * `GenericDatumReader` followed by a generic converter that matches on each value's type, as
 * code without a per-schema plan does. Both turn every landed message of a generated dataset
 * (held in memory, as the container reader holds a block) into the same output row; the rows
 * are checked equal (as UnsafeRows) before anything is timed. Allocation is measured with
 * `com.sun.management.ThreadMXBean.getThreadAllocatedBytes`.
 *
 * Not a test suite: `make bench` runs it as
 * `bin/sbt "Test/runMain io.sparkreplicate.bench.DecoderBench <dataset> <SCHEMA.TABLE> <messages> <seconds> <out.json>"`.
 */
object DecoderBench {

  final case class Result(key: String, label: String, nsPerMessage: Double, cpuNsPerMessage: Double,
      bytesPerMessage: Double, passes: Int)

  def main(args: Array[String]): Unit = {
    val (root, table, messageArg, secondsArg, out) = args match {
      case Array(root, table, messages, seconds, out) => (root, table, messages, seconds, out)
      case _ => sys.error("arguments: <dataset> <SCHEMA.TABLE> <messages> <seconds> <out.json>")
    }
    val seconds = secondsArg.toDouble
    val warmup = math.max(1.0, seconds / 2)
    val prepared = new Prepared(root, table, messageArg.toInt)
    import prepared.{cases, messages}
    // `-Ddecoderbench.cases=connector,connector_typed` times only those (comparing builds by hand).
    val chosen = sys.props.get("decoderbench.cases").map(_.split(',').toSet)
    val results = cases.filter(c => chosen.forall(_(c._1))).map { case (key, label, one) =>
      val r = measure(key, label, messages.count, one, warmup, seconds)
      println(f"DecoderBench: ${r.label}%-55s ${r.nsPerMessage}%8.0f ns/message (CPU ${r.cpuNsPerMessage}%5.0f) " +
        f"${r.bytesPerMessage}%8.0f bytes/message")
      r
    }
    val byKey = results.map(r => r.key -> r).toMap
    val (speedup, allocation, summary) = (byKey.get("connector"), byKey.get("generic")) match {
      case (Some(connector), Some(generic)) =>
        val speedup = generic.nsPerMessage / connector.nsPerMessage
        val allocation = generic.bytesPerMessage / math.max(1.0, connector.bytesPerMessage)
        (round(speedup), round(allocation), f"ChangeRowDecoder: ${connector.nsPerMessage}%.0f ns and " +
          f"${connector.bytesPerMessage}%.0f bytes per message; GenericDatumReader + generic converter: " +
          f"${generic.nsPerMessage}%.0f ns and ${generic.bytesPerMessage}%.0f bytes: $speedup%.1fx faster, " +
          f"$allocation%.1fx less allocation")
      case _ => (Double.NaN, Double.NaN, "only the chosen cases were timed")
    }
    println(s"DecoderBench: $summary (sink ${prepared.sink})")
    val json = new StringBuilder("{\n")
    json ++= s"""  "messages": ${messages.count},\n  "avg_message_bytes": ${messages.totalBytes / messages.count},\n"""
    json ++= s"""  "seconds_per_case": $seconds,\n  "warmup_seconds": $warmup,\n"""
    json ++= s"""  "jvm": "${System.getProperty("java.vm.name")} ${System.getProperty("java.version")}",\n"""
    def number(x: Double) = if (x.isNaN) "null" else x.toString
    json ++= s"""  "speedup": ${number(speedup)},\n  "allocation_ratio": ${number(allocation)},\n"""
    json ++= s"""  "summary": "$summary",\n  "cases": [\n"""
    json ++= results.map(r => s"""    {"key": "${r.key}", "label": "${r.label}", "ns_per_message": ${round(r.nsPerMessage)}, """ +
      s""""cpu_ns_per_message": ${round(r.cpuNsPerMessage)}, """ +
      s""""bytes_per_message": ${round(r.bytesPerMessage)}, "passes": ${r.passes}}""").mkString(",\n")
    json ++= "\n  ]\n}\n"
    Files.write(Paths.get(out), json.toString.getBytes(StandardCharsets.UTF_8))
  }

  /**
   * The dataset in memory, the decoders built and their rows checked, and every case as a function
   * of the message index. Public, so that [[BuildComparison]] can prepare the cases of another
   * build of the decoder, loaded by a class loader of its own.
   */
  final class Prepared(root: String, table: String, messageCount: Int) {
    var sink = 0L
    val conf = new Configuration()
    // Avro types, as the generic baseline decodes them (and as the benchmark's compared contenders do).
    val supplied = Map("path" -> s"$root/bench", "schemaTopic" -> s"$root/_schema", "table" -> table,
      "sourceTypes" -> "false")
    def optionsWith(extra: (String, String)*) = DecodeOptions.parse(supplied ++ extra)
    val options = optionsWith()
    val fileOptions = FileOptions.parse(supplied, options)
    val registry = schemaRegistry(root, fileOptions, options, conf)
    val spec = readSpec(registry, options)
    // The same read with raw masks only: the difference is what expanding masks into names costs.
    val noMasksSpec = readSpec(registry, optionsWith("expandMasks" -> "false"))
    // The default read: columns typed by the metadata (decimals and timestamps parsed from their text).
    val typedSpec = readSpec(registry, optionsWith("sourceTypes" -> "true"))
    val messages = Messages.load(s"$root/bench", conf, fileOptions, options, messageCount)
    println(s"DecoderBench: ${messages.count} messages of $table (${messages.totalBytes / messages.count} bytes on average)")

    val connector = new ChangeRowDecoder(spec)
    val noMasks = new ChangeRowDecoder(noMasksSpec)
    val noMasksToUnsafe = UnsafeProjection.create(noMasksSpec.required)
    val typed = new ChangeRowDecoder(typedSpec)
    val typedToUnsafe = UnsafeProjection.create(typedSpec.required)
    val generic = new GenericDecoder(spec)
    val toUnsafe = UnsafeProjection.create(spec.required)
    val toUnsafe2 = UnsafeProjection.create(spec.required)

    locally {
      // Same rows, or nothing is timed. The checksums of every case's rows (UnsafeRow hashes, in message
      // order) let two builds be compared by hand: a change to the decoder must not change them.
      var (connectorSum, noMasksSum, typedSum) = (0L, 0L, 0L)
      def mix(sum: Long, row: UnsafeRow) = sum * 31 + row.hashCode
      var i = 0
      while (i < messages.count) {
        val outcome = connector.decode(messages.bytes, messages.offsets(i), messages.lengths(i))
        val row = generic.decode(messages.bytes, messages.offsets(i), messages.lengths(i))
        require(outcome == Outcome.Row && row != null, s"message $i was not decoded into a row")
        require(noMasks.decode(messages.bytes, messages.offsets(i), messages.lengths(i)) == Outcome.Row,
          s"message $i was not decoded into a row without mask expansion")
        require(typed.decode(messages.bytes, messages.offsets(i), messages.lengths(i)) == Outcome.Row,
          s"message $i was not decoded into a typed row")
        val a = toUnsafe(connector.out.row)
        val b = toUnsafe2(row)
        require(a == b, s"message $i: the decoders disagree:\n${connector.out.row}\n$row")
        connectorSum = mix(connectorSum, a)
        noMasksSum = mix(noMasksSum, noMasksToUnsafe(noMasks.out.row))
        typedSum = mix(typedSum, typedToUnsafe(typed.out.row))
        i += 1
      }
      println(s"DecoderBench: both decoders return the same ${messages.count} rows")
      println(f"DecoderBench: row checksums: connector $connectorSum%x, no masks $noMasksSum%x, typed $typedSum%x")
    }

    def consume(row: InternalRow): Unit = sink += row.numFields + (if (row.isNullAt(0)) 0 else row.getLong(0))
    val cases = Seq[(String, String, Int => Unit)](
      ("connector", "connector: ChangeRowDecoder (one reused row)", j => {
        connector.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(connector.out.row)
      }),
      ("connector_own_arrays", "connector, each message first copied to an array of its own (as `from_replicate` gets it)", j => {
        val own = java.util.Arrays.copyOfRange(messages.bytes, messages.offsets(j), messages.offsets(j) + messages.lengths(j))
        connector.decode(own, 0, own.length); consume(connector.out.row)
      }),
      ("connector_no_masks", "connector with `expandMasks` false", j => {
        noMasks.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(noMasks.out.row)
      }),
      ("connector_typed", "connector with `sourceTypes` true (the default)", j => {
        typed.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(typed.out.row)
      }),
      ("generic", "Avro GenericDatumReader + generic converter", j => {
        consume(generic.decode(messages.bytes, messages.offsets(j), messages.lengths(j)))
      }),
      ("connector_unsafe", "connector, then Spark's copy into an UnsafeRow", j => {
        connector.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(toUnsafe(connector.out.row))
      }),
      ("connector_no_masks_unsafe", "connector with `expandMasks` false, then Spark's copy", j => {
        noMasks.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(noMasksToUnsafe(noMasks.out.row))
      }),
      ("connector_typed_unsafe", "connector with `sourceTypes` true, then Spark's copy", j => {
        typed.decode(messages.bytes, messages.offsets(j), messages.lengths(j)); consume(typedToUnsafe(typed.out.row))
      }),
      ("generic_unsafe", "generic, then Spark's copy into an UnsafeRow", j => {
        consume(toUnsafe(generic.decode(messages.bytes, messages.offsets(j), messages.lengths(j))))
      }))
  }

  private def round(x: Double): Double = math.round(x * 10) / 10.0

  /**
   * Warm-up, then whole passes over the messages until `seconds` are up; ns/message is the median
   * pass (the machine is shared), in wall-clock time and in the thread's CPU time (which time
   * spent waiting for a core does not inflate); bytes/message the allocation over all measured passes.
   */
  private def measure(key: String, label: String, count: Int, one: Int => Unit, warmup: Double, seconds: Double): Result = {
    val threads = ManagementFactory.getThreadMXBean.asInstanceOf[com.sun.management.ThreadMXBean]
    val thread = Thread.currentThread.getId
    def pass(): Unit = { var i = 0; while (i < count) { one(i); i += 1 } }
    val warmupEnd = System.nanoTime + (warmup * 1e9).toLong
    while (System.nanoTime < warmupEnd) pass()
    val passes = mutable.ArrayBuffer.empty[Long]
    val cpuPasses = mutable.ArrayBuffer.empty[Long]
    val allocatedBefore = threads.getThreadAllocatedBytes(thread)
    val end = System.nanoTime + (seconds * 1e9).toLong
    while (System.nanoTime < end || passes.size < 3) {
      val t0 = System.nanoTime
      val cpu0 = threads.getCurrentThreadCpuTime
      pass()
      cpuPasses += threads.getCurrentThreadCpuTime - cpu0
      passes += System.nanoTime - t0
    }
    val allocated = threads.getThreadAllocatedBytes(thread) - allocatedBefore
    def median(xs: mutable.ArrayBuffer[Long]) = xs.sorted.apply(xs.size / 2).toDouble / count
    Result(key, label, median(passes), median(cpuPasses), allocated.toDouble / (count.toLong * passes.size), passes.size)
  }

  private def schemaRegistry(root: String, options: FileOptions, decode: DecodeOptions, conf: Configuration)
      : SchemaRegistry = {
    val schemaFiles = Files.list(Paths.get(root, "_schema")).iterator.asScala.toSeq.sortBy(_.toString)
    val versions = schemaFiles.flatMap { p =>
      val length = Files.size(p)
      FilePlanner.scanMetadata(FileSplit(p.toUri.toString, 0, length, length, Framing.Auto), conf, options,
        decode.limits, strict = true)
    }
    SchemaRegistry.build(versions, options.schemaTopic)
  }

  private def readSpec(registry: SchemaRegistry, options: DecodeOptions): ReadSpec = {
    val table = registry.tables.keys.find(_.toString == options.table.get.toString).get
    val layout = TableLayout.of(table, registry.tables(table), options)
    ReadSpec(options, registry, layout, C.schema(layout, options))
  }

  /** The first `limit` landed messages of the data files, copied into one array. */
  final class Messages(val bytes: Array[Byte], val offsets: Array[Int], val lengths: Array[Int], val count: Int) {
    def totalBytes: Long = lengths.take(count).map(_.toLong).sum
  }

  object Messages {
    def load(dir: String, conf: Configuration, options: FileOptions, decode: DecodeOptions, limit: Int): Messages = {
      val files = Files.list(Paths.get(dir)).iterator.asScala.filter(_.toString.endsWith(".avro")).toSeq.sortBy(_.toString)
      val buffer = new java.io.ByteArrayOutputStream()
      val offsets = mutable.ArrayBuffer.empty[Int]
      val lengths = mutable.ArrayBuffer.empty[Int]
      for (p <- files if offsets.size < limit) {
        val length = Files.size(p)
        val source = MessageSource.open(FileSplit(p.toUri.toString, 0, length, length, Framing.Auto), conf,
          options.valueField, decode.limits)
        try {
          while (offsets.size < limit && source.next()) {
            offsets += buffer.size
            lengths += source.length
            buffer.write(source.bytes, source.offset, source.length)
          }
        } finally source.close()
      }
      new Messages(buffer.toByteArray, offsets.toArray, lengths.toArray, offsets.size)
    }
  }

  val EnvelopeSchemaJson: String =
    """{"type":"record","name":"MessageEnvelope","fields":[
      |{"name":"magic","type":{"type":"fixed","name":"Magic","size":5}},
      |{"name":"type","type":"string"},
      |{"name":"headers","type":["null",{"type":"map","values":"string"}]},
      |{"name":"messageSchemaId","type":["null","string"]},
      |{"name":"messageSchema","type":["null","string"]},
      |{"name":"message","type":"bytes"}]}""".stripMargin
}

/**
 * The usual generic path: Avro's GenericDatumReader (reusing its record and decoder) for the
 * envelope and the payload, then a converter that inspects every value to build Spark's row.
 */
final class GenericDecoder(spec: ReadSpec) {
  private val envelopeReader = new GenericDatumReader[GenericRecord](new Schema.Parser().parse(DecoderBench.EnvelopeSchemaJson))
  private val readers = mutable.HashMap.empty[String, GenericDatumReader[GenericRecord]]
  private var decoder: BinaryDecoder = _
  private var envelope: GenericRecord = _
  private var record: GenericRecord = _
  private val fields = spec.required.fields
  private val columnNames = mutable.HashMap.empty[String, IndexedSeq[String]]
  private val timestampFormat = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss[.SSSSSS]")

  /** The output row, or null for a message of another table or a metadata message. */
  def decode(bytes: Array[Byte], offset: Int, length: Int): InternalRow = {
    decoder = DecoderFactory.get.binaryDecoder(bytes, offset, length, decoder)
    envelope = envelopeReader.read(envelope, decoder)
    if (envelope.get("type").toString != "DT") return null
    val schemaId = envelope.get("messageSchemaId").toString
    val version = spec.registry.get(schemaId).get
    if (!spec.layout.tables.contains(version.table)) return null
    val reader = readers.getOrElseUpdate(schemaId, new GenericDatumReader[GenericRecord](version.dataSchema))
    val message = envelope.get("message").asInstanceOf[ByteBuffer]
    decoder = DecoderFactory.get.binaryDecoder(message.array, message.arrayOffset + message.position, message.remaining, decoder)
    record = reader.read(record, decoder)
    toRow(record, version)
  }

  private def toRow(r: GenericRecord, version: TableVersion): InternalRow = {
    val data = r.get("data").asInstanceOf[GenericRecord]
    val before = r.get("beforeData").asInstanceOf[GenericRecord]
    val image = if (data != null) data else before
    val headers = r.get("headers").asInstanceOf[GenericRecord]
    val names = columnNames.getOrElseUpdate(version.schemaId, version.columns.map(_.name))
    val values = new Array[Any](fields.length)
    var i = 0
    while (i < fields.length) {
      val f = fields(i)
      values(i) = f.name match {
        case C.SchemaId => UTF8String.fromString(version.schemaId)
        case C.TableVersion => version.tableVersion
        case C.Operation => convert(headers.get("operation"), StringType)
        case C.ChangeSeq => emptyAsNull(headers.get("changeSequence"))
        case C.Timestamp => timestamp(headers.get("timestamp"))
        case C.StreamPosition => emptyAsNull(headers.get("streamPosition"))
        case C.TransactionId => emptyAsNull(headers.get("transactionId"))
        case C.TransactionEventCounter => field(headers, "transactionEventCounter", LongType)
        case C.TransactionLastEvent => field(headers, "transactionLastEvent", BooleanType)
        case C.ExternalSchemaId => emptyAsNull(field(headers, "externalSchemaId", StringType))
        case C.ChangeMask => convert(headers.get("changeMask"), BinaryType)
        case C.ColumnMask => convert(headers.get("columnMask"), BinaryType)
        case C.ChangedColumns => expand(headers.get("changeMask"), names)
        case C.PresentColumns => expand(headers.get("columnMask"), names)
        case C.BeforeImage => convert(before, f.dataType)
        case column => field(image, column, f.dataType)
      }
      i += 1
    }
    new GenericInternalRow(values)
  }

  private def field(r: GenericRecord, name: String, t: DataType): Any =
    if (r == null || !r.hasField(name)) null else convert(r.get(name), t)

  private def convert(value: Any, t: DataType): Any = (value, t) match {
    case (null, _) => null
    case (s: Utf8, StringType) => UTF8String.fromBytes(java.util.Arrays.copyOf(s.getBytes, s.getByteLength))
    case (s: CharSequence, StringType) => UTF8String.fromString(s.toString)
    case (e: org.apache.avro.generic.GenericEnumSymbol[_], StringType) => UTF8String.fromString(e.toString)
    case (i: java.lang.Integer, IntegerType) => i
    case (i: java.lang.Integer, LongType) => i.longValue
    case (l: java.lang.Long, LongType) => l
    case (b: java.lang.Boolean, BooleanType) => b
    case (f: java.lang.Float, FloatType) => f
    case (d: java.lang.Double, DoubleType) => d
    case (b: ByteBuffer, BinaryType) =>
      java.util.Arrays.copyOfRange(b.array, b.arrayOffset + b.position, b.arrayOffset + b.limit)
    case (r: GenericRecord, s: StructType) => new GenericInternalRow(s.fields.map(f => field(r, f.name, f.dataType)))
    case (v, _) => throw new IllegalArgumentException(s"no conversion of ${v.getClass} to $t")
  }

  private def emptyAsNull(value: Any): Any = convert(value, StringType) match {
    case s: UTF8String if s.numBytes == 0 => null
    case other => other
  }

  private def timestamp(value: Any): Any = if (value == null || value.toString.isEmpty) null else {
    val local = LocalDateTime.parse(value.toString, timestampFormat)
    ChronoUnit.MICROS.between(java.time.Instant.EPOCH, local.toInstant(ZoneOffset.UTC))
  }

  private def expand(mask: Any, names: IndexedSeq[String]): Any = mask match {
    case null => null
    case b: ByteBuffer =>
      val bytes = java.util.Arrays.copyOfRange(b.array, b.arrayOffset + b.position, b.arrayOffset + b.limit)
      val bits = new BigInteger(1, bytes)
      new GenericArrayData(names.indices.filter(bits.testBit).map(i => UTF8String.fromString(names(i))).toArray[Any])
    case other => throw new IllegalArgumentException(s"a mask is bytes, not ${other.getClass}")
  }
}
