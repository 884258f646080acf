package io.sparkreplicate.v2

import java.io.File
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.streaming.Trigger
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.TempDirs

/**
 * The scan's size estimate: the data files' bytes (as the file system lists them, not as the
 * connector counts them), times Spark's `fileCompressionFactor`, scaled to the columns read; and
 * what it is for, a small read broadcast in a join with a large table.
 */
class ScanStatisticsSuite extends AnyFunSuite with TempDirs {
  private var spark: SparkSession = _

  override def beforeAll(): Unit = {
    super.beforeAll()
    // Adaptive execution off: the join is planned from the estimates alone, before any stage runs.
    spark = SparkSession.builder().master("local[2]").appName("ScanStatisticsSuite")
      .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
      .config("spark.sql.adaptive.enabled", "false").getOrCreate()
  }

  override def afterAll(): Unit = try { if (spark != null) spark.stop() } finally super.afterAll()

  /** A landing zone of 40 salaries INSERTs in two data files, and their metadata; the data files. */
  private lazy val landing: (String, Seq[File]) = {
    val root = tempDir("scan-statistics").toFile
    writeContainer(new File(root, "schema/part-0.avro"), Seq(Landed("hr-metadata", 0, 0, 0L, null, sampleMetadataEnvelope)))
    val files = Seq(0, 1).map { part =>
      val file = new File(root, s"data/part-$part.avro")
      writeContainer(file, (1 to 20).map { n =>
        Landed("hr-data", 0, n, 0L, null, dataEnvelope(salaries, salary(20 * part + n, n * 10),
          headers = cdcHeaders("INSERT", changeSequence = f"${20 * part + n}%035d")))
      })
      file
    }
    (root.getAbsolutePath, files)
  }

  /** The reader's options for the landing's table, and its data path. */
  private def readOptions: (Map[String, String], String) = {
    val (root, _) = landing
    (Map("schemaTopic" -> s"$root/schema", "table" -> "employees.salaries"), s"$root/data")
  }

  private def read(): DataFrame = {
    val (options, data) = readOptions
    spark.read.format("replicate").options(options).load(data)
  }

  private def estimate(df: DataFrame): BigInt = df.queryExecution.optimizedPlan.stats.sizeInBytes

  private lazy val dataBytes = landing._2.map(_.length).sum

  test("a read of every column is estimated at its data files' size") {
    assert(dataBytes > 0)
    assert(estimate(read()) == dataBytes)
  }

  test("a read of some columns, at their share of the row's default size") {
    val full = read()
    val salary = full.select("salary")
    val share = StructType(Seq(full.schema("salary"))).defaultSize.toDouble / full.schema.defaultSize
    assert(estimate(salary) == (dataBytes * share).toLong)
    assert(estimate(salary) < estimate(full))
  }

  test("spark.sql.sources.fileCompressionFactor multiplies the estimate, as for Spark's file scans") {
    spark.conf.set("spark.sql.sources.fileCompressionFactor", "3.0")
    try assert(estimate(read()) == 3 * dataBytes)
    finally spark.conf.unset("spark.sql.sources.fileCompressionFactor")
  }

  test("a small read joined with a large table is broadcast, and the large table is not shuffled") {
    val large = spark.range(0, 5_000_000L).selectExpr("CAST(id AS INT) AS emp_no", "id % 7 AS grade")
    val joined = large.join(read(), "emp_no")
    val plan = joined.queryExecution.executedPlan
    val broadcasts = plan.collect { case join: BroadcastHashJoinExec => join }
    assert(broadcasts.size == 1 && plan.collect { case join: SortMergeJoinExec => join }.isEmpty, plan.treeString)
    assert(broadcasts.head.right.treeString.contains("BatchScan replicate"), plan.treeString)
    assert(joined.count() == 40)
  }

  test("a stream's batches report no size: the files a batch reads are not those listed when the stream started") {
    val (options, data) = readOptions
    val sizes = new ConcurrentLinkedQueue[BigInt]()
    val record: (DataFrame, Long) => Unit = (batch, _) => sizes.add(estimate(batch))
    spark.readStream.format("replicate").options(options).load(data).writeStream
      .option("checkpointLocation", tempDir("scan-statistics-stream").toString)
      .trigger(Trigger.AvailableNow()).foreachBatch(record).start().awaitTermination()
    assert(sizes.asScala.toSeq == Seq(BigInt(Long.MaxValue)))
    assert(estimate(read()) == dataBytes)
  }
}
