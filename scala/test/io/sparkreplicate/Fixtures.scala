package io.sparkreplicate

import java.io.{ByteArrayOutputStream, DataOutputStream, File, FileOutputStream}
import java.math.{BigDecimal => JBigDecimal}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.time.{Instant, LocalDate}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.file.{CodecFactory, DataFileWriter}
import org.apache.avro.generic.{GenericData, GenericDatumWriter, GenericRecord}
import org.apache.avro.io.{Encoder, EncoderFactory}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, DateType, StructType}
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.catalyst.{OutputColumns, ReadSpec, TableLayout}
import io.sparkreplicate.codec.{ColumnInfo, Lineage, SchemaRegistry, TableName, TableVersion}

/**
 * Shared test fixtures: the reference schemas and samples, and builders for every byte layout
 * the tests feed the connector (payloads, envelopes, metadata messages, landing files). All
 * bytes are produced by Avro's own writers, never by the code under test.
 */
object Fixtures {

  // ---------------------------------------------------------------- reference material

  def resourceText(path: String): String = {
    val in = getClass.getResourceAsStream("/" + path)
    require(in != null, s"test resource $path is missing")
    try new String(in.readAllBytes(), StandardCharsets.UTF_8) finally in.close()
  }

  private val json = new ObjectMapper()
  def parseJson(text: String): JsonNode = json.readTree(text)
  def parseSchema(text: String): Schema = new Schema.Parser().parse(text)

  lazy val envelopeSchema: Schema = parseSchema(resourceText("reference/qlik-docs_MessageEnvelope.avsc"))

  /** The real MD sample (JSON message format), as a whole: envelope fields plus `message`. */
  lazy val metadataSample: JsonNode = parseJson(resourceText("reference/attunity-json-converter_Metadata.json"))
  /** The real DT sample, a REFRESH row. */
  lazy val dataSample: JsonNode = parseJson(resourceText("reference/attunity-json-converter_Data.json"))

  /** The sample's `messageSchema`: the Avro schema of the metadata message itself. */
  lazy val sampleMetadataSchemaJson: String = metadataSample.get("messageSchema").asText
  lazy val sampleMetadataSchema: Schema = parseSchema(sampleMetadataSchemaJson)
  val SampleSchemaId = "8FB9D3C10EA4B25751DF9CC8318F0A02"

  /** employees.salaries data schema as Replicate 6.3 wrote it (compact text, verbatim). */
  lazy val salaries63SchemaJson: String =
    resourceText("reference/replicate6.3_DataRecord_employees.salaries.schema.compact.avsc").trim
  lazy val salaries63Schema: Schema = parseSchema(salaries63SchemaJson)
  /** The same schema pretty-printed: other text, same Avro schema. */
  lazy val salaries63PrettySchemaJson: String =
    resourceText("reference/replicate6.3_DataRecord_employees.salaries.schema.pretty.avsc")
  /** A newer-Replicate-style variant: extra headers, every record's fields reordered. */
  lazy val salaries70SchemaJson: String =
    resourceText("schemas/replicate7-style_DataRecord_employees.salaries.avsc")
  lazy val salaries70Schema: Schema = parseSchema(salaries70SchemaJson)

  // ---------------------------------------------------------------- Avro values

