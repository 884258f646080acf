package io.sparkreplicate

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.codec.{SchemaRegistry, TableName}

class SchemaRegistrySuite extends AnyFunSuite {

  private def version(t: TableDef, origin: String) = t.tableVersion(origin)

  test("identical duplicates of a metadata message (re-sent on task restart) collapse into one") {
    val registry = SchemaRegistry.build(
      Seq(version(salaries, "a.avro"), version(salaries, "b.avro"), version(salaries, "a.avro")), Seq("topic"))
    assert(registry.versions.size == 1)
    assert(registry.get(SampleSchemaId).map(_.tableVersion).contains(1L))
    assert(registry.tables(salaries.name).size == 1)
  }

  test("one schema id with different content is ConflictingMetadata naming both origins") {
    val other = salaries.copy(version = 7).tableVersion("b/part-9.avro")
    val e = intercept[ReplicateException](
      SchemaRegistry.build(Seq(version(salaries, "a/part-1.avro"), other), Seq("a", "b")))
    assert(e.errorId == ErrorId.ConflictingMetadata)
    assert(e.getMessage.startsWith("[REPLICATE_CONFLICTING_METADATA]"))
    assert(e.detail.contains("a/part-1.avro") && e.detail.contains("b/part-9.avro"), e.detail)
    assert(e.detail.contains(SampleSchemaId))
    assert(!e.isInstanceOf[MalformedMessageException], "a conflict is a planning error, not a malformed message")
  }

  test("tables groups versions by table and orders each table's versions oldest first") {
    val v3 = salaries.copy(schemaId = "33333333333333333333333333333333", version = 3)
    val v2 = salaries70
    val registry = SchemaRegistry.build(
      Seq(version(v3, "x"), version(departments, "x"), version(salaries, "x"), version(v2, "x")), Seq("x"))
    assert(registry.tables.keySet == Set(TableName("employees", "salaries"), TableName("employees", "departments")))
    assert(registry.tables(salaries.name).map(_.tableVersion) == Seq(1L, 2L, 3L))
    assert(registry.tables(salaries.name).map(_.schemaId) == Seq(SampleSchemaId, salaries70.schemaId, v3.schemaId))
    assert(registry.tables(departments.name).map(_.schemaId) == Seq(departments.schemaId))
    assert(registry.describe.contains("4 schema id(s) of 2 table(s)"))
  }

  test("byDataSchema finds a version by its schema, whatever the schema's text looks like") {
    val registry = SchemaRegistry.build(Seq(version(salaries, "x"), version(salaries70, "x"), version(departments, "x")), Seq("x"))
    assert(registry.byDataSchema(parseSchema(salaries63PrettySchemaJson)).map(_.schemaId).contains(SampleSchemaId))
    assert(registry.byDataSchema(parseSchema(salaries70SchemaJson)).map(_.schemaId).contains(salaries70.schemaId))
    assert(registry.byDataSchema(parseSchema(departments.dataSchemaJson)).map(_.schemaId).contains(departments.schemaId))
    val unknown = parseSchema(dataSchemaJson(salariesColumns.take(2)))
    assert(registry.byDataSchema(unknown).isEmpty)
    assert(registry.get("00000000000000000000000000000000").isEmpty)
  }

  test("the registry survives Java serialization (it is broadcast) and still matches schemas") {
    val registry = SchemaRegistry.build(Seq(version(salaries, "x"), version(departments, "y")), Seq("x", "y"))
    val buffer = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(buffer)
    out.writeObject(registry)
    out.close()
    val copy = new ObjectInputStream(new ByteArrayInputStream(buffer.toByteArray)).readObject().asInstanceOf[SchemaRegistry]
    assert(copy.versions == registry.versions)
    assert(copy.origins == Seq("x", "y"))
    assert(copy.byDataSchema(salaries63Schema).map(_.schemaId).contains(SampleSchemaId))
    assert(copy.get(departments.schemaId).get.dataSchema == parseSchema(departments.dataSchemaJson))
  }
}
