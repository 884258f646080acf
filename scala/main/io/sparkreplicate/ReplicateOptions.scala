package io.sparkreplicate

import java.time.{DateTimeException, ZoneId}
import java.util.Locale

import com.fasterxml.jackson.databind.ObjectMapper

import io.sparkreplicate.catalyst.ColumnTyping
import io.sparkreplicate.codec.TableName

sealed abstract class ParseMode(val name: String) extends Serializable
object ParseMode {
  case object FailFast extends ParseMode("FAILFAST")
  case object Permissive extends ParseMode("PERMISSIVE")
  case object DropMalformed extends ParseMode("DROPMALFORMED")
  val all: Seq[ParseMode] = Seq(FailFast, Permissive, DropMalformed)
}

sealed abstract class Framing(val name: String) extends Serializable
object Framing {
  case object Auto extends Framing("auto")
  case object AvroContainer extends Framing("avro")
  case object LengthPrefixed extends Framing("length-prefixed")
  case object WholeMessage extends Framing("message")
  val all: Seq[Framing] = Seq(Auto, AvroContainer, LengthPrefixed, WholeMessage)
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
 * Every reader option, parsed and validated once on the driver. Option names are
 * case-insensitive, as everywhere in Spark; a bad value fails with the option's name and the
 * values it accepts.
 */
final case class ReplicateOptions(
    paths: Seq[String],
    schemaTopic: Seq[String],
    table: Option[TableName],
    layout: Layout,
    expandMasks: Boolean,
    mode: ParseMode,
    framing: Framing,
    valueField: String,
    includeSource: Boolean,
    sourceTypes: Boolean,
    timeZone: ZoneId,
    schemaEvolution: SchemaEvolution,
    widenToString: Boolean,
    columnNameOfCorruptRecord: String,
    limits: DecodeLimits,
    ignoreCorruptFiles: Boolean,
    ignoreMissingFiles: Boolean,
    redaction: Redaction,
    messages: MessageView) {
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

object ReplicateOptions {
  val SchemaTopic = "schemaTopic"
  val Table = "table"
  val LayoutOption = "layout"
  val ExpandMasks = "expandMasks"
  val Mode = "mode"
  val FramingOption = "framing"
  val ValueField = "valueField"
  val IncludeSource = "includeSource"
  val SourceTypes = "sourceTypes"
  val TimeZone = "timeZone"
  val SchemaEvolutionOption = "schemaEvolution"
  val WidenToString = "widenToString"
  val ColumnNameOfCorruptRecord = "columnNameOfCorruptRecord"
  val MaxMessageBytes = "maxMessageBytes"
  val MaxEmbeddedSchemaBytes = "maxEmbeddedSchemaBytes"
  val MaxSchemaDepth = "maxSchemaDepth"
  val IgnoreCorruptFiles = "ignoreCorruptFiles"
  val IgnoreMissingFiles = "ignoreMissingFiles"
  val Messages = "messages"

  /** Session settings that options default to. */
  final case class SessionDefaults(
      columnNameOfCorruptRecord: String = "_corrupt_record",
      timeZone: String = "UTC",
      ignoreCorruptFiles: Boolean = false,
      ignoreMissingFiles: Boolean = false,
      redactionRegex: String = Redaction.DefaultKeyRegex,
      stringRedactionRegex: Option[String] = None)

  /** @param options as Spark hands them over; keys in any case */
  def parse(options: Map[String, String], session: SessionDefaults = SessionDefaults()): ReplicateOptions = {
    val redaction = Redaction.fromOptions(options, session.redactionRegex, session.stringRedactionRegex)
    try parseRedacted(options, session, redaction) catch { case e: ReplicateException => throw redaction(e) }
  }

  private def parseRedacted(options: Map[String, String], session: SessionDefaults, redaction: Redaction)
      : ReplicateOptions = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    def get(name: String): Option[String] = lower.get(name.toLowerCase(Locale.ROOT))

    val messages = get(Messages).map(oneOf(Messages, _, MessageView.all)(_.name)).getOrElse(MessageView.Data)
    // The metadata view reads the loaded paths themselves; a schema topic beside them is a mistake.
    if (messages == MessageView.Metadata && get(SchemaTopic).exists(_.trim.nonEmpty)) {
      throw new ReplicateException(ErrorId.InvalidOption, s"option `$SchemaTopic` does not apply to " +
        s"`$Messages` = ${MessageView.Metadata.name}, which reads the metadata messages of the loaded paths: " +
        "load the schema topic's paths instead")
    }
    ReplicateOptions(
      paths = dataPaths(get("paths"), get("path")),
      schemaTopic = get(SchemaTopic).toSeq.flatMap(_.split(',')).map(_.trim).filter(_.nonEmpty),
      table = get(Table).map(_.trim).filter(_.nonEmpty).map { value =>
        TableName.parse(value).getOrElse(invalid(Table, value, "SCHEMA.TABLE, e.g. HR.EMPLOYEES"))
      },
      layout = get(LayoutOption).map(oneOf(LayoutOption, _, Layout.all)(_.name)).getOrElse(Layout.Auto),
      expandMasks = get(ExpandMasks).forall(boolean(ExpandMasks, _)),
      mode = get(Mode).map(oneOf(Mode, _, ParseMode.all)(_.name)).getOrElse(ParseMode.FailFast),
      framing = get(FramingOption).map(oneOf(FramingOption, _, Framing.all)(_.name))
        .getOrElse(Framing.Auto),
      valueField = get(ValueField).map(_.trim).filter(_.nonEmpty).getOrElse("value"),
      includeSource = get(IncludeSource).exists(boolean(IncludeSource, _)),
      sourceTypes = get(SourceTypes).forall(boolean(SourceTypes, _)),
      timeZone = zone(get(TimeZone).map(TimeZone -> _).getOrElse("spark.sql.session.timeZone" -> session.timeZone)),
      schemaEvolution = get(SchemaEvolutionOption).map(oneOf(SchemaEvolutionOption, _, SchemaEvolution.all)(_.name))
        .getOrElse(SchemaEvolution.Merge),
      widenToString = get(WidenToString).exists(boolean(WidenToString, _)),
      columnNameOfCorruptRecord = get(ColumnNameOfCorruptRecord).getOrElse(session.columnNameOfCorruptRecord),
      limits = DecodeLimits(
        maxMessageBytes = get(MaxMessageBytes).map(byteSize(MaxMessageBytes, _))
          .getOrElse(DecodeLimits.Default.maxMessageBytes),
        maxEmbeddedSchemaBytes = get(MaxEmbeddedSchemaBytes).map(byteSize(MaxEmbeddedSchemaBytes, _))
          .getOrElse(DecodeLimits.Default.maxEmbeddedSchemaBytes),
        maxSchemaDepth = get(MaxSchemaDepth).map(positiveInt(MaxSchemaDepth, _))
          .getOrElse(DecodeLimits.Default.maxSchemaDepth)),
      ignoreCorruptFiles = get(IgnoreCorruptFiles).map(boolean(IgnoreCorruptFiles, _))
        .getOrElse(session.ignoreCorruptFiles),
      ignoreMissingFiles = get(IgnoreMissingFiles).map(boolean(IgnoreMissingFiles, _))
        .getOrElse(session.ignoreMissingFiles),
      redaction = redaction,
      messages = messages)
  }

  private val ByteSize = "(?i)\\s*(\\d+)\\s*([kmg]?)i?b?\\s*".r

  /** `1048576`, `512k`, `16m`, `1g` (binary units), at most 2 GiB - 1. */
  private def byteSize(name: String, value: String): Int = value match {
    case ByteSize(digits, unit) =>
      val shift = unit.toLowerCase(Locale.ROOT) match { case "k" => 10 case "m" => 20 case "g" => 30 case _ => 0 }
      val bytes = BigInt(digits) << shift
      if (bytes <= 0 || bytes > Int.MaxValue) invalid(name, value, "a size between 1 byte and 2g")
      bytes.toInt
    case _ => invalid(name, value, "a size such as 1048576, 512k or 16m")
  }

  /** A region (`Europe/Paris`), an offset (`+01:00`), `UTC`, or one of Java's short ids (`PST`). */
  private def zone(setting: (String, String)): ZoneId = {
    val (name, value) = setting
    try ZoneId.of(value.trim, ZoneId.SHORT_IDS) catch {
      case _: DateTimeException => invalid(name, value, "a time zone such as UTC, Europe/Paris or +01:00")
    }
  }

  private def positiveInt(name: String, value: String): Int =
    value.trim.toIntOption.filter(_ > 0).getOrElse(invalid(name, value, "a positive integer"))

  /** `load(p)` passes `path`; `load(p1, p2)` passes `paths` as a JSON array. */
  private def dataPaths(paths: Option[String], path: Option[String]): Seq[String] = {
    val many = paths.toSeq.flatMap(json => new ObjectMapper().readValue(json, classOf[Array[String]]))
    val all = many ++ path.toSeq
    if (all.isEmpty) throw new ReplicateException(ErrorId.InvalidOption,
      "no data path given: call load(path) with the landed data topic(s)")
    all
  }

  private def boolean(name: String, value: String): Boolean = value.trim.toLowerCase(Locale.ROOT) match {
    case "true" => true
    case "false" => false
    case _ => invalid(name, value, "true or false")
  }

  private def oneOf[T](name: String, value: String, all: Seq[T])(label: T => String): T =
    all.find(label(_).equalsIgnoreCase(value.trim))
      .getOrElse(invalid(name, value, all.map(label).mkString(", ")))

  private def invalid(name: String, value: String, expected: String): Nothing =
    throw new ReplicateException(ErrorId.InvalidOption,
      s"option `$name` has the value `$value`; expected $expected")
}
