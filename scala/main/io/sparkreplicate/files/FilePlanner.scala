package io.sparkreplicate.files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus

import io.sparkreplicate.{DecodeLimits, DecodeOptions, ErrorId, MessageView, ReplicateException}
import io.sparkreplicate.catalyst.{MetadataRefresh, MetadataScanner, QuerySchema, ReadCounters}
import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}

/**
 * The driver's decisions for one read of landed files: the query's schema, the files to read
 * and the metadata their messages are decoded with.
 */
final case class FilePlan(query: QuerySchema, options: FileOptions, files: Seq[FileStatus], registry: SchemaRegistry)

object FilePlanner {

  /**
   * @param scanDataTopics collects the metadata messages found among the data files, when no
   *                       schema topic is given; the DSv2 layer runs it as a Spark job
   */
  def plan(decode: DecodeOptions, options: FileOptions, conf: Configuration,
      scanDataTopics: Seq[FileSplit] => Seq[TableVersion]): FilePlan = {
    val files = LandingFiles.list(options.paths, conf)
    if (decode.messages == MessageView.Metadata) {
      FilePlan(QuerySchema.metadataView(decode), options, files, SchemaRegistry.build(Nil, options.paths))
    } else {
      val registry = if (options.schemaTopic.nonEmpty) schemaTopicRegistry(options, decode.limits, conf) else {
        SchemaRegistry.build(scanDataTopics(wholeFileSplits(files, options.framing)), options.paths)
      }
      FilePlan(QuerySchema.of(decode, registry), options, files, registry)
    }
  }

  /** The metadata of the landed schema topic, which the registry needs whole. */
  def schemaTopicRegistry(options: FileOptions, limits: DecodeLimits, conf: Configuration): SchemaRegistry =
    SchemaRegistry.build(scanSchemaTopic(LandingFiles.list(options.schemaTopic, conf), conf, options, limits),
      options.schemaTopic)

  /** Re-reads the landed schema topic for `metadataWait`; None without one (the data's metadata was all read). */
  def refresh(options: FileOptions, limits: DecodeLimits, conf: Configuration): Option[MetadataRefresh] =
    if (options.schemaTopic.isEmpty) None else Some(new SchemaTopicRefresh(options, limits, new SerializableConfiguration(conf)))

  /** The metadata messages of schema-topic files, where any unreadable message is an error. */
  def scanSchemaTopic(files: Seq[FileStatus], conf: Configuration, options: FileOptions,
      limits: DecodeLimits): Seq[TableVersion] =
    // The schema topic may be landed differently from the data: its framing is always detected.
    wholeFileSplits(files, Framing.Auto).flatMap(scanMetadata(_, conf, options, limits, strict = true))

  /**
   * The metadata messages of one split ([[MetadataScanner.scan]]). A schema topic (`strict`)
   * skips no file; data topics skip what the data read will skip.
   */
  def scanMetadata(split: FileSplit, conf: Configuration, options: FileOptions, limits: DecodeLimits,
      strict: Boolean): Seq[TableVersion] = {
    val skipping = if (strict) options.copy(ignoreCorruptFiles = false, ignoreMissingFiles = false) else options
    MetadataScanner.scan(new FileMessageInput(Seq(split), conf, skipping, limits, new ReadCounters), limits, strict)
  }

  def wholeFileSplits(files: Seq[FileStatus], framing: Framing): Seq[FileSplit] =
    files.map(f => FileSplit(f.getPath.toString, 0, f.getLen, f.getLen, framing))

  /** Splits for the data read; only large files are sniffed on the driver, to be cut at sync markers. */
  def dataSplits(plan: FilePlan, conf: Configuration, planner: SplitPlanner): Seq[Seq[FileSplit]] = {
    val maxSplit = planner.maxSplitBytes(plan.files)
    planner.plan(plan.files, file =>
      if (plan.options.framing != Framing.Auto || file.getLen <= maxSplit) plan.options.framing
      else sniffOrDefer(file, conf))
  }

  /**
   * A file that cannot be sniffed now (gone, unreadable, no known framing) is read whole by one
   * task, which then fails naming it, or skips and counts it under the ignore options.
   */
  private def sniffOrDefer(file: FileStatus, conf: Configuration): Framing =
    try MessageSource.sniff(file.getPath, conf) catch {
      case _: java.io.IOException => Framing.Auto
      case e: ReplicateException if e.errorId == ErrorId.UnknownFraming => Framing.Auto
    }
}

/** The landed schema topic, listed and read anew each time: files land in it while a query waits. */
private final class SchemaTopicRefresh(options: FileOptions, limits: DecodeLimits, conf: SerializableConfiguration)
    extends MetadataRefresh {
  override def read(): Seq[TableVersion] =
    FilePlanner.schemaTopicRegistry(options, limits, conf.value).versions.values.toSeq
}
