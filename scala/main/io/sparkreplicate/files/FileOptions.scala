package io.sparkreplicate.files

import com.fasterxml.jackson.databind.ObjectMapper

import io.sparkreplicate.{DecodeOptions, ErrorId, MessageView, OptionMap, ReplicateException, SessionDefaults}

/** How the messages were landed in files. */
sealed abstract class Framing(val name: String) extends Serializable
object Framing {
  case object Auto extends Framing("auto")
  case object AvroContainer extends Framing("avro")
  case object LengthPrefixed extends Framing("length-prefixed")
  case object WholeMessage extends Framing("message")
  val all: Seq[Framing] = Seq(Auto, AvroContainer, LengthPrefixed, WholeMessage)
}

/**
 * The options of reading landed files: where the data and metadata messages are and how they
 * were landed. Parsed and validated once on the driver, beside the [[DecodeOptions]].
 *
 * @param schemaTopic the landed schema topic's paths; empty to take the metadata from the data
 */
final case class FileOptions(
    paths: Seq[String],
    schemaTopic: Seq[String],
    framing: Framing,
    valueField: String,
    ignoreCorruptFiles: Boolean,
    ignoreMissingFiles: Boolean)

object FileOptions {
  val SchemaTopic = "schemaTopic"
  val FramingOption = "framing"
  val ValueField = "valueField"
  val IgnoreCorruptFiles = "ignoreCorruptFiles"
  val IgnoreMissingFiles = "ignoreMissingFiles"

  /** @param decode the same options' decoding part, already parsed (its redaction applies here too) */
  def parse(options: Map[String, String], decode: DecodeOptions, session: SessionDefaults = SessionDefaults())
      : FileOptions = parse(options, decode, session, o => dataPaths(o.get("paths"), o.get("path")))

  /**
   * For decoding messages that are not in files (a binary column): no data paths, and the
   * metadata from the landed schema topic, which is then required.
   */
  def schemaTopicOnly(options: Map[String, String], decode: DecodeOptions, session: SessionDefaults): FileOptions = {
    val parsed = parse(options, decode, session, _ => Nil)
    if (parsed.schemaTopic.isEmpty) throw decode.redaction(new ReplicateException(ErrorId.InvalidOption,
      s"set the option `$SchemaTopic` to the landed topic that holds Replicate's metadata messages: a " +
        s"binary column carries no metadata of its own (or read `${DecodeOptions.Messages}` = " +
        s"${MessageView.Metadata.name}, which needs none)"))
    parsed
  }

  private def parse(options: Map[String, String], decode: DecodeOptions, session: SessionDefaults,
      paths: OptionMap => Seq[String]): FileOptions = try {
    val o = new OptionMap(options)
    // The metadata view reads the loaded paths themselves; a schema topic beside them is a mistake.
    if (decode.messages == MessageView.Metadata && o.nonBlank(SchemaTopic).nonEmpty) {
      throw new ReplicateException(ErrorId.InvalidOption, s"option `$SchemaTopic` does not apply to " +
        s"`${DecodeOptions.Messages}` = ${MessageView.Metadata.name}, which reads the metadata messages of the " +
        "loaded paths: load the schema topic's paths instead")
    }
    FileOptions(
      paths = paths(o),
      schemaTopic = o.get(SchemaTopic).toSeq.flatMap(_.split(',')).map(_.trim).filter(_.nonEmpty),
      framing = o.oneOf(FramingOption, Framing.all, Framing.Auto)(_.name),
      valueField = o.nonBlank(ValueField).getOrElse("value"),
      ignoreCorruptFiles = o.boolean(IgnoreCorruptFiles, session.ignoreCorruptFiles),
      ignoreMissingFiles = o.boolean(IgnoreMissingFiles, session.ignoreMissingFiles))
  } catch { case e: ReplicateException => throw decode.redaction(e) }

  /** `load(p)` passes `path`; `load(p1, p2)` passes `paths` as a JSON array. */
  private def dataPaths(paths: Option[String], path: Option[String]): Seq[String] = {
    val many = paths.toSeq.flatMap(json => new ObjectMapper().readValue(json, classOf[Array[String]]))
    val all = many ++ path.toSeq
    if (all.isEmpty) throw new ReplicateException(ErrorId.InvalidOption,
      "no data path given: call load(path) with the landed data topic(s)")
    all
  }
}