  /**
   * A Scala value as the generic Avro datum of `schema`: Maps become records, Strings become enum
   * symbols for enums and hex-decoded bytes for bytes (the JSON form of masks), Array[Byte]
   * becomes bytes or fixed, LocalDate/Instant/BigDecimal follow the logical type. A `[null, T]`
   * union takes the non-null branch for any non-null value. Missing record fields are null.
   */
  def datum(schema: Schema, value: Any): AnyRef = (schema.getType, value) match {
    case (_, null) => null
    case (Schema.Type.UNION, v) =>
      datum(schema.getTypes.asScala.find(_.getType != Schema.Type.NULL).get, v)
    case (Schema.Type.RECORD, fields: Map[_, _]) =>
      val record = new GenericData.Record(schema)
      val byName = fields.asInstanceOf[Map[String, Any]]
      val unknown = byName.keySet -- schema.getFields.asScala.map(_.name)
      require(unknown.isEmpty, s"${schema.getName} has no field(s) ${unknown.mkString(", ")}")
      schema.getFields.asScala.foreach(f => record.put(f.pos, datum(f.schema, byName.getOrElse(f.name, null))))
      record
    case (Schema.Type.RECORD, r: GenericRecord) => r
    case (Schema.Type.ENUM, s: String) => new GenericData.EnumSymbol(schema, s)
    case (Schema.Type.BYTES, s: String) => ByteBuffer.wrap(unhex(s))
    case (Schema.Type.BYTES, b: Array[Byte]) => ByteBuffer.wrap(b)
    case (Schema.Type.BYTES, d: BigDecimal) => ByteBuffer.wrap(unscaled(schema, d))
    case (Schema.Type.FIXED, b: Array[Byte]) => new GenericData.Fixed(schema, b)
    case (Schema.Type.INT, d: LocalDate) => Integer.valueOf(d.toEpochDay.toInt)
    case (Schema.Type.INT, n: Number) => Integer.valueOf(n.intValue)
    case (Schema.Type.LONG, i: Instant) => java.lang.Long.valueOf(
      if (schema.getLogicalType.isInstanceOf[LogicalTypes.TimestampMillis]) i.toEpochMilli else micros(i))
    case (Schema.Type.LONG, n: Number) => java.lang.Long.valueOf(n.longValue)
    case (Schema.Type.FLOAT, n: Number) => java.lang.Float.valueOf(n.floatValue)
    case (Schema.Type.DOUBLE, n: Number) => java.lang.Double.valueOf(n.doubleValue)
    case (Schema.Type.BOOLEAN, b: Boolean) => java.lang.Boolean.valueOf(b)
    case (Schema.Type.STRING, s: String) => s
    case (t, v) => throw new IllegalArgumentException(s"no Avro $t datum for ${v.getClass.getName} $v")
  }

  /** Plain JSON (as in the JSON-format samples) to the Scala values [[datum]] takes. */
  def jsonValue(node: JsonNode): Any =
    if (node == null || node.isNull) null
    else if (node.isObject) node.properties().asScala.map(e => e.getKey -> jsonValue(e.getValue)).toMap
    else if (node.isBoolean) node.booleanValue
    else if (node.isIntegralNumber) node.longValue
    else if (node.isNumber) node.doubleValue
    else node.asText

  /** The JSON sample as a datum of `schema`; JSON fields the schema lacks are dropped. */
  def datumFromJson(schema: Schema, node: JsonNode): AnyRef = datum(schema, keepKnown(schema, jsonValue(node)))

  private def keepKnown(schema: Schema, value: Any): Any = (schema.getType, value) match {
    case (Schema.Type.UNION, v) if v != null =>
      keepKnown(schema.getTypes.asScala.find(_.getType != Schema.Type.NULL).get, v)
    case (Schema.Type.RECORD, m: Map[_, _]) =>
      schema.getFields.asScala.map(f => f.name -> keepKnown(f.schema, m.asInstanceOf[Map[String, Any]].getOrElse(f.name, null))).toMap
    case (_, v) => v
  }

  def avroBinary(schema: Schema, datum: AnyRef): Array[Byte] = write(schema, datum, EncoderFactory.get().binaryEncoder(_, null))

  /** Avro binary with every map and array in byte-counted blocks (negative counts). */
  def avroBlockingBinary(schema: Schema, datum: AnyRef): Array[Byte] =
    write(schema, datum, EncoderFactory.get().blockingBinaryEncoder(_, null))

