package io.sparkreplicate.cdc

import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.TempDirs
import io.sparkreplicate.catalyst.OutputColumns

/**
 * `Changes.latestState`, `Changes.history` and `Changes.applyChanges` (into real Delta tables, in
 * two batches) on a hand-built flat layout whose every row says why it is there: a full-load
 * baseline, a partial column mask, a real NULL, a key change, a delete carrying only the key,
 * and a message delivered twice.
 */
class ChangesSuite extends AnyFunSuite with TempDirs {
  private var spark: SparkSession = _
  // build.sbt puts the delta-spark release of the Spark minor on the test class path, if there is one.
  private val delta = Try(Class.forName("io.delta.sql.DeltaSparkSessionExtension")).isSuccess

  override def beforeAll(): Unit = {
    super.beforeAll()
    val builder = SparkSession.builder().master("local[2]").appName("ChangesSuite")
      .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
    spark = (if (!delta) builder else builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
      .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
      .config("spark.databricks.delta.snapshotPartitions", "2")
      // As configure_spark sets it with Delta (README): batches do not compile their plans again.
      .config("spark.sql.codegen.cache.maxEntries", "1000")).getOrCreate()
  }

  override def afterAll(): Unit = try { if (spark != null) spark.stop() } finally super.afterAll()

  private val key = new MetadataBuilder().putLong(OutputColumns.PrimaryKeyPosition, 1).build()
  private val table = StructType(Seq(StructField("ID", IntegerType, nullable = true, key),
    StructField("NAME", StringType), StructField("CITY", StringType)))
  private val schema = StructType(table.fields ++ Seq(
    StructField(OutputColumns.Operation, StringType), StructField(OutputColumns.ChangeSeq, StringType),
    StructField(OutputColumns.PresentColumns, ArrayType(StringType, containsNull = false)),
    StructField(OutputColumns.BeforeImage, table)))

  private val all = Seq("ID", "NAME", "CITY")
  private def change(id: Int, name: String, city: String, op: String, seq: String, present: Seq[String] = all,
      before: Row = null) = Row(id, name, city, op, seq, present, before)

  private val rows = Seq(
    change(1, "A", "Paris", "REFRESH", null, present = null),
    change(1, "B", null, "UPDATE", "002", Seq("ID", "NAME"), Row(1, "A", "Paris")), // CITY not sent: stays Paris
    change(1, "B", null, "UPDATE", "002", Seq("ID", "NAME"), Row(1, "A", "Paris")), // delivered twice
    change(1, null, null, "UPDATE", "003", Seq("ID", "CITY"), Row(1, "B", "Paris")), // a real NULL
    change(2, "X", "Oslo", "INSERT", "001"),
    change(3, "Y", null, "UPDATE", "004", Seq("ID", "NAME"), Row(2, "X", "Oslo")), // moves 2 to 3
    change(4, "Z", "Rome", "INSERT", "001"),
    change(4, null, null, "DELETE", "005", Seq("ID")))

  private def changes: DataFrame = spark.createDataFrame(rows.reverse.asJava, schema)

  test("the latest state: masks keep values, real NULLs are written, moved and deleted keys are gone") {
    assert(Changes.latestState(changes).collect().toSet == Set(Row(1, "B", null), Row(3, "Y", "Oslo")))
  }

  test("the history: every version with the change sequences that opened and closed it") {
    assert(Changes.history(changes).collect().toSet == Set(
      Row(1, "A", "Paris", null, "002"), Row(1, "B", "Paris", "002", "003"), Row(1, "B", null, "003", null),
      Row(2, "X", "Oslo", "001", "004"), Row(3, "Y", "Oslo", "004", null), Row(4, "Z", "Rome", "001", "005")))
  }

