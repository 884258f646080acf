package io.sparkreplicate.catalyst

import java.util.IdentityHashMap

import scala.util.control.NonFatal

import org.apache.avro.Schema

import io.sparkreplicate.{ErrorId, MalformedMessageException, Redaction, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, Envelope, MessageKind, SliceDecoder, TableVersion}

/** What became of one landed message. */
sealed trait Outcome
object Outcome {
  case object Row extends Outcome
  case object Metadata extends Outcome
  /**
   * A data message of another table, or one the pushed filter removes: decided from the envelope
   * (and at most the payload's operation), its row never decoded.
   */
  case object Filtered extends Outcome
}

/**
 * Turns one envelope into the output row: decodes the envelope, finds the table version (by
 * schema id, or by the embedded schema), filters other tables before touching the payload, and
 * runs that version's converter. Converters are built on first use and cached per writer schema;
 * the Avro decoder and the row are reused for every message.
 */
final class ChangeRowDecoder(spec: ReadSpec) extends RowDecoder {
  val out: ReaderRow = spec.layout match {
    case table: TableLayout => new OutputRow(spec.required, table, spec.options.columnNameOfCorruptRecord)
    case _: GenericLayout => new ReaderRow(spec.required, spec.options.columnNameOfCorruptRecord)
  }
  protected def redaction: Redaction = spec.options.redaction
  /**
   * Per schema id of the registry: a version of a table being read, and one the pushed filter
   * does not remove whole. Decided once, as self-describing messages ask for every message.
   */
  private val readable: Map[String, Boolean] = {
    val tables = spec.layout.tables.toSet
    spec.registry.versions.map { case (id, v) =>
      id -> (tables(v.table) && spec.filter.forVersion(v) != VersionDecision.SkipAll)
    }
  }
  private val byId = new java.util.HashMap[String, MessageConverter]()
  private val byEmbeddedSchema = new IdentityHashMap[Schema, MessageConverter]()
  private val decoder = new SliceDecoder
  /** The converters whose messages the pushed filter decides by operation. */
  private val operationGates = new IdentityHashMap[MessageConverter, OperationGate]()
  /** The converter of the last row returned. */
  private var converted: MessageConverter = _

  override def maskBitsIgnored: Boolean = converted.maskBitsIgnored

  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome = {
    val envelope = Envelope.decode(decoder, bytes, offset, length)
    if (envelope.kind == MessageKind.Metadata) return Outcome.Metadata
    val converter = if (envelope.messageSchema == null) converterById(envelope.schemaId) else {
      val knownVersion = if (envelope.schemaId == null) None else spec.registry.get(envelope.schemaId)
      // Another table's message, or a version the pushed filter removes, is filtered on its id alone,
      // before its embedded schema is parsed.
      if (knownVersion.exists(!reads(_))) return Outcome.Filtered
      val limits = spec.options.limits
      val writer = AvroSchemas.parseEmbedded(envelope.messageSchema, limits.maxEmbeddedSchemaBytes, limits.maxSchemaDepth)
      val known = byEmbeddedSchema.get(writer)
      if (known != null) known else {
        val version = knownVersion.orElse(spec.registry.byDataSchema(writer))
          .getOrElse(throw unknownSchemaId(envelope.schemaId))
        val built = if (!reads(version)) null else {
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
    if (!operationGates.isEmpty && !operationKept(operationGates.get(converter), bytes, envelope)) return Outcome.Filtered
    decoder.reset(bytes, envelope.payloadOffset, envelope.payloadLength)
    try converter.convert(decoder) catch {
      case e: ReplicateException => throw e
      case NonFatal(e) => throw new MalformedMessageException(ErrorId.BadPayload,
        s"payload does not decode with the table's data schema: $e", e)
    }
    if (!decoder.isEnd) throw new MalformedMessageException(ErrorId.TrailingBytes,
      "bytes follow the payload's last field")
    if (out.corruptSlot >= 0) out.row.setNullAt(out.corruptSlot)
    converted = converter
    Outcome.Row
  }

  /** Null for a known schema id of another table. */
  private def converterById(schemaId: String): MessageConverter = {
    if (byId.containsKey(schemaId)) byId.get(schemaId)
    else {
      val version = (if (schemaId == null) None else spec.registry.get(schemaId))
        .getOrElse(throw unknownSchemaId(schemaId))
      val built = if (reads(version)) newConverter(version.dataSchema, version) else null
      byId.put(schemaId, built)
      built
    }
  }

  private def reads(version: TableVersion): Boolean = readable(version.schemaId)

  private def newConverter(writer: Schema, version: TableVersion): MessageConverter = {
    val converter = out match {
      case flat: OutputRow => new DataRecordConverter(writer, version, flat, spec.options.typing)
      case generic => new GenericRecordConverter(writer, version, generic, spec.options)
    }
    spec.filter.forVersion(version) match {
      case byOperation: VersionDecision.ByOperation =>
        OperationGate.build(writer, byOperation).foreach(operationGates.put(converter, _))
      case _ =>
    }
    converter
  }

  /**
   * Peeks at the operation. A payload the peek cannot read is left to the full decode, which
   * reports it as malformed: the pushed filter never hides a malformed message it cannot decide.
   */
  private def operationKept(gate: OperationGate, bytes: Array[Byte], envelope: Envelope): Boolean =
    gate == null || (try gate.keeps(decoder.reset(bytes, envelope.payloadOffset, envelope.payloadLength)) catch {
      case NonFatal(_) => true
    })

  private def unknownSchemaId(schemaId: String) = new MalformedMessageException(ErrorId.UnknownSchemaId,
    (if (schemaId == null) "data message has neither a schema id nor an embedded schema of a known table"
    else s"schema id $schemaId is unknown") + s"; the registry holds ${spec.registry.describe}. " +
      "Point `schemaTopic` at the topic that holds this table's metadata messages")
}
