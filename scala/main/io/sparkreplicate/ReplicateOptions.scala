package io.sparkreplicate

import java.util.Locale

import com.fasterxml.jackson.databind.ObjectMapper

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

/**
 * Every reader option, parsed and validated once on the driver. Option names are
 * case-insensitive, as everywhere in Spark; a bad value fails with the option's name and the
 * values it accepts.
 */
final case class ReplicateOptions(
    paths: Seq[String],
    schemaTopic: Seq[String],
    table: Option[TableName],
    expandMasks: Boolean,
    mode: ParseMode,
    framing: Framing,
    valueField: String,
    includeSource: Boolean,
    columnNameOfCorruptRecord: String)

object ReplicateOptions {
  val SchemaTopic = "schemaTopic"
  val Table = "table"
  val ExpandMasks = "expandMasks"
  val Mode = "mode"
  val FramingOption = "framing"
  val ValueField = "valueField"
  val IncludeSource = "includeSource"
  val ColumnNameOfCorruptRecord = "columnNameOfCorruptRecord"

  /** @param options as Spark hands them over; keys in any case */
  def parse(options: Map[String, String], defaultCorruptColumn: String = "_corrupt_record")
      : ReplicateOptions = {
    val lower = options.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }
    def get(name: String): Option[String] = lower.get(name.toLowerCase(Locale.ROOT))

    ReplicateOptions(
      paths = dataPaths(get("paths"), get("path")),
      schemaTopic = get(SchemaTopic).toSeq.flatMap(_.split(',')).map(_.trim).filter(_.nonEmpty),
      table = get(Table).map(_.trim).filter(_.nonEmpty).map { value =>
        TableName.parse(value).getOrElse(invalid(Table, value, "SCHEMA.TABLE, e.g. HR.EMPLOYEES"))
      },
      expandMasks = get(ExpandMasks).forall(boolean(ExpandMasks, _)),
      mode = get(Mode).map(oneOf(Mode, _, ParseMode.all)(_.name)).getOrElse(ParseMode.FailFast),
      framing = get(FramingOption).map(oneOf(FramingOption, _, Framing.all)(_.name))
        .getOrElse(Framing.Auto),
      valueField = get(ValueField).map(_.trim).filter(_.nonEmpty).getOrElse("value"),
      includeSource = get(IncludeSource).exists(boolean(IncludeSource, _)),
      columnNameOfCorruptRecord = get(ColumnNameOfCorruptRecord).getOrElse(defaultCorruptColumn))
  }

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
