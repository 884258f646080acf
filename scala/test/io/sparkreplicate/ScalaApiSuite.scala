package io.sparkreplicate

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.sql.Timestamp
import java.time.{Instant, LocalDateTime, ZoneOffset}

import scala.reflect.io.Directory

import org.apache.spark.SparkConf
import org.apache.spark.serializer.JavaSerializer
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BindReferences, Expression}
import org.apache.spark.sql.types.{BinaryType, StructType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.sql.ReplicateDecode

/**
 * The connector end to end through `spark.read.format("replicate")`, on a landing zone the test
 * writes itself: a schema topic with the metadata of two tables, and a data topic holding both
 * tables' changes in Kafka-sink-style Avro container files.
 */
class ScalaApiSuite extends AnyFunSuite with BeforeAndAfterAll {
  import ScalaApiSuite._

  private var spark: SparkSession = _
  private var root: File = _
  private def path(sub: String) = new File(root, sub).getAbsolutePath

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark = SparkSession.builder().master("local[2]").appName("ScalaApiSuite")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.session.timeZone", "UTC")
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.sql.extensions", classOf[ReplicateExtensions].getName)
      .getOrCreate()
    root = Files.createTempDirectory("replicate-landing").toFile
    writeLandingZone()
  }

  override def afterAll(): Unit = {
    try {
      if (spark != null) spark.stop()
      if (root != null) new Directory(root).deleteRecursively()
    } finally super.afterAll()
  }

  // ---------------------------------------------------------------- the landing zone

  /** Every change in the data topic, in (partition, offset) order. */
  private val changes: Seq[Change] = Seq(
    Change(0, salaries, "REFRESH", salary(14472, 49592), fromSample = true),
    Change(0, salaries, "INSERT", salary(10001, 60117, "1986-06-26", "1987-06-26")),
    Change(0, departments, "INSERT", Map("dept_no" -> "d001", "dept_name" -> "Marketing",
      "budget" -> BigDecimal("1234.50"), "created" -> Instant.parse("2001-02-03T04:05:06.000007Z"))),
    Change(0, salaries, "UPDATE", salary(10001, 62102, "1986-06-26", "9999-01-01"),
      before = salary(10001, 60117, "1986-06-26", "1987-06-26"), changeMask = "0A"),
    Change(0, salaries, "INSERT", salary(10002, 65828, "1996-08-03", "1997-08-03")),
    Change(0, departments, "INSERT", Map("dept_no" -> "d002", "dept_name" -> "Finance")),
    Change(1, salaries, "DELETE", Map[String, Any]("emp_no" -> 10002, "from_date" -> "1996-08-03"),
      before = salary(10002, 65828, "1996-08-03", "1997-08-03"), changeMask = "05"),
    Change(1, salaries, "INSERT", salary(10003, 40006, "1995-12-03", "9999-01-01"), selfDescribing = true),
    Change(1, departments, "UPDATE", Map("dept_no" -> "d001", "dept_name" -> "Sales"),
      before = Map("dept_no" -> "d001", "dept_name" -> "Marketing"), changeMask = "02"),
    Change(1, salaries, "UPDATE", salary(10003, 43311, "1995-12-03", "9999-01-01"),
      before = salary(10003, 40006, "1995-12-03", "9999-01-01"), changeMask = "02")
  ).zipWithIndex.map { case (c, i) => c.copy(seq = i + 1) }

  private def landed(c: Change, offset: Long) =
    Landed("hr-data", c.partition, offset, 1679409261000L + c.seq, s"key-${c.seq}".getBytes(UTF_8), c.envelope)

  private def writeLandingZone(): Unit = {
    writeContainer(new File(root, "schema/part-0.avro"), Seq(sampleMetadataEnvelope, departments.metadataEnvelope())
      .zipWithIndex.map { case (m, i) => Landed("hr-metadata", 0, i, 1679409200000L, null, m) })
    for ((partition, cs) <- changes.groupBy(_.partition)) {
      writeContainer(new File(root, s"data/hr/part-$partition.avro"), cs.zipWithIndex.map { case (c, i) => landed(c, 100L + i) })
    }
    // A side file the listing must skip.
    writeBytes(new File(root, "data/hr/_SUCCESS"), Array.emptyByteArray)

    // The salaries changes in the other framings, their metadata in the same topic and framing.
    val salaryTopic = sampleMetadataEnvelope +: changes.filter(_.table == salaries).map(_.envelope)
    writeLengthPrefixed(new File(root, "framings/length-prefixed/hr.bin"), salaryTopic)
    salaryTopic.zipWithIndex.foreach { case (m, i) => writeBytes(new File(root, f"framings/message/msg-$i%03d.bin"), m) }
    writeContainer(new File(root, "framings/avro/part-0.avro"), salaryTopic.zipWithIndex.map { case (m, i) =>
      Landed("hr", 0, i, 0L, null, m) })

    // One container of many small blocks, for splitting.
    writeContainer(new File(root, "big/part-0.avro"), (1 to BigCount).map { n =>
      Landed("hr-data", 0, n, 0L, null, dataEnvelope(salaries, salary(n, n * 10),
        headers = cdcHeaders("INSERT", changeSequence = f"$n%035d")))
    }, syncInterval = 1024)

    // Good and broken messages side by side, metadata in the same topic (no schema topic needed).
    writeContainer(new File(root, "mixed/part-0.avro"), Seq(sampleMetadataEnvelope,
      dataEnvelope(salaries, salary(1, 10)), "definitely not an envelope".getBytes(UTF_8),
      dataEnvelope(salaries, salary(2, 20))).zipWithIndex.map { case (m, i) => Landed("mixed", 0, i, 0L, null, m) })
  }

  private def reader(options: (String, String)*) = {
    val r = spark.read.format("replicate").option("schemaTopic", path("schema"))
    options.foldLeft(r) { case (acc, (k, v)) => acc.option(k, v) }
  }
  private def salariesDf(options: (String, String)*): DataFrame =
    reader(("table" -> "employees.salaries") +: options: _*).load(path("data/hr"))

  /** The cause chain's ReplicateException, wherever Spark wrapped it. */
  private def replicateError(body: => Any): ReplicateException = {
    val thrown = intercept[Throwable](body)
    Iterator.iterate(thrown)(_.getCause).takeWhile(_ != null).collectFirst { case e: ReplicateException => e }
      .getOrElse(fail(s"no ReplicateException in the cause chain of $thrown", thrown))
  }

  // ---------------------------------------------------------------- tests

  test("the schema is the table's columns in ordinal order, then the header columns") {
    val names = salariesDf().schema.fieldNames.toSeq
    assert(names.take(4) == Seq("emp_no", "salary", "from_date", "to_date"))
    assert(names.drop(4) == Seq("header__schema_id", "header__table_version", "header__operation", "header__change_seq",
      "header__timestamp", "header__stream_position", "header__transaction_id", "header__transaction_event_counter",
      "header__transaction_last_event", "header__external_schema_id", "header__change_mask", "header__column_mask",
      "header__changed_columns", "header__present_columns", "header__before_image"))
    val departmentsDf = reader("table" -> "employees.departments").load(path("data/hr"))
    assert(departmentsDf.schema("budget").dataType.simpleString == "decimal(12,2)")
    assert(departmentsDf.schema("created").dataType.simpleString == "timestamp")
  }

  test("reading a table returns exactly its rows, with values, headers, masks and before images") {
    val rows = salariesDf()
      .selectExpr("emp_no", "salary", "from_date", "to_date", "header__operation", "header__change_seq",
        "header__timestamp", "hex(header__change_mask)", "header__changed_columns", "header__before_image",
        "header__schema_id", "header__table_version")
      .collect().toSeq
    // DATE columns sent as text are typed by their metadata.
    def date(v: Any) = if (v == null) null else java.sql.Date.valueOf(v.toString)
    val expected = changes.filter(_.table == salaries).map { c =>
      val image = if (c.data != null) c.data else c.before
      Row(image("emp_no"), image.getOrElse("salary", null), date(image("from_date")), date(image.getOrElse("to_date", null)),
        c.operation, if (c.fromSample) null else c.changeSequence, if (c.fromSample) null else c.timestamp,
        c.changeMask, c.changeMask match {
          case null => null
          case m => Seq("emp_no", "salary", "from_date", "to_date").zipWithIndex
            .filter { case (_, i) => (Integer.parseInt(m, 16) & (1 << i)) != 0 }.map(_._1)
        },
        if (c.before == null) null else Row(c.before("emp_no"), c.before("salary"), date(c.before("from_date")), date(c.before("to_date"))),
        SampleSchemaId, 1L)
    }
    assert(rows.sortBy(sortKey) == expected.sortBy(sortKey))
  }

  test("the other table, with decimals and timestamps, and its before image") {
    val rows = reader("table" -> "EMPLOYEES.DEPARTMENTS").load(path("data/hr"))
      .selectExpr("dept_no", "dept_name", "budget", "created", "header__operation", "header__before_image.dept_name")
      .collect().map(r => r.toSeq).sortBy(_.mkString("|")).toSeq
    assert(rows == Seq(
      Seq("d001", "Marketing", decimal("1234.50", 2), Timestamp.from(Instant.parse("2001-02-03T04:05:06.000007Z")), "INSERT", null),
      Seq("d001", "Sales", null, null, "UPDATE", "Marketing"),
      Seq("d002", "Finance", null, null, "INSERT", null)))
  }

  test("option names are case-insensitive; schemaTopic takes globs and comma-separated lists") {
    val df = spark.read.format("replicate").option("SCHEMATOPIC", s"${path("sch*")},${path("schema/part-0.avro")}")
      .option("Table", "employees.salaries").option("EXPANDMASKS", "false").load(path("data/hr"))
    assert(!df.schema.fieldNames.contains("header__changed_columns"))
    assert(df.count() == changes.count(_.table == salaries))
  }

  test("counts per operation") {
    val counts = salariesDf().groupBy("header__operation").count().collect()
      .map(r => r.getString(0) -> r.getLong(1)).toMap
    assert(counts == Map("REFRESH" -> 1L, "INSERT" -> 3L, "UPDATE" -> 2L, "DELETE" -> 1L))
    assert(salariesDf().filter("header__operation = 'UPDATE' and array_contains(header__changed_columns, 'salary')").count() == 2)
  }

  test("layout=flat without `table` and several tables is an error that lists them (TableRequired)") {
    val e = replicateError(reader("layout" -> "flat").load(path("data/hr")).schema)
    assert(e.errorId == ErrorId.TableRequired)
    assert(e.getMessage.contains("employees.departments") && e.getMessage.contains("employees.salaries"), e.getMessage)
    assert(e.getMessage.contains("`table`"))
  }

  test("without `table`, several tables are read in the generic layout: variant row images typed per table") {
    val df = reader().load(path("data/hr"))
    assert(df.schema.fieldNames.take(3).toSeq == Seq("header__schema_name", "header__table_name", "header__schema_id"))
    assert(df.schema("data").dataType.simpleString == "variant")
    assert(df.schema("header__before_image").dataType.simpleString == "variant")
    val perTable = df.groupBy("header__table_name").count().collect().map(r => r.getString(0) -> r.getLong(1)).toMap
    assert(perTable == changes.groupBy(_.table.table).map { case (t, cs) => t -> cs.size.toLong })
    val d001 = df.where("header__table_name = 'departments' and header__operation = 'INSERT' and variant_get(data, '$.dept_no', 'string') = 'd001'")
      .selectExpr("header__schema_name", "variant_get(data, '$.budget', 'decimal(12,2)')", "variant_get(data, '$.created', 'timestamp')",
        "schema_of_variant(data)", "header__before_image is null", "header__present_columns")
      .collect().toSeq
    assert(d001.size == 1)
    val r = d001.head
    assert(r.getString(0) == "employees" && r.getDecimal(1) == new java.math.BigDecimal("1234.50"))
    assert(r.getTimestamp(2).toInstant == Instant.parse("2001-02-03T04:05:06.000007Z"))
    // Variant decimals keep the value, not the declared scale: 1234.50 is stored as 1234.5.
    assert(r.getString(3).contains("budget: DECIMAL(5,1)") && r.getString(3).contains("created: TIMESTAMP"), r.getString(3))
    assert(r.getBoolean(4) && r.get(5) == null)
    // A DATE column sent as text is a date in the variant, and the before image is a variant too.
    val update = df.where("header__table_name = 'salaries' and header__operation = 'UPDATE' and variant_get(data, '$.emp_no', 'int') = 10001")
      .selectExpr("variant_get(data, '$.to_date', 'date')", "variant_get(header__before_image, '$.salary', 'int')", "schema_of_variant(variant_get(data, '$.to_date'))",
        "header__changed_columns").collect().head
    assert(update.getDate(0) == java.sql.Date.valueOf("9999-01-01") && update.getInt(1) == 60117)
    assert(update.getString(2) == "DATE" && update.getSeq[String](3) == Seq("salary", "to_date"))
    // `table` with layout=generic keeps the generic rows of that table only.
    assert(reader("layout" -> "generic", "table" -> "employees.salaries").load(path("data/hr")).count() ==
      changes.count(_.table == salaries))
  }

  test("a table no metadata announced is TableNotFound; a bad option value names the option") {
    assert(replicateError(reader("table" -> "employees.titles").load(path("data/hr")).schema).errorId == ErrorId.TableNotFound)
    val badFraming = replicateError(salariesDf("framing" -> "xml").schema)
    assert(badFraming.errorId == ErrorId.InvalidOption && badFraming.getMessage.contains("framing"))
    val badMode = replicateError(salariesDf("MODE" -> "lenient").schema)
    assert(badMode.errorId == ErrorId.InvalidOption && badMode.getMessage.contains("mode"))
  }

  test("framing: auto and every explicit value read the same changes") {
    val expected = changes.count(_.table == salaries)
    // Metadata travels in the same topic (and framing) as the data here: no schemaTopic.
    def load(framing: String, dir: String) =
      spark.read.format("replicate").option("framing", framing).load(path(s"framings/$dir"))
    for (framing <- Seq("avro", "length-prefixed", "message")) {
      assert(load("auto", framing).count() == expected, s"auto on $framing")
      assert(load(framing, framing).count() == expected, framing)
    }
    assert(load("AVRO", "avro").count() == expected, "option values are case-insensitive")
    assert(salariesDf("framing" -> "avro").count() == expected)
    val rows = (framing: String) => load(framing, framing)
      .selectExpr("emp_no", "salary", "header__operation", "header__change_seq").collect().map(_.toString).sorted.toSeq
    assert(rows("length-prefixed") == rows("avro"))
    assert(rows("message") == rows("avro"))
    assert(rows("avro") == salariesDf().selectExpr("emp_no", "salary", "header__operation", "header__change_seq")
      .collect().map(_.toString).sorted.toSeq)
  }

  test("framing: a wrong explicit framing fails the read (FAILFAST), naming the file and the reason") {
    val e = replicateError(spark.read.format("replicate").option("framing", "message")
      .load(path("framings/avro")).collect())
    assert(e.getMessage.contains("REPLICATE_BAD_MAGIC") || e.getMessage.contains("REPLICATE_NO_METADATA"), e.getMessage)
    val wrong = replicateError(salariesDf("framing" -> "length-prefixed").collect())
    // Whichever task fails first names its own file.
    assert("""data/hr/part-\d\.avro""".r.findFirstIn(wrong.getMessage).isDefined, wrong.getMessage)
    assert(wrong.getMessage.contains("REPLICATE_BAD_FRAME"), wrong.getMessage)
  }

  test("includeSource: file, position and the Kafka coordinates of every row") {
    val df = salariesDf("includeSource" -> "true")
    val sourceType = df.schema("header__source").dataType.asInstanceOf[StructType]
    assert(Seq("file", "position", "topic", "partition", "offset", "timestamp", "key").forall(sourceType.fieldNames.contains),
      sourceType)
    // The whole struct is selected: no nested pruning here (nested pruning is tested below).
    val rows = df.select("header__change_seq", "header__source").collect().toSeq
    assert(rows.size == changes.count(_.table == salaries))
    val bySeq = rows.map(r => Option(r.getString(0)).getOrElse("sample") -> r.getStruct(1)).toMap
    for ((partition, cs) <- changes.groupBy(_.partition); (c, i) <- cs.zipWithIndex if c.table == salaries) {
      val source = bySeq(if (c.fromSample) "sample" else c.changeSequence)
      def field[T](name: String): T = source.getAs[T](name)
      assert(field[String]("file").endsWith(s"data/hr/part-$partition.avro"), source)
      assert(field[Long]("position") > 0, "position of the container block")
      assert(field[String]("topic") == "hr-data")
      assert(field[Int]("partition") == partition)
      assert(field[Long]("offset") == 100L + i)
      assert(field[Timestamp]("timestamp") == new Timestamp(1679409261000L + c.seq))
      assert(new String(field[Array[Byte]]("key"), UTF_8) == s"key-${c.seq}")
    }
    assert(!salariesDf().schema.fieldNames.contains("header__source"), "includeSource defaults to false")
  }

  test("includeSource with only some source fields selected (nested pruning) returns those fields") {
    val rows = salariesDf("includeSource" -> "true")
      .selectExpr("header__source.topic", "header__source.offset", "header__source.partition").collect()
    assert(rows.map(r => (r.getString(0), r.getLong(1), r.getInt(2))).toSet ==
      changes.groupBy(_.partition).toSeq.flatMap { case (p, cs) =>
        cs.zipWithIndex.collect { case (c, i) if c.table == salaries => ("hr-data", 100L + i, p) }
      }.toSet)
  }

  test("a small maxPartitionBytes splits one container file; no message is lost or duplicated") {
    val file = new File(root, "big/part-0.avro")
    val key = "spark.sql.files.maxPartitionBytes"
    val maxBytes = 16 * 1024
    spark.conf.set(key, maxBytes.toString)
    try {
      val df = reader("table" -> "employees.salaries").load(path("big"))
      val partitions = df.rdd.getNumPartitions
      assert(partitions >= file.length / maxBytes, s"${file.length} bytes in $partitions partitions")
      val perPartition = df.select("emp_no").rdd.mapPartitions(it => Iterator(it.size)).collect()
      assert(perPartition.count(_ > 0) > 1, perPartition.mkString(","))
      val ids = df.select("emp_no").collect().map(_.getInt(0)).toSeq
      assert(ids.size == BigCount, "no duplicates")
      assert(ids.sorted == (1 to BigCount), "none lost")
    } finally spark.conf.unset(key)
    assert(reader("table" -> "employees.salaries").load(path("big")).rdd.getNumPartitions < 4)
  }

  private def mixed(mode: String) = spark.read.format("replicate").option("mode", mode).load(path("mixed"))

  test("metadata in the data topic serves when no schemaTopic is given; FAILFAST and DROPMALFORMED") {
    val failFast = replicateError(mixed("FAILFAST").collect())
    assert(failFast.errorId == ErrorId.BadMagic)
    assert(failFast.getMessage.contains("mixed/part-0.avro"), failFast.getMessage)
    assert(mixed("DROPMALFORMED").select("emp_no").collect().map(_.getInt(0)).sorted.toSeq == Seq(1, 2))
  }

  test("PERMISSIVE keeps the broken message as a corrupt row, and only that row") {
    // The whole struct is selected: no nested pruning here (nested pruning is tested next).
    val rows = mixed("PERMISSIVE").select("emp_no", "_corrupt_record").collect().map { r =>
      val corrupt = r.getStruct(1)
      Seq[Any](r.get(0), if (corrupt == null) null else corrupt.getAs[String]("reason"),
        if (corrupt == null) null else new String(corrupt.getAs[Array[Byte]]("bytes"), UTF_8))
    }.sortBy(_.mkString).toSeq
    assert(rows == Seq(Seq[Any](1, null, null), Seq[Any](2, null, null),
      Seq(null, "REPLICATE_BAD_MAGIC", "definitely not an envelope")), "the corrupt record leaks into the next row")
  }

  test("PERMISSIVE with only _corrupt_record.message selected (nested pruning)") {
    val messages = mixed("PERMISSIVE").selectExpr("_corrupt_record.message").collect().map(_.getString(0)).toSeq
    assert(messages.count(_ != null) == 1, messages)
    assert(messages.filter(_ != null).forall(_.contains("mixed/part-0.avro")), messages)
  }

  private def metadataView(options: (String, String)*) =
    options.foldLeft(spark.read.format("replicate").option("messages", "metadata")) { case (r, (k, v)) => r.option(k, v) }

  test("the metadata view: one row per metadata message of the loaded paths, no schema topic needed") {
    val rows = metadataView().load(path("schema"))
      .select("schema_name", "table_name", "table_version", "primary_key", "columns.name").collect()
      .map(r => (r.getString(0), r.getString(1), r.getLong(2), r.getSeq[String](3), r.getSeq[String](4))).sortBy(_._2).toSeq
    assert(rows == Seq(("employees", "departments", 1L, Seq("dept_no"), departmentsColumns.map(_.name)),
      ("employees", "salaries", 1L, Seq("emp_no", "from_date"), salariesColumns.map(_.name))))
    assert(metadataView("table" -> "employees.departments").load(path("schema")).count() == 1)
  }

  test("the metadata view of a data topic: data messages filtered out, a malformed message under `mode`") {
    val failFast = replicateError(metadataView().load(path("mixed")).collect())
    assert(failFast.errorId == ErrorId.BadMagic && failFast.getMessage.contains("mixed/part-0.avro"), failFast.getMessage)
    assert(metadataView("mode" -> "DROPMALFORMED").load(path("mixed")).select("schema_id").collect()
      .map(_.getString(0)).toSeq == Seq(SampleSchemaId))
    assert(io.sparkreplicate.v2.ReplicateReadMetrics.lastRead.filter(_._2 != 0).filter(!_._1.startsWith("malformed_")) ==
      Map("messagesRead" -> 4L, "rowsReturned" -> 1L, "filteredOut" -> 2L, "malformed" -> 1L, "dropped" -> 1L))
  }

  test("two versions: schemaEvolution merge, latest and fail, and a pushed version filter in EXPLAIN") {
    val longSalary = salariesColumns.map(c => if (c.name == "salary") c.copy(avroType = "\"long\"", sourceType = "INT8") else c)
    val v2 = TableDef("A2A2A2A2A2A2A2A2A2A2A2A2A2A2A2A2", "employees", "salaries", 2, longSalary, dataSchemaJson(longSalary))
    writeContainer(new File(root, "evolved/schema/part-0.avro"), Seq(sampleMetadataEnvelope, v2.metadataEnvelope())
      .zipWithIndex.map { case (m, i) => Landed("meta", 0, i, 0L, null, m) })
    writeContainer(new File(root, "evolved/data/part-0.avro"), Seq(dataEnvelope(salaries, salary(1, 10)),
      dataEnvelope(v2, salary(2, 0) + ("salary" -> 5000000000L), headers = cdcHeaders("UPDATE")))
      .zipWithIndex.map { case (m, i) => Landed("data", 0, i, 0L, null, m) })
    def evolved(options: (String, String)*) = options.foldLeft(spark.read.format("replicate")
      .option("schemaTopic", path("evolved/schema")).option("table", "employees.salaries")) { case (r, (k, v)) => r.option(k, v) }
      .load(path("evolved/data"))
    val merged = evolved()
    assert(merged.schema("salary").dataType.simpleString == "bigint")
    assert(merged.selectExpr("salary", "header__table_version").collect().map(r => (r.getLong(0), r.getLong(1))).toSet ==
      Set((10L, 1L), (5000000000L, 2L)))
    assert(evolved("schemaEvolution" -> "latest").count() == 2)
    assert(replicateError(evolved("schemaEvolution" -> "fail").schema).errorId == ErrorId.SchemaEvolved)
    val pushed = merged.where("header__table_version = 2")
    assert(pushed.select("emp_no").collect().map(_.getInt(0)).toSeq == Seq(2))
    val plan = pushed.queryExecution.executedPlan.toString
    assert(plan.contains("employees.salaries(versions=2)") && plan.contains("EqualTo(header__table_version,2)"), plan)
  }

  test("from_replicate on a binary column returns the reader's rows for the same options, null for others") {
    val session = spark
    import session.implicits._
    val values = (sampleMetadataEnvelope +: changes.map(_.envelope)).toDF("value")
    val options = Map("schemaTopic" -> path("schema"), "table" -> "employees.salaries")
    val decoded = values.select(functions.from_replicate($"value", options).as("r"))
    val expected = salariesDf()
    assert(decoded.schema("r").dataType == expected.schema)
    assert(decoded.where("r IS NOT NULL").select("r.*").collect().toSeq.sortBy(sortKey) ==
      expected.collect().toSeq.sortBy(sortKey))
    assert(decoded.where("r IS NULL").count() == 1 + changes.count(_.table != salaries))
    values.createOrReplaceTempView("salary_messages")
    val sql = spark.sql(s"SELECT from_replicate(value, map('schemaTopic', '${path("schema")}', " +
      "'table', 'employees.salaries')).emp_no AS emp_no FROM salary_messages")
    assert(sql.where("emp_no IS NOT NULL").count() == changes.count(_.table == salaries))
    assert(sql.queryExecution.analyzed.toString.contains("from_replicate(value"))
    val javaOptions = new java.util.HashMap[String, String]()
    options.foreach { case (k, v) => javaOptions.put(k, v) }
    javaOptions.put("mode", "DROPMALFORMED")
    val refused = replicateError(values.select(functions.from_replicate($"value", javaOptions)).schema)
    assert(refused.errorId == ErrorId.InvalidOption && refused.getMessage.contains("PERMISSIVE"))
  }

  test("from_replicate's copies bound to different inputs decode a message once, in the task that deserializes them") {
    val session = spark
    import session.implicits._
    val call = Seq.empty[Array[Byte]].toDF("value")
      .select(functions.from_replicate($"value", Map("schemaTopic" -> path("schema"), "table" -> "employees.salaries")))
      .queryExecution.analyzed.expressions.flatMap(_.collect { case d: ReplicateDecode => d }).head
    // As a pushed-down filter and the projection above it bind the call: one copy each.
    val value = call.child.asInstanceOf[AttributeReference]
    val other = AttributeReference("key", BinaryType)()
    val copies = Seq(BindReferences.bindReference(call, Seq(value)), BindReferences.bindReference(call, Seq(other, value)))
    val serializer = new JavaSerializer(new SparkConf()).newInstance()
    val deserialized = serializer.deserialize[Seq[Expression]](serializer.serialize(copies))
    val (filter, project) = (deserialized(0), deserialized(1))
    val messages = changes.filter(_.table == salaries).take(2)
    val (first, second) = (messages(0).envelope, messages(1).envelope)
    val decoded = filter.eval(InternalRow(first))
    assert(project.eval(InternalRow(null, first)).asInstanceOf[AnyRef] eq decoded.asInstanceOf[AnyRef])
    val empNo = call.dataType.asInstanceOf[StructType].fieldIndex("emp_no")
    def empNoOf(struct: Any) = struct.asInstanceOf[InternalRow].getInt(empNo)
    // Another message through one copy, then the first again through the other: each decoded anew.
    assert(empNoOf(project.eval(InternalRow(null, second))) == messages(1).data("emp_no"))
    assert(empNoOf(filter.eval(InternalRow(first))) == messages(0).data("emp_no"))
  }
}

object ScalaApiSuite {
  val BigCount = 3000

  /** One change landed in the data topic; `seq` (its place in the topic) makes its headers unique. */
  final case class Change(partition: Int, table: TableDef, operation: String, data: Map[String, Any],
      before: Map[String, Any] = null, changeMask: String = null, selfDescribing: Boolean = false,
      fromSample: Boolean = false, seq: Int = 0) {
    def changeSequence: String = f"20230321143421000000000000000$seq%06d"
    def timestamp: Timestamp = Timestamp.from(LocalDateTime.parse(f"2023-03-21T14:34:21.$seq%06d").toInstant(ZoneOffset.UTC))

    def envelope: Array[Byte] =
      if (fromSample) {
        val payload = avroBinary(table.dataSchema, datumFromJson(table.dataSchema, dataSample.get("message")))
        Fixtures.envelope("DT", payload, dataSample.get("messageSchemaId").asText)
      } else dataEnvelope(table, data, before, cdcHeaders(operation, changeSequence = changeSequence,
        timestamp = f"2023-03-21 14:34:21.$seq%06d", changeMask = if (changeMask == null) null else unhex(changeMask)),
        byId = !selfDescribing, embed = selfDescribing)
  }

  private val sortKey: Row => String = _.toString
}
