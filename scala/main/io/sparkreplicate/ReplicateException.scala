package io.sparkreplicate

import org.apache.spark.SparkThrowable

/**
 * Every failure the connector reports carries a stable identifier, so that users can match on it
 * in code, logs and quarantine tables without parsing English.
 */
sealed abstract class ErrorId(val name: String, val sqlState: String) extends Serializable {
  override def toString: String = name
}

/**
 * The SQLSTATE of each identifier: class 22 (data exception) for malformed data, 42 for what the
 * options or the metadata make impossible to plan, 0A for an unsupported type, and Spark's own
 * states where Spark has one for the same failure (KD001 a file that cannot be read, 42K03 a
 * missing path, 42KD9 a schema that cannot be inferred).
 */
object ErrorId {
  // Per-message problems: malformed records, handled by the parse mode.
  case object BadMagic extends ErrorId("REPLICATE_BAD_MAGIC", "22000")
  case object UnknownMessageType extends ErrorId("REPLICATE_UNKNOWN_MESSAGE_TYPE", "22000")
  case object Truncated extends ErrorId("REPLICATE_TRUNCATED", "22000")
  case object TrailingBytes extends ErrorId("REPLICATE_TRAILING_BYTES", "22000")
  case object BadPayload extends ErrorId("REPLICATE_BAD_PAYLOAD", "22000")
  case object BadValue extends ErrorId("REPLICATE_BAD_VALUE", "22018")
  case object InvalidUtf8 extends ErrorId("REPLICATE_INVALID_UTF8", "22021")
  case object UnknownSchemaId extends ErrorId("REPLICATE_UNKNOWN_SCHEMA_ID", "22000")
  case object BadEmbeddedSchema extends ErrorId("REPLICATE_BAD_EMBEDDED_SCHEMA", "22000")
  case object BadFrame extends ErrorId("REPLICATE_BAD_FRAME", "22000")
  /** The reasons a single message can be malformed, each counted in its own metric. */
  lazy val messageReasons: Seq[ErrorId] = Seq(BadMagic, UnknownMessageType, Truncated, TrailingBytes,
    BadPayload, BadValue, InvalidUtf8, UnknownSchemaId, BadEmbeddedSchema, BadFrame)

  // Per-file problems.
  case object CorruptFile extends ErrorId("REPLICATE_CORRUPT_FILE", "KD001")
  case object UnknownFraming extends ErrorId("REPLICATE_UNKNOWN_FRAMING", "KD001")
  case object FileMissing extends ErrorId("REPLICATE_FILE_MISSING", "42K03")
  /** A landed file a stream already took has changed: files must land whole and stay as landed. */
  case object FileChanged extends ErrorId("REPLICATE_FILE_CHANGED", "KD001")
  // Planning problems: always raised, whatever the mode.
  case object InvalidOption extends ErrorId("REPLICATE_INVALID_OPTION", "42616")
  case object PathNotFound extends ErrorId("REPLICATE_PATH_NOT_FOUND", "42K03")
  case object NoMetadata extends ErrorId("REPLICATE_NO_METADATA", "42KD9")
  case object TableRequired extends ErrorId("REPLICATE_TABLE_REQUIRED", "42601")
  case object TableNotFound extends ErrorId("REPLICATE_TABLE_NOT_FOUND", "42P01")
  case object BadMetadata extends ErrorId("REPLICATE_BAD_METADATA", "22000")
  case object ConflictingMetadata extends ErrorId("REPLICATE_CONFLICTING_METADATA", "22000")
  case object IncompatibleVersions extends ErrorId("REPLICATE_INCOMPATIBLE_VERSIONS", "42825")
  case object SchemaEvolved extends ErrorId("REPLICATE_SCHEMA_EVOLVED", "42825")
  /** A stream's table got a version its schema, chosen at start, cannot hold: a restart picks it up. */
  case object SchemaChanged extends ErrorId("REPLICATE_SCHEMA_CHANGED", "42825")
  /** A stream's checkpoint does not hold what Spark's offsets say it does. */
  case object BadCheckpoint extends ErrorId("REPLICATE_BAD_CHECKPOINT", "55000")
  case object UnsupportedType extends ErrorId("REPLICATE_UNSUPPORTED_TYPE", "0A000")
  /** A transactional apply of changes that lack the transaction headers (older Replicate versions). */
  case object NoTransactionHeaders extends ErrorId("REPLICATE_NO_TRANSACTION_HEADERS", "0A000")
  /** A Kafka read without Spark's Kafka source on the session. */
  case object KafkaSourceMissing extends ErrorId("REPLICATE_KAFKA_SOURCE_MISSING", "42K02")
}

/**
 * The one exception type the connector throws; the message always starts with the identifier.
 * A Spark error condition (`SparkThrowable`): the identifier is its condition, with its SQLSTATE
 * and the detail as the `detail` message parameter. It is an `IllegalArgumentException` because
 * PySpark turns JVM exceptions into Python ones by class, and of the classes it knows this is the
 * one a connector can extend (Spark's own error classes need their conditions registered inside
 * Spark): PySpark raises `pyspark.errors.IllegalArgumentException`, whose `getCondition()` is the
 * identifier, on a classic session and over Spark Connect alike.
 */
class ReplicateException(val errorId: ErrorId, val detail: String, cause: Throwable = null)
    extends IllegalArgumentException(s"[${errorId.name}] $detail", cause) with SparkThrowable {
  override def getCondition: String = errorId.name
  override def getSqlState: String = errorId.sqlState
  override def getMessageParameters: java.util.Map[String, String] = java.util.Map.of("detail", detail)
}

/**
 * A message that cannot be decoded. Thrown by the codec without knowing where the message came
 * from; the reader adds the file and position before it reaches the user.
 */
final class MalformedMessageException(errorId: ErrorId, detail: String, cause: Throwable = null)
  extends ReplicateException(errorId, detail, cause)