  private def write(schema: Schema, datum: AnyRef, encoder: ByteArrayOutputStream => Encoder): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val enc = encoder(out)
    new GenericDatumWriter[AnyRef](schema).write(datum, enc)
    enc.flush()
    out.toByteArray
  }

  def micros(i: Instant): Long = Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)

  private def unscaled(schema: Schema, d: BigDecimal): Array[Byte] = {
    val scale = schema.getLogicalType.asInstanceOf[LogicalTypes.Decimal].getScale
    d.bigDecimal.setScale(scale).unscaledValue.toByteArray
  }

  def hex(bytes: Array[Byte]): String = bytes.map(b => f"${b & 0xff}%02X").mkString
  def unhex(s: String): Array[Byte] = s.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray

  // ---------------------------------------------------------------- envelopes

  /** An envelope written by Avro over the documented `MessageEnvelope` schema. */
  def envelope(kind: String, payload: Array[Byte], schemaId: String = null, messageSchema: String = null,
      headers: Map[String, String] = null, blocking: Boolean = false): Array[Byte] = {
    val record = new GenericData.Record(envelopeSchema)
    record.put("magic", new GenericData.Fixed(envelopeSchema.getField("magic").schema, "atMSG".getBytes(StandardCharsets.US_ASCII)))
    record.put("type", kind)
    record.put("headers", if (headers == null) null else headers.asJava)
    record.put("messageSchemaId", schemaId)
    record.put("messageSchema", messageSchema)
    record.put("message", ByteBuffer.wrap(payload))
    if (blocking) avroBlockingBinary(envelopeSchema, record) else avroBinary(envelopeSchema, record)
  }

  /** The real MD sample encoded as Replicate's Avro format would carry it: both schema id and schema. */
  lazy val sampleMetadataPayload: Array[Byte] =
    avroBinary(sampleMetadataSchema, datumFromJson(sampleMetadataSchema, metadataSample.get("message")))
  lazy val sampleMetadataEnvelope: Array[Byte] =
    envelope("MD", sampleMetadataPayload, SampleSchemaId, sampleMetadataSchemaJson)

  // ---------------------------------------------------------------- tables and their metadata

  /**
   * One column of a synthetic table.
   * @param avroType the JSON of the column's non-null Avro type; data schemas use `[null, T]`
   */
  final case class Column(name: String, avroType: String, sourceType: String, primaryKeyPosition: Int = 0,
      nullable: Boolean = true, length: Int = 0, precision: Int = 0, scale: Int = 0)

  /** One table version as a Replicate task would announce it. */
  final case class TableDef(schemaId: String, schema: String, table: String, version: Long,
      columns: Seq[Column], dataSchemaJson: String) {
    def name: TableName = TableName(schema, table)
    lazy val dataSchema: Schema = parseSchema(dataSchemaJson)

    def tableVersion(origin: String = "test"): TableVersion = TableVersion(schemaId,
      Lineage("server-1", "task-1", schema, table, version, "2023-03-21T14:34:21.000"),
      columns.zipWithIndex.map { case (c, i) =>
        ColumnInfo(c.name, i + 1, c.sourceType, c.length, c.precision, c.scale, c.primaryKeyPosition, c.nullable)
      }.toIndexedSeq,
      dataSchemaJson, origin)

    /** The MD envelope; `fieldOrder` permutes the `tableColumns` fields (ordinals stay the same). */
    def metadataEnvelope(fieldOrder: Seq[String] = columns.map(_.name), schemaIdInEnvelope: String = schemaId,
        embedSchema: Boolean = true): Array[Byte] = {
      val mdSchemaJson = metadataSchemaJson(fieldOrder)
      envelope("MD", metadataPayload(mdSchemaJson), schemaIdInEnvelope, if (embedSchema) mdSchemaJson else null)
    }

    def metadataPayload(mdSchemaJson: String = metadataSchemaJson(columns.map(_.name))): Array[Byte] = {
      val mdSchema = parseSchema(mdSchemaJson)
      avroBinary(mdSchema, datum(mdSchema, metadataValue(schemaId, schema, table, version,
        columns.zipWithIndex.map { case (c, i) => c.name -> columnValue(i + 1, c.sourceType, c.length, c.precision,
          c.scale, c.primaryKeyPosition, c.nullable) }, dataSchemaJson)))
    }
  }

  /** One entry of `tableStructure.tableColumns`, as the Scala value [[datum]] takes. */
  def columnValue(ordinal: Any, sourceType: String = "INT4", length: Int = 0, precision: Int = 0, scale: Int = 0,
      primaryKeyPosition: Int = 0, nullable: Boolean = true): Map[String, Any] =
    Map("ordinal" -> ordinal, "type" -> sourceType, "length" -> length, "precision" -> precision, "scale" -> scale,
      "primaryKeyPosition" -> primaryKeyPosition, "nullable" -> nullable)

  /** A whole metadata message as the Scala value [[datum]] takes; `columns` in field order. */
  def metadataValue(schemaId: String, schema: String, table: String, version: Long,
      columns: Seq[(String, Map[String, Any])], dataSchemaJson: String): Map[String, Any] =
    Map("schemaId" -> schemaId,
      "lineage" -> Map[String, Any]("server" -> "server-1", "task" -> "task-1", "schema" -> schema, "table" -> table,
        "tableVersion" -> version, "timestamp" -> "2023-03-21T14:34:21.000"),
      "tableStructure" -> Map("tableColumns" -> columns.toMap),
      "dataSchema" -> dataSchemaJson)

  /** A metadata envelope whose message schema is `mdSchemaJson`, for hand-made (odd) metadata. */
  def metadataEnvelopeOf(mdSchemaJson: String, value: Map[String, Any]): Array[Byte] = {
    val mdSchema = parseSchema(mdSchemaJson)
    envelope("MD", avroBinary(mdSchema, datum(mdSchema, value)), value("schemaId").toString, mdSchemaJson)
  }

  /**
   * The schema of a metadata message as Replicate builds it: `tableColumns` is a record with one
   * field per column, each a record named after the column.
   */
  def metadataSchemaJson(columnNames: Seq[String]): String = {
    val columnRecord = (n: String) =>
      s"""{"name":"$n","type":{"type":"record","name":"$n","fields":[{"name":"ordinal","type":"int"},""" +
        """{"name":"type","type":"string"},{"name":"length","type":"int"},{"name":"precision","type":"int"},""" +
        """{"name":"scale","type":"int"},{"name":"primaryKeyPosition","type":"int"},{"name":"nullable","type":"boolean"}]}}"""
    """{"type":"record","name":"MetadataMessage","fields":[{"name":"schemaId","type":"string"},""" +
      """{"name":"lineage","type":{"type":"record","name":"Lineage","fields":[{"name":"server","type":"string"},""" +
      """{"name":"task","type":"string"},{"name":"schema","type":"string"},{"name":"table","type":"string"},""" +
      """{"name":"tableVersion","type":"long"},{"name":"timestamp","type":"string"}]}},""" +
      """{"name":"tableStructure","type":{"type":"record","name":"TableStructure","fields":[{"name":"tableColumns",""" +
      """"type":{"type":"record","name":"TableColumns","fields":[""" + columnNames.map(columnRecord).mkString(",") +
      """]}}]}},{"name":"dataSchema","type":"string"}]}"""
  }

  /**
   * A data schema shaped like Replicate 6.3's, for any columns. `nullableData` makes `data` a
   * `[null, Data]` union (so a message can carry only `beforeData`); `beforeFirst` writes
   * `beforeData` ahead of `data`.
   */
  def dataSchemaJson(columns: Seq[Column], nullableData: Boolean = false, beforeFirst: Boolean = false): String = {
    val fields = columns.map(c => s"""{"name":"${c.name}","type":["null",${c.avroType}]}""").mkString(",")
    val dataRecord = s"""{"type":"record","name":"Data","fields":[$fields]}"""
    val headers = """{"name":"headers","type":""" +
      """{"type":"record","name":"Headers","fields":[{"name":"operation","type":{"type":"enum","name":"operation",""" +
      """"symbols":["INSERT","UPDATE","DELETE","REFRESH"]}},{"name":"changeSequence","type":"string"},""" +
      """{"name":"timestamp","type":"string"},{"name":"streamPosition","type":"string"},""" +
      """{"name":"transactionId","type":"string"},{"name":"changeMask","type":["null","bytes"]},""" +
      """{"name":"columnMask","type":["null","bytes"]}]}}"""
    val dataType = (defined: Boolean) => {
      val t = if (defined) "\"Data\"" else dataRecord
      if (nullableData) s"""["null",$t]""" else t
    }
    val recordFields =
      if (beforeFirst) Seq(s"""{"name":"beforeData","type":["null",$dataRecord]}""", s"""{"name":"data","type":${dataType(true)}}""")
      else Seq(s"""{"name":"data","type":${dataType(false)}}""", """{"name":"beforeData","type":["null","Data"]}""")
    s"""{"type":"record","name":"DataRecord","fields":[${(recordFields :+ headers).mkString(",")}]}"""
  }

  val salariesColumns: Seq[Column] = Seq(
    Column("emp_no", "\"int\"", "INT4", primaryKeyPosition = 1, nullable = false, length = 10),
    Column("salary", "\"int\"", "INT4", nullable = false, length = 10),
    Column("from_date", "\"string\"", "DATE", primaryKeyPosition = 2, nullable = false),
    Column("to_date", "\"string\"", "DATE", nullable = false))

  /** employees.salaries version 1, exactly as the real sample announces it. */
  lazy val salaries: TableDef = TableDef(SampleSchemaId, "employees", "salaries", 1, salariesColumns, salaries63SchemaJson)
  /** Version 2 of the same columns, written by a newer Replicate. */
  lazy val salaries70: TableDef = TableDef("0123456789ABCDEF0123456789ABCDEF", "employees", "salaries", 2,
    salariesColumns, salaries70SchemaJson)

  /** Version 3 of the same columns, whose `data` may be null (a DELETE that carries only `beforeData`). */
  lazy val salariesNullableData: TableDef = TableDef("3A3A3A3A3A3A3A3A3A3A3A3A3A3A3A3A", "employees", "salaries", 3,
    salariesColumns, dataSchemaJson(salariesColumns, nullableData = true))

  lazy val departmentsColumns: Seq[Column] = Seq(
    Column("dept_no", "\"string\"", "STRING", primaryKeyPosition = 1, nullable = false, length = 4),
    Column("dept_name", "\"string\"", "STRING", length = 40),
    Column("budget", """{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}""", "NUMERIC",
      precision = 12, scale = 2),
    Column("created", """{"type":"long","logicalType":"timestamp-micros"}""", "DATETIME", scale = 6))
  /** A second table of the same task, with logical types. */
  lazy val departments: TableDef = TableDef("D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0D0", "employees", "departments", 1,
    departmentsColumns, dataSchemaJson(departmentsColumns))

  // ---------------------------------------------------------------- data messages

  /** The `headers` of a CDC row; override any of them by name. */
  def cdcHeaders(operation: String, changeSequence: String = "20230321143421000000000000000000001",
      timestamp: String = "2023-03-21 14:34:21.123456", streamPosition: String = "00000001.0000abcd.00000001",
      transactionId: String = "0000000000000000000000000000A1B2", changeMask: Array[Byte] = null,
      columnMask: Array[Byte] = null, extra: Map[String, Any] = Map.empty): Map[String, Any] =
    Map("operation" -> operation, "changeSequence" -> changeSequence, "timestamp" -> timestamp,
      "streamPosition" -> streamPosition, "transactionId" -> transactionId, "changeMask" -> changeMask,
      "columnMask" -> columnMask) ++ extra

  /** A `DataRecord` payload in Avro binary. */
  def dataPayload(schema: Schema, data: Map[String, Any], before: Map[String, Any], headers: Map[String, Any]): Array[Byte] =
    avroBinary(schema, datum(schema, Map("data" -> data, "beforeData" -> before, "headers" -> headers)))

  /** A DT envelope of `table`: by schema id, or self-describing (`embed`), or both. */
  def dataEnvelope(table: TableDef, data: Map[String, Any], before: Map[String, Any] = null,
      headers: Map[String, Any] = cdcHeaders("INSERT"), byId: Boolean = true, embed: Boolean = false): Array[Byte] =
    envelope("DT", dataPayload(table.dataSchema, data, before, headers),
      if (byId) table.schemaId else null, if (embed) table.dataSchemaJson else null)

  def salary(empNo: Int, amount: Int, from: String = "1993-11-25", to: String = "1994-11-25"): Map[String, Any] =
    Map[String, Any]("emp_no" -> empNo, "salary" -> amount, "from_date" -> from, "to_date" -> to)

  // ---------------------------------------------------------------- decoding side

  def registry(tables: TableDef*): SchemaRegistry = SchemaRegistry.build(tables.map(_.tableVersion()), Seq("test"))

  /** Reader options as a user would pass them (the public option names), parsed by the connector. */
  def options(table: TableName, expandMasks: Boolean = true, mode: ParseMode = ParseMode.FailFast,
      includeSource: Boolean = false): DecodeOptions =
    DecodeOptions.parse(Map("path" -> "/landing", "table" -> table.toString, "expandMasks" -> expandMasks.toString,
      "mode" -> mode.name, "includeSource" -> includeSource.toString))

  /** A read spec for `table` (all its versions in the registry); `required` defaults to every column. */
  def readSpec(registry: SchemaRegistry, table: TableName, opts: DecodeOptions = null,
      required: StructType => StructType = identity): ReadSpec = {
    val o = if (opts == null) options(table) else opts
    val layout = TableLayout.of(table, registry.tables(table), o)
    ReadSpec(o, registry, layout, required(OutputColumns.schema(layout, o)))
  }

  /**
   * A Catalyst row as plain Scala values, by column name: strings as String, arrays as Seq,
   * structs as Map, binary as hex, dates as `yyyy-MM-dd`, timestamps as micros.
   */
  def rowValues(row: InternalRow, schema: StructType): Map[String, Any] =
    schema.fields.zipWithIndex.map { case (f, i) => f.name -> value(row, i, f.dataType) }.toMap

  private def value(row: InternalRow, i: Int, t: DataType): Any =
    if (row.isNullAt(i)) null
    else t match {
      case s: StructType => rowValues(row.getStruct(i, s.size), s)
      case ArrayType(e, _) =>
        val a: ArrayData = row.getArray(i)
        (0 until a.numElements()).map(j => if (a.isNullAt(j)) null else a.get(j, e) match {
          case u: UTF8String => u.toString
          case r: InternalRow => rowValues(r, e.asInstanceOf[StructType])
          case other => other
        })
      case DateType => LocalDate.ofEpochDay(row.getInt(i).toLong).toString
      case _ => row.get(i, t) match {
        case u: UTF8String => u.toString
        case b: Array[Byte] => hex(b)
        case d: org.apache.spark.sql.types.Decimal => d.toJavaBigDecimal
        case other => other
      }
    }

  // ---------------------------------------------------------------- landing files

  /** Kafka-sink-style container records: {topic, partition, offset, timestamp, key, value}. */
  lazy val landingSchema: Schema = parseSchema(
    """{"type":"record","name":"KafkaRecord","namespace":"test.landing","fields":[
      |{"name":"topic","type":"string"},{"name":"partition","type":"int"},{"name":"offset","type":"long"},
      |{"name":"timestamp","type":"long"},{"name":"key","type":["null","bytes"]},{"name":"value","type":"bytes"}]}""".stripMargin)

  final case class Landed(topic: String, partition: Int, offset: Long, timestampMillis: Long, key: Array[Byte],
      value: Array[Byte])

  /** An Avro container file of [[landingSchema]] records; a small `syncInterval` makes many blocks. */
  def writeContainer(file: File, records: Seq[Landed], syncInterval: Int = 64 * 1024,
      codec: CodecFactory = CodecFactory.nullCodec()): File = {
    file.getParentFile.mkdirs()
    val writer = new DataFileWriter[GenericRecord](new GenericDatumWriter[GenericRecord](landingSchema))
    writer.setSyncInterval(syncInterval)
    writer.setCodec(codec)
    writer.create(landingSchema, file)
    try records.foreach { r =>
      val rec = new GenericData.Record(landingSchema)
      rec.put("topic", r.topic)
      rec.put("partition", r.partition)
      rec.put("offset", r.offset)
      rec.put("timestamp", r.timestampMillis)
      rec.put("key", if (r.key == null) null else ByteBuffer.wrap(r.key))
      rec.put("value", ByteBuffer.wrap(r.value))
      writer.append(rec)
    } finally writer.close()
    file
  }

  /** Repeated 4-byte big-endian length + envelope. */
  def writeLengthPrefixed(file: File, messages: Seq[Array[Byte]]): File = {
    file.getParentFile.mkdirs()
    val out = new DataOutputStream(new FileOutputStream(file))
    try messages.foreach { m => out.writeInt(m.length); out.write(m) } finally out.close()
    file
  }

  def writeBytes(file: File, bytes: Array[Byte]): File = {
    file.getParentFile.mkdirs()
    val out = new FileOutputStream(file)
    try out.write(bytes) finally out.close()
    file
  }

  /** `JBigDecimal` with the given scale, for comparing decimal columns. */
  def decimal(s: String, scale: Int): JBigDecimal = new JBigDecimal(s).setScale(scale)
}
