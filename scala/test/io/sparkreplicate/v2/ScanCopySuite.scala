package io.sparkreplicate.v2

import java.io.File
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SparkPlanInfo
import org.apache.spark.sql.execution.ui.{SparkListenerSQLAdaptiveExecutionUpdate, SparkListenerSQLExecutionStart}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.TempDirs

/**
 * What the README's "Where the time goes" says of the floor: Spark copies every row a row-based
 * DataSource V2 scan returns into an UnsafeRow, in a projection it plans right above the scan,
 * whatever writes the rows (Spark's `noop` sink, Parquet, a Delta table), so no form of row the
 * reader returns spares that copy. The plans are Spark's own, as its listener bus reports them,
 * nested executions (Delta's write) included: should a Spark version stop planning the
 * projection, this fails, and a reader that writes UnsafeRows itself would then pay.
 */
class ScanCopySuite extends AnyFunSuite with TempDirs {
  private var spark: SparkSession = _
  // build.sbt puts the delta-spark release of the Spark minor on the test class path, if there is one.
  private val delta = Try(Class.forName("io.delta.sql.DeltaSparkSessionExtension")).isSuccess
  /** Every plan the listener bus reported, in the order it reported them. */
  private val plans = new ConcurrentLinkedQueue[SparkPlanInfo]()

  override def beforeAll(): Unit = {
    super.beforeAll()
    val builder = SparkSession.builder().master("local[2]").appName("ScanCopySuite")
      .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
    spark = (if (!delta) builder else builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
      .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")).getOrCreate()
    spark.sparkContext.addSparkListener(new SparkListener {
      override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
        case start: SparkListenerSQLExecutionStart => plans.add(start.sparkPlanInfo)
        case update: SparkListenerSQLAdaptiveExecutionUpdate => plans.add(update.sparkPlanInfo)
        case _ =>
      }
    })
  }

  override def afterAll(): Unit = try { if (spark != null) spark.stop() } finally super.afterAll()

  /** A landing zone of 50 salaries INSERTs and their metadata. */
  private def landing(): String = {
    val root = tempDir("scan-copy").toFile
    writeContainer(new File(root, "schema/part-0.avro"), Seq(Landed("hr-metadata", 0, 0, 0L, null, sampleMetadataEnvelope)))
    writeContainer(new File(root, "data/part-0.avro"), (1 to 50).map { n =>
      Landed("hr-data", 0, n, 0L, null, dataEnvelope(salaries, salary(n, n * 10),
        headers = cdcHeaders("INSERT", changeSequence = f"$n%035d")))
    })
    root.getAbsolutePath
  }

  /** The node names from each node that `test` accepts up to the root, in every plan reported while `write` ran. */
  private def pathsToScans(write: => Unit): Seq[Seq[String]] = {
    plans.clear()
    write
    // The listener bus delivers events on a thread of its own; the write's are delivered soon after it returns.
    val deadline = System.nanoTime + 10_000_000_000L
    def found = plans.asScala.toSeq.flatMap(paths(_, Nil))
    while (found.isEmpty && System.nanoTime < deadline) Thread.sleep(50)
    found
  }

  /** The paths (a scan's node name, then its ancestors') to each of our scans in `plan`. */
  private def paths(plan: SparkPlanInfo, above: List[String]): Seq[Seq[String]] = {
    val here = plan.nodeName :: above
    if (plan.nodeName.startsWith("BatchScan replicate")) Seq(here)
    else plan.children.flatMap(paths(_, here))
  }

  test("Spark copies the scan's rows in a projection above it, writing to noop, Parquet and Delta alike") {
    val root = landing()
    val read = spark.read.format("replicate").option("schemaTopic", s"$root/schema").option("table", "employees.salaries")
    val target = tempDir("scan-copy-out").toString
    val writes = Seq[(String, () => Unit)](
      "noop" -> (() => read.load(s"$root/data").write.format("noop").mode("overwrite").save()),
      "parquet" -> (() => read.load(s"$root/data").write.parquet(s"$target/parquet"))) ++
      Option.when(delta)("delta" -> (() => read.load(s"$root/data").write.format("delta").save(s"$target/delta")))
    assert(writes.size == (if (delta) 3 else 2))
    for ((sink, write) <- writes) {
      val found = pathsToScans(write())
      assert(found.nonEmpty, s"$sink: no plan reported held the scan")
      // The scan's parent: the projection, in whole-stage code that takes the scan's rows through an InputAdapter.
      found.foreach(path => assert(path.tail.find(_ != "InputAdapter").contains("Project"),
        s"$sink: the scan's ancestors are ${path.mkString(" < ")}"))
    }
    assert(spark.read.parquet(s"$target/parquet").count() == 50)
  }
}
