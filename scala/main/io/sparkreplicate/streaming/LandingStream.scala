package io.sparkreplicate.streaming

import java.time.Instant

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus

import io.sparkreplicate.{DecodeLimits, ErrorId, ReplicateException}
import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}
import io.sparkreplicate.files.{FileOptions, FilePlanner, FileSplit, LandingFiles}

/** One micro-batch's input: its data files and the metadata they are decoded with. */
final case class StreamBatch(files: Seq[FileStatus], registry: SchemaRegistry)

/**
 * The driver's side of a stream over landing paths that keep growing. Its offsets are positions
 * in the [[FileLog]]: batch `n` reads the data files of entry `n`, with the metadata of entries
 * `0..n`. Each trigger lists the paths, takes the files not taken yet (oldest first, as
 * [[Admission]] allows) and the schema-topic files landed since, and logs them before their
 * offset is returned, so a restart resumes after the last committed batch and a batch planned
 * again gets the same files and metadata.
 *
 * What is kept in memory is one entry per file taken, and the table versions: listing cost and
 * memory grow with the number of files, never with the number of messages.
 *
 * @param metadataOfData the metadata messages of data files, for a stream without a schema topic
 *                       (the DSv2 layer runs it as a Spark job when the files are large)
 */
final class LandingStream(options: FileOptions, startingPosition: StartingPosition, limits: DecodeLimits, log: FileLog,
    conf: Configuration, metadataOfData: Seq[FileSplit] => Seq[TableVersion]) {
  private val taken = mutable.HashMap.empty[String, LoggedFile]
  /** The files whose metadata messages were taken in: the schema topic's, or without one the data files'. */
  private val schemaTaken = mutable.HashMap.empty[String, LoggedFile]
  /** Every version logged, with the batch that first saw it. */
  private val versions = mutable.ArrayBuffer.empty[(Long, TableVersion)]
  private var last = -1L
  /** Under `Trigger.AvailableNow`, the data files landed when the query started: no other is taken. */
  private var availableNow: Option[Set[String]] = None
  private var behind = Backlog(0, 0)

  log.batches.foreach(batch => remember(batch, log.get(batch)))

  /** The last batch logged; -1 before the first. */
  def lastBatch: Long = last

  /** New files listed at the last trigger and left for later batches. */
  def backlog: Backlog = behind

  /**
   * The offset a new query starts from: before entry 0 (`earliest`), or entry 0 itself (`latest`),
   * which then logs the files already landed, `present`, so that they are never read, and their
   * metadata, which later batches decode with: the schema topic's, or without one
   * `presentVersions`, the metadata messages already found among them.
   */
  def initialOffset(present: => Seq[FileStatus], presentVersions: => Seq[TableVersion]): Long =
    startingPosition match {
      case StartingPosition.Earliest => -1L
      case StartingPosition.Latest =>
        if (last < 0) {
          val files = present.map(LoggedFile(_))
          if (options.schemaTopic.nonEmpty) append(files, Nil) else record(files, files, presentVersions)
        }
        0L
    }

  /** The next batch after `start`: the one logged already, a new one, or `start` when nothing is new. */
  def latestOffset(start: Long, admission: Admission): Long = {
    if (start > last) throw new ReplicateException(ErrorId.BadCheckpoint, s"the query's offsets reach batch " +
      s"$start but the stream's log ends at batch $last: its checkpoint folder was changed by hand. " +
      "Restore it, or start the query on a new checkpoint location")
    if (start < last) return start + 1
    val fresh = newFiles()
    val batch = admission.take(fresh)
    val left = fresh.drop(batch.size)
    behind = Backlog(left.size, left.map(_.length).sum)
    if (batch.isEmpty) start else append(batch, fresh)
  }

  /** Batches `(start, end]`: their data files, and the metadata of every batch up to `end`. */
  def batch(start: Long, end: Long): StreamBatch =
    StreamBatch((start + 1 to end).flatMap(log.get(_).files).map(_.status), registry(end))

  def registry(upTo: Long): SchemaRegistry = SchemaRegistry.build(
    versions.collect { case (batch, version) if batch <= upTo => version },
    if (options.schemaTopic.nonEmpty) options.schemaTopic else options.paths)

  /** From now on, only the data files landed by now are taken. */
  def takeOnlyLandedNow(): Unit = availableNow = Some(listed(options.paths, taken).map(_.path).toSet)

  /** Without a schema topic, files scanned for metadata are checked too: they are read later. */
  private def newFiles(): Seq[LoggedFile] =
    listed(options.paths, if (options.schemaTopic.isEmpty) schemaTaken else taken)
      .filter(f => !taken.contains(f.path) && availableNow.forall(_.contains(f.path)))
      .sortBy(f => (f.modificationTime, f.path))

  /** The files under `paths`; one that changed since it was taken fails the query. */
  private def listed(paths: Seq[String], known: mutable.Map[String, LoggedFile]): Seq[LoggedFile] =
    LandingFiles.list(paths, conf).map { status =>
      val now = LoggedFile(status)
      known.get(now.path).filter(_ != now).foreach(before => throw changed(before, now))
      now
    }

  /**
   * Logs the next batch, `files`, with the metadata landed so far that no earlier batch took in:
   * the new schema-topic files, or without a schema topic the metadata messages of the data files
   * landed so far (`landed`, the batch's and those left for later), so that a table version whose
   * data comes in this batch is known to it even when its metadata message is in a later file.
   */
  private def append(files: Seq[LoggedFile], landed: Seq[LoggedFile]): Long = {
    val metadataFiles = (if (options.schemaTopic.isEmpty) landed else listed(options.schemaTopic, schemaTaken))
      .filterNot(f => schemaTaken.contains(f.path))
    val statuses = metadataFiles.map(_.status)
    record(files, metadataFiles,
      if (options.schemaTopic.nonEmpty) FilePlanner.scanSchemaTopic(statuses, conf, options, limits)
      else metadataOfData(FilePlanner.wholeFileSplits(statuses, options.framing)))
  }

  private def record(files: Seq[LoggedFile], metadataFiles: Seq[LoggedFile], found: Seq[TableVersion]): Long = {
    val entry = FileLogEntry(files, metadataFiles, found)
    val batch = last + 1
    log.add(batch, entry)
    remember(batch, entry)
    batch
  }

  private def remember(batch: Long, entry: FileLogEntry): Unit = {
    entry.files.foreach(f => taken(f.path) = f)
    entry.schemaFiles.foreach(f => schemaTaken(f.path) = f)
    versions ++= entry.versions.map(batch -> _)
    last = math.max(last, batch)
  }

  private def changed(before: LoggedFile, now: LoggedFile) = new ReplicateException(ErrorId.FileChanged,
    s"${now.path} changed after the stream took it: it had ${before.length} bytes, modified at " +
      s"${Instant.ofEpochMilli(before.modificationTime)}, and now has ${now.length} bytes, modified at " +
      s"${Instant.ofEpochMilli(now.modificationTime)}. Landed files must not change: land each file whole " +
      "under a new name (write it under a name starting with `_` or `.`, then rename it). To go on, restore " +
      "the file as it was, or start the query on a new checkpoint location, which reads every file again")
}

/** New files listed and not taken yet. */
final case class Backlog(files: Long, bytes: Long)
