package io.sparkreplicate

/**
 * Every failure the connector reports carries a stable identifier, so that users can match on it
 * in code, logs and quarantine tables without parsing English.
 */
sealed abstract class ErrorId(val name: String) extends Serializable {
  override def toString: String = name
}

object ErrorId {
  // Per-message problems: malformed records, handled by the parse mode.
  case object BadMagic extends ErrorId("REPLICATE_BAD_MAGIC")
  case object UnknownMessageType extends ErrorId("REPLICATE_UNKNOWN_MESSAGE_TYPE")
  case object Truncated extends ErrorId("REPLICATE_TRUNCATED")
  case object TrailingBytes extends ErrorId("REPLICATE_TRAILING_BYTES")
  case object BadPayload extends ErrorId("REPLICATE_BAD_PAYLOAD")
  case object BadValue extends ErrorId("REPLICATE_BAD_VALUE")
  case object InvalidUtf8 extends ErrorId("REPLICATE_INVALID_UTF8")
  case object UnknownSchemaId extends ErrorId("REPLICATE_UNKNOWN_SCHEMA_ID")
  case object BadEmbeddedSchema extends ErrorId("REPLICATE_BAD_EMBEDDED_SCHEMA")
  case object BadFrame extends ErrorId("REPLICATE_BAD_FRAME")
  /** The reasons a single message can be malformed, each counted in its own metric. */
  lazy val messageReasons: Seq[ErrorId] = Seq(BadMagic, UnknownMessageType, Truncated, TrailingBytes,
    BadPayload, BadValue, InvalidUtf8, UnknownSchemaId, BadEmbeddedSchema, BadFrame)

  // Per-file problems.
  case object CorruptFile extends ErrorId("REPLICATE_CORRUPT_FILE")
  case object UnknownFraming extends ErrorId("REPLICATE_UNKNOWN_FRAMING")
  case object FileMissing extends ErrorId("REPLICATE_FILE_MISSING")
  // Planning problems: always raised, whatever the mode.
  case object InvalidOption extends ErrorId("REPLICATE_INVALID_OPTION")
  case object PathNotFound extends ErrorId("REPLICATE_PATH_NOT_FOUND")
  case object NoMetadata extends ErrorId("REPLICATE_NO_METADATA")
  case object TableRequired extends ErrorId("REPLICATE_TABLE_REQUIRED")
  case object TableNotFound extends ErrorId("REPLICATE_TABLE_NOT_FOUND")
  case object BadMetadata extends ErrorId("REPLICATE_BAD_METADATA")
  case object ConflictingMetadata extends ErrorId("REPLICATE_CONFLICTING_METADATA")
  case object IncompatibleVersions extends ErrorId("REPLICATE_INCOMPATIBLE_VERSIONS")
  case object SchemaEvolved extends ErrorId("REPLICATE_SCHEMA_EVOLVED")
  case object UnsupportedType extends ErrorId("REPLICATE_UNSUPPORTED_TYPE")
}

/** The one exception type the connector throws; the message always starts with the identifier. */
class ReplicateException(val errorId: ErrorId, val detail: String, cause: Throwable = null)
  extends RuntimeException(s"[${errorId.name}] $detail", cause)

/**
 * A message that cannot be decoded. Thrown by the codec without knowing where the message came
 * from; the reader adds the file and position before it reaches the user.
 */
final class MalformedMessageException(errorId: ErrorId, detail: String, cause: Throwable = null)
  extends ReplicateException(errorId, detail, cause)
