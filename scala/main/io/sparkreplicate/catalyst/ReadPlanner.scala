package io.sparkreplicate.catalyst

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.types.StructType

import io.sparkreplicate.{ErrorId, Framing, Layout, MessageView, ReplicateException, ReplicateOptions}
import io.sparkreplicate.codec.{SchemaRegistry, TableName, TableVersion}
import io.sparkreplicate.files.{FileSplit, LandingFiles, MessageSource, SplitPlanner}

/**
 * The driver's decisions for one read: what to read, with which metadata, as which table.
 *
 * @param layout the table read; None for the metadata view, which needs no registry either
 */
final case class ReadPlan(
    options: ReplicateOptions,
    files: Seq[FileStatus],
    registry: SchemaRegistry,
    layout: Option[OutputLayout]) {
  lazy val schema: StructType = layout.fold(MetadataColumns.schema(options))(OutputColumns.schema(_, options))

  def rowSpec(required: StructType, filter: MessageFilter): RowSpec =
    layout.fold[RowSpec](MetadataSpec(options, required))(ReadSpec(options, registry, _, required, filter))

  def layoutName: String = layout match {
    case Some(_: TableLayout) => Layout.Flat.name
    case Some(_) => Layout.Generic.name
    case None => MessageView.Metadata.name
  }

  /** What is read, for the table's name and the scan's description. */
  def subject: String = layout match {
    case Some(l) => l.tables.mkString(", ")
    case None => MessageView.Metadata.name + options.table.fold("")(t => s" of $t")
  }
}

object ReadPlanner {

  /**
   * @param scanDataTopics collects the metadata messages found among the data files, when no
   *                       schema topic is given; the DSv2 layer runs it as a Spark job
   */
  def plan(options: ReplicateOptions, conf: Configuration,
      scanDataTopics: Seq[FileSplit] => Seq[TableVersion]): ReadPlan = {
    val files = LandingFiles.list(options.paths, conf)
    if (options.messages == MessageView.Metadata) {
      ReadPlan(options, files, SchemaRegistry.build(Nil, options.paths), layout = None)
    } else planTable(options, conf, scanDataTopics, files)
  }

  private def planTable(options: ReplicateOptions, conf: Configuration,
      scanDataTopics: Seq[FileSplit] => Seq[TableVersion], files: Seq[FileStatus]): ReadPlan = {
    val registry = if (options.schemaTopic.nonEmpty) {
      val schemaFiles = LandingFiles.list(options.schemaTopic, conf)
      // The schema topic may be landed differently from the data: its framing is always detected.
      SchemaRegistry.build(wholeFileSplits(schemaFiles, Framing.Auto)
        .flatMap(MetadataScanner.scan(_, conf, options, strict = true)), options.schemaTopic)
    } else {
      SchemaRegistry.build(scanDataTopics(wholeFileSplits(files, options.framing)), options.paths)
    }
    ReadPlan(options, files, registry, Some(layout(options, registry)))
  }

  def wholeFileSplits(files: Seq[FileStatus], framing: Framing): Seq[FileSplit] =
    files.map(f => FileSplit(f.getPath.toString, 0, f.getLen, f.getLen, framing))

  /** Splits for the data read; only large files are sniffed on the driver, to be cut at sync markers. */
  def dataSplits(plan: ReadPlan, conf: Configuration, planner: SplitPlanner): Seq[Seq[FileSplit]] = {
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

  private def layout(options: ReplicateOptions, registry: SchemaRegistry): OutputLayout = {
    val tables = registry.tables.keys.toSeq.sortBy(_.toString)
    if (tables.isEmpty) throw new ReplicateException(ErrorId.NoMetadata,
      s"no metadata (MD) message was found in ${registry.origins.mkString(", ")}; set the option " +
        "`schemaTopic` to the landed topic that holds Replicate's metadata messages")
    val generic = options.layout == Layout.Generic ||
      (options.layout == Layout.Auto && options.table.isEmpty && tables.size > 1)
    if (generic) GenericLayout(options.table.fold(tables)(wanted => Seq(selectTable(wanted, tables, registry))))
    else {
      val table = options.table.map(selectTable(_, tables, registry)).getOrElse(tables match {
        case Seq(only) => only
        case _ => throw new ReplicateException(ErrorId.TableRequired,
          s"the metadata read from ${registry.origins.mkString(", ")} describes ${tables.size} tables " +
            s"(${tables.mkString(", ")}); set the option `table` to one of them, or `layout` to " +
            "`generic` (or `auto`) to read them all")
      })
      TableLayout.of(table, registry.tables(table), options)
    }
  }

  /** `table` as the metadata spells it; case only matters when two tables differ by case alone. */
  private def selectTable(wanted: TableName, tables: Seq[TableName], registry: SchemaRegistry): TableName =
    tables.find(_ == wanted)
      .orElse(tables.filter(_.toString.equalsIgnoreCase(wanted.toString)) match {
        case Seq(only) => Some(only)
        case _ => None
      })
      .getOrElse(throw new ReplicateException(ErrorId.TableNotFound,
        s"table $wanted has no metadata; the registry holds ${registry.describe}: ${tables.mkString(", ")}"))
}
