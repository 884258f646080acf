package io.sparkreplicate.streaming

import java.nio.file.{Files, Path}
import java.nio.file.attribute.FileTime

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path => HadoopPath}
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.{DecodeLimits, ErrorId, ReplicateException, TempDirs}
import io.sparkreplicate.Fixtures._
import io.sparkreplicate.files.{FileOptions, Framing}

/** The stream's planning over a local landing: what each trigger takes, logs and decodes with. */
class LandingStreamSuite extends AnyFunSuite with TempDirs {

  /**
   * @param metadataOfData the metadata messages of data files, by file name; None: a schema topic holds them
   */
  private final class Landing(metadataOfData: Option[Map[String, TableDef]] = None) {
    val root: Path = tempDir("landing")
    val checkpoint: String = root.resolve("checkpoint/sources/0").toString
    private val options = FileOptions(Seq(root.resolve("hr").toString),
      if (metadataOfData.isEmpty) Seq(root.resolve("_schema").toString) else Nil,
      Framing.Auto, "value", ignoreCorruptFiles = false, ignoreMissingFiles = false)
    /** The data files scanned for metadata, in order. */
    val scanned = scala.collection.mutable.ArrayBuffer.empty[String]
    Files.createDirectories(root.resolve("hr"))
    Files.createDirectories(root.resolve("_schema"))

    /** A data file of `bytes` bytes, modified at `minute` (the content is never read: there is a schema topic). */
    def data(name: String, bytes: Int, minute: Int): Path = landed(root.resolve(s"hr/$name"), new Array[Byte](bytes), minute)

    def metadata(name: String, table: TableDef, minute: Int): Path =
      landed(root.resolve(s"_schema/$name"), table.metadataEnvelope(), minute)

    private def landed(path: Path, bytes: Array[Byte], minute: Int): Path = {
      Files.write(path, bytes)
      Files.setLastModifiedTime(path, FileTime.fromMillis(1714644600000L + minute * 60000L))
      path
    }

    def stream(position: StartingPosition = StartingPosition.Earliest): LandingStream = {
      val conf = new Configuration
      new LandingStream(options, position, DecodeLimits.Default, new FileLog(checkpoint, conf), conf, splits =>
        metadataOfData.fold(fail("the data files are not scanned for metadata when there is a schema topic")) { md =>
          val names = splits.map(s => new HadoopPath(s.path).getName)
          scanned ++= names
          names.flatMap(md.get).map(_.tableVersion())
        })
    }
  }

  private def names(batch: StreamBatch) = batch.files.map(_.getPath.getName)

