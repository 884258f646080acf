package io.sparkreplicate

import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.catalyst.{MetadataColumns => M, MetadataSpec, MetadataRowDecoder, Outcome}
import io.sparkreplicate.files.{FileOptions, FilePlanner}

class MetadataRowDecoderSuite extends AnyFunSuite {

  private def viewOptions(extra: (String, String)*): DecodeOptions = {
    val supplied = Map("path" -> "/landing/_schema", "messages" -> "metadata") ++ extra
    val decode = DecodeOptions.parse(supplied)
    FileOptions.parse(supplied, decode)
    decode
  }

  private def decoder(opts: DecodeOptions = viewOptions(), required: StructType => StructType = identity) =
    new MetadataRowDecoder(MetadataSpec(opts, required(M.schema(opts))))

  private def row(dec: MetadataRowDecoder, bytes: Array[Byte]): Map[String, Any] = {
    assert(dec.decode(bytes, 0, bytes.length) == Outcome.Row)
    rowValues(dec.row, dec.out.required)
  }

  private def column(name: String, ordinal: Int, sourceType: String, length: Int, pk: Int, nullable: Boolean) =
    Map[String, Any]("name" -> name, "ordinal" -> ordinal, "type" -> sourceType, "length" -> length,
      "precision" -> 0, "scale" -> 0, "primary_key_position" -> pk, "nullable" -> nullable)

  test("the view's columns, in order, with their types") {
    assert(M.schema(viewOptions()).simpleString == "struct<schema_id:string,schema_name:string,table_name:string," +
      "table_version:bigint,server:string,task:string,timestamp:string,columns:array<struct<name:string," +
      "ordinal:int,type:string,length:int,precision:int,scale:int,primary_key_position:int,nullable:boolean>>," +
      "primary_key:array<string>,data_schema:string>")
    val withAll = M.schema(viewOptions("includeSource" -> "true", "mode" -> "PERMISSIVE")).fieldNames
    assert(withAll.takeRight(2).toSeq == Seq("header__source", "_corrupt_record"))
  }

  test("the real 6.3 metadata sample: every column") {
    assert(row(decoder(), sampleMetadataEnvelope) == Map[String, Any](
      M.SchemaId -> SampleSchemaId, M.SchemaName -> "employees", M.TableName -> "salaries",
      M.TableVersion -> 1L, M.Server -> "attunity-01.custenborder.com", M.Task -> "mysql-to-kafka",
      M.Timestamp -> "2018-04-13T20:13:58.289",
      M.Columns -> Seq(column("emp_no", 1, "INT4", 10, 1, nullable = false), column("salary", 2, "INT4", 10, 0, nullable = false),
        column("from_date", 3, "DATE", 0, 2, nullable = false), column("to_date", 4, "DATE", 0, 0, nullable = false)),
      M.PrimaryKey -> Seq("emp_no", "from_date"),
      M.DataSchema -> metadataSample.get("message").get("dataSchema").asText))
  }

  test("columns come in ordinal order and the key in key order, whatever the field order") {
    val r = row(decoder(), departments.metadataEnvelope(fieldOrder = Seq("created", "budget", "dept_no", "dept_name")))
    assert(r(M.Columns).asInstanceOf[Seq[Map[String, Any]]].map(c => (c("name"), c("ordinal"))) ==
      Seq("dept_no" -> 1, "dept_name" -> 2, "budget" -> 3, "created" -> 4))
    val budget = r(M.Columns).asInstanceOf[Seq[Map[String, Any]]](2)
    assert(budget("type") == "NUMERIC" && budget("precision") == 12 && budget("scale") == 2)
    assert(r(M.PrimaryKey) == Seq("dept_no"))
  }

  test("the row is reused: each message overwrites every selected column") {
    val dec = decoder()
    row(dec, sampleMetadataEnvelope)
    val second = row(dec, departments.metadataEnvelope())
    assert(second(M.TableName) == "departments" && second(M.SchemaId) == departments.schemaId)
    assert(second(M.PrimaryKey) == Seq("dept_no"))
  }