  test("a batch runs with Spark's huge-method limit at most HotSpot's, then the session's is restored") {
    import DeltaTarget.{HugeMethodLimit, withJitSizedMethods}
    val previous = spark.conf.get(HugeMethodLimit)
    try Seq("65535" -> "8000", "4000" -> "4000").foreach { case (sessionLimit, inside) =>
      spark.conf.set(HugeMethodLimit, sessionLimit)
      var seen = ""
      val failed = Try(withJitSizedMethods(spark) {
        seen = spark.conf.get(HugeMethodLimit)
        sys.error("restored even when the batch fails")
      })
      assert(failed.isFailure && seen == inside && spark.conf.get(HugeMethodLimit) == sessionLimit)
    } finally spark.conf.set(HugeMethodLimit, previous)
  }

  test("a setting for a block is restored afterwards, or unset when the session had not set it") {
    val key = DeltaTarget.MergeMaterializeSource
    try Seq(Some("all"), None).foreach { own =>
      own.fold(spark.conf.unset(key))(spark.conf.set(key, _))
      var seen = ""
      val failed = Try(DeltaTarget.withSetting(spark, key, "none") {
        seen = spark.conf.get(key)
        sys.error("restored even when the block fails")
      })
      assert(failed.isFailure && seen == "none" && spark.conf.getAll.get(key) == own)
    } finally spark.conf.unset(key)
  }

  test("keys: the schema's, or the ones given; none is an error naming the columns") {
    val plain = spark.createDataFrame(rows.asJava, StructType(schema.fields.map(_.copy(metadata = Metadata.empty))))
    val error = intercept[IllegalArgumentException](Changes.latestState(plain))
    assert(error.getMessage.contains("among: ID, NAME, CITY"))
    assert(Changes.latestState(plain, Seq("ID")).count() == 2)
  }

  test("replicate_names_mask: a bit per name the array holds, null for a null array, names as strings or UTF-8 bytes") {
    ReplayFunctions.register(spark)
    val row = spark.sql("SELECT replicate_names_mask(array('B', 'Ü', NULL, 'X'), 'A', 'B', X'C39C'), " +
      "replicate_names_mask(CAST(NULL AS ARRAY<STRING>), 'A'), " +
      "replicate_names_mask(CAST(array() AS ARRAY<STRING>), 'A')").head()
    assert(row.getLong(0) == 6L && row.isNullAt(1) && row.getLong(2) == 0L)
    val sixtyFive = (0 to 64).map(i => s"'c$i'").mkString(", ")
    val error = intercept[Exception](spark.sql(s"SELECT replicate_names_mask(array('c0'), $sixtyFive)").head())
    assert(error.getMessage.contains("at most 64"))
  }

  test("a wide table's events: their projection fits whole-stage code generation, and the window sorts them once") {
    import org.apache.spark.sql.execution.debug.codegenStringSeq
    // 30 columns of the types a table mixes, as the benchmark's: with a generated loop per column
    // to read its mask, the projection's code was 12.8 KB, past the 8,000 bytes HotSpot compiles.
    val types = Seq(IntegerType, LongType, StringType, DecimalType(18, 2), TimestampType, DateType)
    val wide = StructType(StructField("ID", LongType, nullable = true, key) +:
      (1 until 30).map(i => StructField(s"C$i", types(i % types.size))))
    val wideSchema = StructType(wide.fields ++ Seq(
      StructField(OutputColumns.Operation, StringType), StructField(OutputColumns.ChangeSeq, StringType),
      StructField(OutputColumns.PresentColumns, ArrayType(StringType, containsNull = false)),
      StructField(OutputColumns.BeforeImage, wide)))
    // (From an RDD: Spark would fold a projection of local rows into new local rows.)
    val events = spark.createDataFrame(spark.sparkContext.emptyRDD[Row], wideSchema)
    val layout = Changes.tableLayout(events, Nil)
    val adaptive = "spark.sql.adaptive.enabled"
    spark.conf.set(adaptive, "false") // (the plan as it runs, not one adaptive execution plans per stage)
    try {
      val sizes = codegenStringSeq(Changes.changeEvents(events, layout).queryExecution.executedPlan)
        .map(_._3.maxMethodCodeSize)
      assert(sizes.nonEmpty && sizes.forall(_ <= 8000), s"the longest method of each stage: $sizes")
      val replayed = Changes.replayLast(Changes.changeEvents(events, layout), layout).queryExecution.executedPlan
      assert(replayed.collect { case s: org.apache.spark.sql.execution.SortExec => s }.size == 1, replayed)
    } finally spark.conf.unset(adaptive)
  }

