package io.sparkreplicate.streaming

import io.sparkreplicate.{DecodeOptions, OptionMap, ReplicateException}

/** Where a new stream starts: at the files already landed, or after them. */
sealed abstract class StartingPosition(val name: String) extends Serializable
object StartingPosition {
  /** Files already landed are read, then every file that lands. */
  case object Earliest extends StartingPosition("earliest")
  /** Files already landed are skipped (their metadata still counts); only new files are read. */
  case object Latest extends StartingPosition("latest")
  val all: Seq[StartingPosition] = Seq(Earliest, Latest)
}

/**
 * The options of a stream over landed files, beside the reader's: how much one micro-batch takes
 * and where a new stream starts. Parsed and validated once on the driver.
 */
final case class StreamOptions(limits: Admission, startingPosition: StartingPosition)

object StreamOptions {
  val MaxFilesPerTrigger = "maxFilesPerTrigger"
  val MaxBytesPerTrigger = "maxBytesPerTrigger"
  val StartingPositionOption = "startingPosition"

  /** @param decode the same options' decoding part, whose redaction applies here too */
  def parse(options: Map[String, String], decode: DecodeOptions): StreamOptions = try {
    val o = new OptionMap(options)
    StreamOptions(
      Admission(
        maxFiles = o.get(MaxFilesPerTrigger).map(_ => o.positiveInt(MaxFilesPerTrigger, 0)),
        maxBytes = o.largeByteSize(MaxBytesPerTrigger)),
      startingPosition = o.oneOf(StartingPositionOption, StartingPosition.all, StartingPosition.Earliest)(_.name))
  } catch { case e: ReplicateException => throw decode.redaction(e) }
}