  test("data messages are filtered from the envelope, even one whose payload would not decode") {
    val dt = dataEnvelope(salaries, salary(1, 2))
    assert(decoder().decode(dt, 0, dt.length) == Outcome.Filtered)
    val garbagePayload = envelope("DT", Array[Byte](9, 9, 9), "nonsense")
    assert(decoder().decode(garbagePayload, 0, garbagePayload.length) == Outcome.Filtered)
  }

  test("`table` keeps one table's metadata messages, matched case-insensitively") {
    val dec = decoder(viewOptions("table" -> "EMPLOYEES.Departments"))
    assert(dec.decode(sampleMetadataEnvelope, 0, sampleMetadataEnvelope.length) == Outcome.Filtered)
    assert(row(dec, departments.metadataEnvelope())(M.TableName) == "departments")
  }

  test("a pruned read fills only the selected columns") {
    val dec = decoder(required = s => StructType(Seq(s(M.PrimaryKey), s(M.TableVersion))))
    assert(row(dec, sampleMetadataEnvelope) == Map[String, Any](M.PrimaryKey -> Seq("emp_no", "from_date"), M.TableVersion -> 1L))
  }

  test("a malformed metadata message is a MalformedMessageException; PERMISSIVE's row holds nulls and the reason") {
    val truncated = envelope("MD", sampleMetadataPayload.dropRight(7), SampleSchemaId, sampleMetadataSchemaJson)
    val badOrdinals = metadataEnvelopeOf(metadataSchemaJson(Seq("a", "b")), metadataValue("AB", "s", "t", 1,
      Seq("a" -> columnValue(1), "b" -> columnValue(3)), salaries63SchemaJson))
    val opts = viewOptions("mode" -> "PERMISSIVE")
    val dec = decoder(opts)
    row(dec, sampleMetadataEnvelope)
    for ((bytes, reason) <- Seq(truncated -> ErrorId.Truncated, badOrdinals -> ErrorId.BadPayload,
        "junk".getBytes -> ErrorId.BadMagic)) {
      val e = intercept[MalformedMessageException](dec.decode(bytes, 0, bytes.length))
      assert(e.errorId == reason, e.getMessage)
      val r = rowValues(dec.corruptRow(bytes, 0, bytes.length, e, "md.bin, frame at byte 0"), dec.out.required)
      assert(r.filter(_._1 != "_corrupt_record").values.forall(_ == null), r)
      val corrupt = r("_corrupt_record").asInstanceOf[Map[String, Any]]
      assert(corrupt("bytes") == hex(bytes) && corrupt("reason") == reason.name)
      assert(corrupt("message").toString.startsWith("md.bin, frame at byte 0: "))
    }
  }

  test("option `messages`: data or metadata, any case; another value names the option") {
    assert(DecodeOptions.parse(Map("path" -> "/p")).messages == MessageView.Data)
    assert(DecodeOptions.parse(Map("path" -> "/p", "MESSAGES" -> "Metadata")).messages == MessageView.Metadata)
    val bad = intercept[ReplicateException](DecodeOptions.parse(Map("path" -> "/p", "messages" -> "md")))
    assert(bad.errorId == ErrorId.InvalidOption && bad.getMessage.contains("`messages`") &&
      bad.getMessage.contains("data, metadata"), bad.getMessage)
  }

  test("the metadata view reads the loaded paths: a schemaTopic beside them is refused") {
    val e = intercept[ReplicateException](viewOptions("schemaTopic" -> "/landing/_schema"))
    assert(e.errorId == ErrorId.InvalidOption && e.getMessage.contains("`schemaTopic`"), e.getMessage)
  }

  test("planning the view needs no metadata: an empty landing zone plans, with no table layout") {
    val dir = java.nio.file.Files.createTempDirectory("metaview")
    try {
      writeBytes(dir.resolve("empty.bin").toFile, Array.emptyByteArray)
      val supplied = Map("path" -> dir.toString, "messages" -> "metadata")
      val decode = DecodeOptions.parse(supplied)
      val plan = FilePlanner.plan(decode, FileOptions.parse(supplied, decode),
        new org.apache.hadoop.conf.Configuration(), _ => fail("the view must not scan for metadata"))
      assert(plan.query.layout.isEmpty && plan.files.size == 1 && plan.query.schema == M.schema(decode))
    } finally new scala.reflect.io.Directory(dir.toFile).deleteRecursively()
  }
}
