package io.sparkreplicate

import java.time.ZoneId

import io.sparkreplicate.catalyst.ColumnTyping
import io.sparkreplicate.codec.TableName

sealed abstract class ParseMode(val name: String) extends Serializable
object ParseMode {
  case object FailFast extends ParseMode("FAILFAST")
  case object Permissive extends ParseMode("PERMISSIVE")
  case object DropMalformed extends ParseMode("DROPMALFORMED")
  val all: Seq[ParseMode] = Seq(FailFast, Permissive, DropMalformed)
}

/** The shape of the rows: one table's typed columns, or every table's rows as variants. */
sealed abstract class Layout(val name: String) extends Serializable
object Layout {
  /** Flat when `table` is set or the metadata describes one table, generic otherwise. */
  case object Auto extends Layout("auto")
  case object Flat extends Layout("flat")
  case object Generic extends Layout("generic")
  val all: Seq[Layout] = Seq(Auto, Flat, Generic)
}

/** How the versions of a table become one schema. */
sealed abstract class SchemaEvolution(val name: String) extends Serializable
object SchemaEvolution {
  /** All versions' columns: the latest version's in ordinal order, then dropped ones. */
  case object Merge extends SchemaEvolution("merge")
  /** The latest version's columns only. */
  case object Latest extends SchemaEvolution("latest")
  /** An error when more than one version is read. */
  case object Fail extends SchemaEvolution("fail")
  val all: Seq[SchemaEvolution] = Seq(Merge, Latest, Fail)
}

/** What a read returns: `data`, the change rows of a table, or `metadata`, the MD messages as rows. */
sealed abstract class MessageView(val name: String) extends Serializable
object MessageView {
  case object Data extends MessageView("data")
  case object Metadata extends MessageView("metadata")
  val all: Seq[MessageView] = Seq(Data, Metadata)
}

/**
 * The options of decoding: what the rows are and how a message becomes one, whatever the
 * messages come from (files, Kafka, a binary column). Parsed and validated once on the driver.
 */
final case class DecodeOptions(
    table: Option[TableName],
    layout: Layout,
    expandMasks: Boolean,
    mode: ParseMode,
    includeSource: Boolean,
    sourceTypes: Boolean,
    timeZone: ZoneId,
    schemaEvolution: SchemaEvolution,
    widenToString: Boolean,
    columnNameOfCorruptRecord: String,
    limits: DecodeLimits,
    redaction: Redaction,
    messages: MessageView,
    metadataWaitMillis: Long) {
  def typing: ColumnTyping = ColumnTyping(sourceTypes, timeZone, widenToString)
}

/**
 * Caps against hostile or broken input, checked before anything of that size is allocated.
 *
 * @param maxMessageBytes        a landed message (frame or whole file) larger than this is malformed
 * @param maxEmbeddedSchemaBytes an embedded `messageSchema` longer than this is malformed
 * @param maxSchemaDepth         an embedded schema nested deeper than this is malformed
 */
final case class DecodeLimits(maxMessageBytes: Int, maxEmbeddedSchemaBytes: Int, maxSchemaDepth: Int)

object DecodeLimits {
  val Default: DecodeLimits = DecodeLimits(128 << 20, 1 << 20, 64)
}

/** Session settings that options default to. */
final case class SessionDefaults(
    columnNameOfCorruptRecord: String = "_corrupt_record",
    timeZone: String = "UTC",
    ignoreCorruptFiles: Boolean = false,
    ignoreMissingFiles: Boolean = false,
    redactionRegex: String = Redaction.DefaultKeyRegex,
    stringRedactionRegex: Option[String] = None)

object DecodeOptions {
  val Table = "table"
  val LayoutOption = "layout"
  val ExpandMasks = "expandMasks"
  val Mode = "mode"
  val IncludeSource = "includeSource"
  val SourceTypes = "sourceTypes"
  val TimeZone = "timeZone"
  val SchemaEvolutionOption = "schemaEvolution"
  val WidenToString = "widenToString"
  val ColumnNameOfCorruptRecord = "columnNameOfCorruptRecord"
  val MaxMessageBytes = "maxMessageBytes"
  val MaxEmbeddedSchemaBytes = "maxEmbeddedSchemaBytes"
  val MaxSchemaDepth = "maxSchemaDepth"
  val Messages = "messages"
  val MetadataWait = "metadataWait"
  /** Every option of decoding, as spelt above. */
  val names: Set[String] = Set(Table, LayoutOption, ExpandMasks, Mode, IncludeSource, SourceTypes, TimeZone,
    SchemaEvolutionOption, WidenToString, ColumnNameOfCorruptRecord, MaxMessageBytes, MaxEmbeddedSchemaBytes,
    MaxSchemaDepth, Messages, MetadataWait)

  /**
   * @param options as Spark hands them over; keys in any case. Every error is redacted: a bad
   *                value may be a secret given under the wrong name.
   */
  def parse(options: Map[String, String], session: SessionDefaults = SessionDefaults()): DecodeOptions = {
    val redaction = Redaction.fromOptions(options, session.redactionRegex, session.stringRedactionRegex)
    try parseRedacted(new OptionMap(options), session, redaction) catch { case e: ReplicateException => throw redaction(e) }
  }

  private def parseRedacted(o: OptionMap, session: SessionDefaults, redaction: Redaction): DecodeOptions =
    DecodeOptions(
      table = o.nonBlank(Table).map { value =>
        TableName.parse(value).getOrElse(OptionMap.invalid(Table, value, "SCHEMA.TABLE, e.g. HR.EMPLOYEES"))
      },
      layout = o.oneOf(LayoutOption, Layout.all, Layout.Auto)(_.name),
      expandMasks = o.boolean(ExpandMasks, default = true),
      mode = o.oneOf(Mode, ParseMode.all, ParseMode.FailFast)(_.name),
      includeSource = o.boolean(IncludeSource, default = false),
      sourceTypes = o.boolean(SourceTypes, default = true),
      timeZone = o.zone(TimeZone, fallback = "spark.sql.session.timeZone" -> session.timeZone),
      schemaEvolution = o.oneOf(SchemaEvolutionOption, SchemaEvolution.all, SchemaEvolution.Merge)(_.name),
      widenToString = o.boolean(WidenToString, default = false),
      columnNameOfCorruptRecord = o.get(ColumnNameOfCorruptRecord).getOrElse(session.columnNameOfCorruptRecord),
      limits = DecodeLimits(
        maxMessageBytes = o.byteSize(MaxMessageBytes, DecodeLimits.Default.maxMessageBytes),
        maxEmbeddedSchemaBytes = o.byteSize(MaxEmbeddedSchemaBytes, DecodeLimits.Default.maxEmbeddedSchemaBytes),
        maxSchemaDepth = o.positiveInt(MaxSchemaDepth, DecodeLimits.Default.maxSchemaDepth)),
      redaction = redaction,
      messages = o.oneOf(Messages, MessageView.all, MessageView.Data)(_.name),
      metadataWaitMillis = o.durationMillis(MetadataWait, default = 0L))
}
