package io.sparkreplicate.catalyst

import java.util.IdentityHashMap

import scala.util.control.NonFatal

import org.apache.avro.Schema
import org.apache.spark.sql.catalyst.InternalRow

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, Envelope, MessageKind, SliceDecoder, TableVersion}

/** What became of one landed message. */
sealed trait Outcome
object Outcome {
  case object Row extends Outcome
  case object Metadata extends Outcome
  /** A data message of another table: decided from the envelope, its payload never decoded. */
  case object Filtered extends Outcome
}

/**
 * Turns one envelope into the output row: decodes the envelope, finds the table version (by
 * schema id, or by the embedded schema), filters other tables before touching the payload, and
 * runs that version's converter. Converters are built on first use and cached per writer schema;
 * the Avro decoder and the row are reused for every message.
 */
final class ChangeRowDecoder(spec: ReadSpec) extends RowDecoder {
  val out = new OutputRow(spec.required, spec.layout, spec.options.columnNameOfCorruptRecord)
  def row: InternalRow = out.row
  def sourceSlot: Int = out.sourceSlot
  private val byId = new java.util.HashMap[String, DataRecordConverter]()
  private val byEmbeddedSchema = new IdentityHashMap[Schema, DataRecordConverter]()
  private val decoder = new SliceDecoder

  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome = {
    val envelope = Envelope.decode(decoder, bytes, offset, length)
    if (envelope.kind == MessageKind.Metadata) return Outcome.Metadata
    val converter = if (envelope.messageSchema == null) converterById(envelope.schemaId) else {
      val knownVersion = if (envelope.schemaId == null) None else spec.registry.get(envelope.schemaId)
      // Another table's message is filtered on its id alone, before its embedded schema is parsed.
      if (knownVersion.exists(_.table != spec.layout.table)) return Outcome.Filtered
      val limits = spec.options.limits
      val writer = AvroSchemas.parseEmbedded(envelope.messageSchema, limits.maxEmbeddedSchemaBytes, limits.maxSchemaDepth)
      val known = byEmbeddedSchema.get(writer)
      if (known != null) known else {
        val version = knownVersion.orElse(spec.registry.byDataSchema(writer))
          .getOrElse(throw unknownSchemaId(envelope.schemaId))
        val built = if (version.table != spec.layout.table) null else {
          // The table is known, but this message's own schema may not be readable as it.
          try newConverter(writer, version) catch {
            case e: ReplicateException if !e.isInstanceOf[MalformedMessageException] =>
              throw new MalformedMessageException(ErrorId.BadEmbeddedSchema,
                s"embedded schema cannot be read as ${version.table}: ${e.detail}", e)
          }
        }
        byEmbeddedSchema.put(writer, built)
        built
      }
    }
    if (converter == null) return Outcome.Filtered
    decoder.reset(bytes, envelope.payloadOffset, envelope.payloadLength)
    try converter.convert(decoder) catch {
      case e: ReplicateException => throw e
      case NonFatal(e) => throw new MalformedMessageException(ErrorId.BadPayload,
        s"payload does not decode with the table's data schema: $e", e)
    }
    if (!decoder.isEnd) throw new MalformedMessageException(ErrorId.TrailingBytes,
      "bytes follow the payload's last field")
    if (out.corruptSlot >= 0) out.row.setNullAt(out.corruptSlot)
    Outcome.Row
  }

  /** Null for a known schema id of another table. */
  private def converterById(schemaId: String): DataRecordConverter = {
    if (byId.containsKey(schemaId)) byId.get(schemaId)
    else {
      val version = (if (schemaId == null) None else spec.registry.get(schemaId))
        .getOrElse(throw unknownSchemaId(schemaId))
      val built = if (version.table == spec.layout.table) newConverter(version.dataSchema, version) else null
      byId.put(schemaId, built)
      built
    }
  }

  private def newConverter(writer: Schema, version: TableVersion) =
    new DataRecordConverter(writer, version, out, spec.options.expandMasks)

  private def unknownSchemaId(schemaId: String) = new MalformedMessageException(ErrorId.UnknownSchemaId,
    (if (schemaId == null) "data message has neither a schema id nor an embedded schema of a known table"
    else s"schema id $schemaId is unknown") + s"; the registry holds ${spec.registry.describe}. " +
      "Point `schemaTopic` at the topic that holds this table's metadata messages")

  /** The row for a malformed message under PERMISSIVE: nulls, and the raw bytes with the reason. */
  def corruptRow(bytes: Array[Byte], offset: Int, length: Int, error: ReplicateException, where: String): InternalRow = {
    out.setAllNull()
    RowDecoder.writeCorrupt(out.row, out.corruptSlot, bytes, offset, length, error, where, spec.options.redaction)
    out.row
  }
}