  test("each trigger takes the new files oldest first within its limit, and logs them before returning") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    Seq("c" -> 3, "a" -> 1, "b" -> 2).foreach { case (name, minute) => landing.data(name, 10, minute) }
    val stream = landing.stream()
    assert(stream.initialOffset(Nil, Nil) == -1)
    assert(stream.latestOffset(-1, Admission(Some(2), None)) == 0)
    assert(names(stream.batch(-1, 0)) == Seq("a", "b"))
    assert(stream.backlog == Backlog(1, 10))
    assert(stream.latestOffset(0, Admission(Some(2), None)) == 1)
    assert(names(stream.batch(0, 1)) == Seq("c") && stream.backlog == Backlog(0, 0))
    assert(stream.latestOffset(1, Admission.Unlimited) == 1, "nothing new: no batch")
    landing.data("d", 10, minute = 4)
    assert(stream.latestOffset(1, Admission.Unlimited) == 2 && names(stream.batch(1, 2)) == Seq("d"))
  }

  test("a restart resumes after the log: a batch logged but not run is offered again with the same files") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    landing.data("a", 10, minute = 1)
    assert(landing.stream().latestOffset(-1, Admission.Unlimited) == 0) // then the driver dies
    landing.data("b", 10, minute = 2)
    val restarted = landing.stream()
    assert(restarted.lastBatch == 0)
    assert(restarted.latestOffset(-1, Admission.Unlimited) == 0, "the logged batch, not a new listing")
    assert(names(restarted.batch(-1, 0)) == Seq("a"))
    assert(restarted.latestOffset(0, Admission.Unlimited) == 1 && names(restarted.batch(0, 1)) == Seq("b"))
    val e = intercept[ReplicateException](restarted.latestOffset(5, Admission.Unlimited))
    assert(e.errorId == ErrorId.BadCheckpoint, e.detail)
  }

  test("each batch decodes with the metadata landed by its planning, as logged") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    landing.data("a", 10, minute = 1)
    val stream = landing.stream()
    stream.latestOffset(-1, Admission.Unlimited)
    landing.metadata("md-1", departments, minute = 2)
    landing.data("b", 10, minute = 3)
    stream.latestOffset(0, Admission.Unlimited)
    assert(stream.batch(-1, 0).registry.tables.keySet == Set(salaries.name))
    assert(stream.batch(0, 1).registry.tables.keySet == Set(salaries.name, departments.name))
    assert(landing.stream().registry(0).tables.keySet == Set(salaries.name), "the same after a restart")
  }

  test("startingPosition latest logs the files already landed, unread, with their metadata") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    val present = landing.data("a", 10, minute = 1)
    val stream = landing.stream(StartingPosition.Latest)
    val listed = new FileStatus(10, false, 0, 0, present.toFile.lastModified, new HadoopPath(present.toUri))
    assert(stream.initialOffset(Seq(listed), Nil) == 0)
    assert(stream.latestOffset(0, Admission.Unlimited) == 0, "the landed file is not new")
    landing.data("b", 10, minute = 2)
    assert(stream.latestOffset(0, Admission.Unlimited) == 1 && names(stream.batch(0, 1)) == Seq("b"))
    assert(stream.registry(1).tables.keySet == Set(salaries.name))
  }

  test("a file that changes after it was taken fails the next trigger, naming it") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    val file = landing.data("a", 10, minute = 1)
    val stream = landing.stream()
    stream.latestOffset(-1, Admission.Unlimited)
    landing.data("a", 12, minute = 5)
    val e = intercept[ReplicateException](stream.latestOffset(0, Admission.Unlimited))
    assert(e.errorId == ErrorId.FileChanged && e.detail.contains(file.getFileName.toString), e.detail)
    assert(e.detail.contains("10 bytes") && e.detail.contains("12 bytes"), e.detail)
  }

  test("under AvailableNow only the files landed at its start are taken") {
    val landing = new Landing
    landing.metadata("md-0", salaries, minute = 0)
    landing.data("a", 10, minute = 1)
    val stream = landing.stream()
    stream.takeOnlyLandedNow()
    landing.data("b", 10, minute = 2)
    assert(stream.latestOffset(-1, Admission.Unlimited) == 0 && names(stream.batch(-1, 0)) == Seq("a"))
    assert(stream.latestOffset(0, Admission.Unlimited) == 0)
  }

  test("without a schema topic a batch knows the metadata of every data file landed, taken or not") {
    val landing = new Landing(metadataOfData = Some(Map("a" -> salaries, "b" -> departments)))
    landing.data("a", 10, minute = 1)
    landing.data("b", 10, minute = 2)
    val stream = landing.stream()
    assert(stream.latestOffset(-1, Admission(Some(1), None)) == 0 && names(stream.batch(-1, 0)) == Seq("a"))
    assert(stream.batch(-1, 0).registry.tables.keySet == Set(salaries.name, departments.name))
    assert(stream.latestOffset(0, Admission(Some(1), None)) == 1 && names(stream.batch(0, 1)) == Seq("b"))
    assert(landing.scanned == Seq("a", "b"), "each file is scanned for metadata once")
    landing.data("b", 11, minute = 3)
    assert(intercept[ReplicateException](stream.latestOffset(1, Admission.Unlimited)).errorId == ErrorId.FileChanged)
  }
}
