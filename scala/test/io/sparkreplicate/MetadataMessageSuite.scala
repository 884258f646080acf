package io.sparkreplicate

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.codec.{Envelope, MetadataMessage, TableVersion}

class MetadataMessageSuite extends AnyFunSuite {

  private def decode(bytes: Array[Byte], origin: String = "schema-topic/part-0.avro"): TableVersion =
    MetadataMessage.decode(bytes, Envelope.decode(bytes, 0, bytes.length), origin)

  private def malformed(bytes: Array[Byte]): MalformedMessageException =
    intercept[MalformedMessageException](decode(bytes))

  test("the real 6.3 sample, Avro-encoded with its own messageSchema, decodes to its table version") {
    val version = decode(sampleMetadataEnvelope)
    assert(version.schemaId == SampleSchemaId)
    assert(version.origin == "schema-topic/part-0.avro")
    val l = version.lineage
    assert(l.server == "attunity-01.custenborder.com")
    assert(l.task == "mysql-to-kafka")
    assert(l.schema == "employees")
    assert(l.table == "salaries")
    assert(l.tableVersion == 1L)
    assert(l.timestamp == "2018-04-13T20:13:58.289")
    assert(version.table.toString == "employees.salaries")
    assert(version.tableVersion == 1L)
  }

  test("the sample's embedded messageSchema is the reference MetadataMessage schema") {
    assert(sampleMetadataSchema == parseSchema(resourceText("reference/replicate6.3_MetadataMessage.schema.compact.avsc")))
    assert(sampleMetadataSchema.getNamespace == null && sampleMetadataSchema.getName == "MetadataMessage")
  }

  test("the sample's columns come out in ordinal order with their types, lengths and nullability") {
    val columns = decode(sampleMetadataEnvelope).columns
    assert(columns.map(_.name) == Seq("emp_no", "salary", "from_date", "to_date"))
    assert(columns.map(_.ordinal) == Seq(1, 2, 3, 4))
    assert(columns.map(_.sourceType) == Seq("INT4", "INT4", "DATE", "DATE"))
    assert(columns.map(_.length) == Seq(10, 10, 0, 0))
    assert(columns.map(_.primaryKeyPosition) == Seq(1, 0, 2, 0))
    assert(columns.forall(!_.nullable))
    assert(columns.forall(c => c.precision == 0 && c.scale == 0))
  }

  test("the sample's primary key is emp_no, from_date") {
    assert(decode(sampleMetadataEnvelope).primaryKey == Seq("emp_no", "from_date"))
  }

  test("the sample's dataSchema parses and equals the reference DataRecord schema") {
    val version = decode(sampleMetadataEnvelope)
    assert(version.dataSchemaJson == salaries63SchemaJson)
    assert(version.dataSchema == salaries63Schema)
    assert(version.dataSchema == parseSchema(salaries63PrettySchemaJson))
    assert(version.dataSchema.getField("headers").schema.getField("operation").schema.getEnumSymbols
      .toArray.toSeq == Seq("INSERT", "UPDATE", "DELETE", "REFRESH"))
  }

  test("the sample decodes the same as a TableVersion built by hand from the same facts") {
    val decoded = decode(sampleMetadataEnvelope)
    val byHand = salaries.tableVersion()
    assert(decoded.columns == byHand.columns)
    assert(decoded.dataSchemaJson == byHand.dataSchemaJson)
    assert(decoded.schemaId == byHand.schemaId)
  }

  test("tableColumns fields in non-ordinal order come out sorted by ordinal") {
    val shuffled = Seq("to_date", "emp_no", "from_date", "salary")
    val version = decode(salaries.metadataEnvelope(fieldOrder = shuffled))
    assert(version.columns.map(_.name) == Seq("emp_no", "salary", "from_date", "to_date"))
    assert(version.columns.map(_.ordinal) == Seq(1, 2, 3, 4))
    assert(version.primaryKey == Seq("emp_no", "from_date"))
    assert(version.columns.find(_.name == "to_date").get.sourceType == "DATE")
  }

  test("a schema id in the envelope other than the payload's schemaId is an error") {
    val e = malformed(salaries.metadataEnvelope(schemaIdInEnvelope = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"))
    assert(e.errorId == ErrorId.BadPayload)
    assert(e.detail.contains("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF") && e.detail.contains(SampleSchemaId))
  }

  test("an envelope with the schema but no schema id decodes (the documented exclusive form)") {
    assert(decode(salaries.metadataEnvelope(schemaIdInEnvelope = null)).schemaId == SampleSchemaId)
  }

  test("a metadata message without messageSchema is an error") {
    val e = malformed(salaries.metadataEnvelope(embedSchema = false))
    assert(e.errorId == ErrorId.BadPayload)
    assert(e.detail.contains("messageSchema"))
  }

  test("an embedded schema that does not parse is BadEmbeddedSchema") {
    val bytes = envelope("MD", salaries.metadataPayload(), SampleSchemaId, """{"type":"record","name":""")
    assert(malformed(bytes).errorId == ErrorId.BadEmbeddedSchema)
  }

  test("bytes after the metadata payload are TrailingBytes") {
    val md = metadataSchemaJson(salariesColumns.map(_.name))
    val bytes = envelope("MD", salaries.metadataPayload(md) ++ Array[Byte](1, 2), SampleSchemaId, md)
    assert(malformed(bytes).errorId == ErrorId.TrailingBytes)
  }

  test("a metadata payload truncated at any byte is malformed, never another exception") {
    val md = metadataSchemaJson(salariesColumns.map(_.name))
    val payload = salaries.metadataPayload(md)
    for (cut <- 0 until payload.length) {
      val e = malformed(envelope("MD", payload.take(cut), SampleSchemaId, md))
      assert(e.errorId == ErrorId.BadPayload || e.errorId == ErrorId.Truncated, s"cut $cut: ${e.errorId}")
    }
  }

  test("column ordinals with a gap are BadPayload") {
    val names = Seq("emp_no", "salary", "from_date", "extra")
    val bytes = metadataEnvelopeOf(metadataSchemaJson(names), metadataValue(SampleSchemaId, "employees", "salaries", 1,
      names.zip(Seq(1, 2, 3, 5)).map { case (n, o) => n -> columnValue(o) }, salaries63SchemaJson))
    val e = malformed(bytes)
    assert(e.errorId == ErrorId.BadPayload)
    assert(e.detail.contains("1,2,3,5"))
  }

  test("an embedded metadata schema that types a number field as a string is malformed, not a ClassCastException") {
    val names = salariesColumns.map(_.name)
    val mdJson = metadataSchemaJson(names).replace(""""name":"ordinal","type":"int"""", """"name":"ordinal","type":"string"""")
    assert(mdJson != metadataSchemaJson(names))
    val bytes = metadataEnvelopeOf(mdJson, metadataValue(SampleSchemaId, "employees", "salaries", 1,
      names.zipWithIndex.map { case (n, i) => n -> columnValue((i + 1).toString) }, salaries63SchemaJson))
    val thrown = intercept[Throwable](decode(bytes))
    assert(thrown.isInstanceOf[MalformedMessageException], s"${thrown.getClass.getName}: ${thrown.getMessage}")
  }
}