  /** The changes up to sequence 002 (with the full load), then the others. */
  private def inTwoBatches: Seq[DataFrame] = {
    val early = col(OutputColumns.ChangeSeq).isNull || col(OutputColumns.ChangeSeq) <= "002"
    Seq(changes.where(early), changes.where(!early))
  }

  private def deltaTable(): String = tempDir("apply").resolve("target").toString

  test("applyChanges in two batches: masks carry over from the table, the move and the deletes apply; again: all ignored") {
    assume(delta, "no Delta Lake release is built for this Spark minor")
    val target = deltaTable()
    val results = inTwoBatches.map(Changes.applyChanges(_, target))
    // The first batch's duplicate is ignored; the second updates 1, moves 2 to 3 and deletes 4.
    assert(results == Seq(ApplyResult(1, 3, 0, 0, 1), ApplyResult(2, 1, 1, 2, 0)))
    val expected = Set(Row(1, "B", null), Row(3, "Y", "Oslo"))
    assert(spark.read.format("delta").load(target).collect().toSet == expected)
    assert(Changes.applyChanges(changes, target) == ApplyResult(3, 0, 0, 0, rows.size))
    assert(spark.read.format("delta").load(target).collect().toSet == expected)
    // Each batch's write was tagged with it (Delta's idempotent writes, seen in the table's own
    // log); the session keeps no tag.
    val tag = "\"txn\":\\{\"appId\":\"spark-replicate/[^\"]+\",\"version\":(\\d+)".r
    val commits = Files.list(Paths.get(target, "_delta_log")).iterator.asScala
      .filter(_.toString.endsWith(".json")).toSeq.sorted
    assert(commits.flatMap(c => tag.findAllMatchIn(Files.readString(c)).map(_.group(1).toInt)) == Seq(1, 2))
    assert(!spark.conf.getAll.contains(DeltaTarget.TxnAppId) && !spark.conf.getAll.contains(DeltaTarget.TxnVersion))
  }

  test("applyChanges with scdType 2 in two batches: the history, versions closed across batches") {
    assume(delta, "no Delta Lake release is built for this Spark minor")
    val target = deltaTable()
    inTwoBatches.foreach(Changes.applyChanges(_, target, scdType = 2))
    assert(spark.read.format("delta").load(target).collect().toSet == Changes.history(changes).collect().toSet)
    val error = intercept[IllegalArgumentException](Changes.applyChanges(changes, target))
    assert(error.getMessage.contains("a history (SCD type 2) table: apply with scdType=2"))
  }

  test("applyChangesStream: one micro-batch per landed file, stopped and restarted from its checkpoint") {
    assume(delta, "no Delta Lake release is built for this Spark minor")
    val (target, landed) = (deltaTable(), tempDir("landed"))
    val checkpoint = tempDir("checkpoint").toString
    def run(): Unit = {
      val stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", "1")
        .option("recursiveFileLookup", "true").parquet(landed.toString)
      val query = Changes.applyChangesStream(stream, target, checkpoint)
      try query.processAllAvailable() finally query.stop()
    }
    val (first, second) = (inTwoBatches.head, inTwoBatches.last)
    first.coalesce(1).write.parquet(landed.resolve("1").toString)
    run()
    assert(spark.read.format("delta").load(target).collect().toSet == Changes.latestState(first).collect().toSet)
    second.coalesce(1).write.parquet(landed.resolve("2").toString)
    run()
    assert(spark.read.format("delta").load(target).collect().toSet == Set(Row(1, "B", null), Row(3, "Y", "Oslo")))
    val error = intercept[IllegalArgumentException](Changes.applyChangesStream(first, target, checkpoint))
    assert(error.getMessage.contains("a batch DataFrame is applied once"))
  }
}
