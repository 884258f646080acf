package io.sparkreplicate.streaming

import java.nio.file.{Files, Path}

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.{ErrorId, ReplicateException, TempDirs}
import io.sparkreplicate.Fixtures._
import io.sparkreplicate.codec.Lineage

class FileLogSuite extends AnyFunSuite with TempDirs {
  private def newLog(): (FileLog, Path) = {
    val dir = tempDir("file-log").resolve("sources/0")
    (new FileLog(dir.toString, new Configuration), dir)
  }

  private val entry = FileLogEntry(
    files = Seq(LoggedFile("file:/landing/hr/part-0.avro", 123456L, 1714644677345L)),
    schemaFiles = Seq(LoggedFile("file:/landing/_schema/part-0.msg", 2048L, 1714644670000L)),
    versions = Seq(salaries.tableVersion("file:/landing/_schema/part-0.msg"),
      // A metadata message may leave the lineage's server, task and timestamp out: they stay null.
      departments.tableVersion().copy(lineage = Lineage(null, null, "employees", "departments", 3L, null))))

  test("an entry reads back as it was written, table versions included") {
    val (log, _) = newLog()
    assert(log.batches.isEmpty)
    log.add(0, entry)
    log.add(1, FileLogEntry(Nil, Nil, Nil))
    assert(log.batches == Seq(0L, 1L))
    assert(log.get(0) == entry && log.get(1) == FileLogEntry(Nil, Nil, Nil))
    assert(log.get(0).versions.map(_.dataSchema) == entry.versions.map(_.dataSchema))
  }

  test("entries are written whole: a temporary file beside them is not an entry") {
    val (log, dir) = newLog()
    log.add(0, entry)
    Files.writeString(dir.resolve(".1.tmp"), "v1\n{\"files\":[")
    assert(log.batches == Seq(0L))
  }

  test("an entry is never rewritten: a second writer of the same batch fails and the first stays") {
    val (log, _) = newLog()
    log.add(0, entry)
    val e = intercept[ReplicateException](log.add(0, FileLogEntry(Nil, Nil, Nil)))
    assert(e.errorId == ErrorId.BadCheckpoint && e.detail.contains("two queries run on one checkpoint"), e.detail)
    assert(log.get(0) == entry)
  }

  test("a missing entry, or one of another format version, is a bad checkpoint naming it") {
    val (log, dir) = newLog()
    log.add(0, entry)
    val missing = intercept[ReplicateException](log.get(1))
    assert(missing.errorId == ErrorId.BadCheckpoint && missing.detail.contains("batch 1"), missing.detail)
    Files.writeString(dir.resolve("2"), "v9\n{}")
    val newer = intercept[ReplicateException](log.get(2))
    assert(newer.errorId == ErrorId.BadCheckpoint && newer.detail.contains("`v1`"), newer.detail)
  }
}
