package io.sparkreplicate.catalyst

import java.util.IdentityHashMap

import scala.util.control.NonFatal

import org.apache.avro.Schema

import io.sparkreplicate.{DecodeOptions, ErrorId, MalformedMessageException, Redaction, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, Envelope, MessageKind, SchemaRegistry, SliceDecoder, TableVersion}

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
final class ChangeRowDecoder(spec: ReadSpec, counters: ReadCounters = new ReadCounters) extends RowDecoder {
  val out: ReaderRow = spec.layout match {
    case table: TableLayout => new OutputRow(spec.required, table, spec.options.columnNameOfCorruptRecord)
    case _: GenericLayout => new ReaderRow(spec.required, spec.options.columnNameOfCorruptRecord)
  }
  protected def redaction: Redaction = spec.options.redaction
  /** The metadata known to this decoder: the query's, grown by what came late (`metadataWait`). */
  private var registry = spec.registry
  private val late = new LateMetadata(spec.options.metadataWaitMillis, spec.refresh, counters)
  /** A generic read of every table also reads the tables whose metadata comes late. */
  private val everyTable = spec.layout.isInstanceOf[GenericLayout] && spec.options.table.isEmpty
  private val tables = spec.layout.tables.toSet
  /**
   * Per schema id: a version of a table being read, and one the pushed filter does not remove
   * whole. Decided once, as self-describing messages ask for every message.
   */
  private val readable = new java.util.HashMap[String, java.lang.Boolean]()
  private val byId = new java.util.HashMap[String, MessageConverter]()
  /**
   * The last id looked up and its converter: a file or a partition holds long runs of one table
   * version, and the envelope hands back the same String for a repeated id, so an identity check
   * spares the map's two lookups for nearly every message.
   */
  private var lastId: String = _
  private var lastById: MessageConverter = _
  private val byEmbeddedSchema = new IdentityHashMap[Schema, MessageConverter]()
  private val decoder = new SliceDecoder
  private val envelope = new Envelope
  /** The converters whose messages the pushed filter decides by operation. */
  private val operationGates = new IdentityHashMap[MessageConverter, OperationGate]()
  /** The converter of the last row returned. */
  private var converted: MessageConverter = _

  override def maskBitsIgnored: Boolean = converted.maskBitsIgnored

  def decode(bytes: Array[Byte], offset: Int, length: Int): Outcome = {
    Envelope.decode(decoder, bytes, offset, length, envelope)
    if (envelope.kind == MessageKind.Metadata) return Outcome.Metadata
    val converter = if (envelope.messageSchema == null) converterById(envelope.schemaId) else {
      val knownVersion = if (envelope.schemaId == null) None else registry.get(envelope.schemaId)
      // Another table's message, or a version the pushed filter removes, is filtered on its id alone,
      // before its embedded schema is parsed.
      if (knownVersion.exists(!reads(_))) return Outcome.Filtered
      val limits = spec.options.limits
      val writer = AvroSchemas.parseEmbedded(envelope.messageSchema, limits.maxEmbeddedSchemaBytes, limits.maxSchemaDepth)
      val known = byEmbeddedSchema.get(writer)
      if (known != null) known else {
        val version = knownVersion.orElse(registry.byDataSchema(writer))
          .orElse(awaitVersion(Option(envelope.schemaId).getOrElse(writer.toString), grown =>
            Option(envelope.schemaId).flatMap(grown.get).orElse(grown.byDataSchema(writer))))
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
    if (!operationGates.isEmpty && !operationKept(operationGates.get(converter), bytes)) return Outcome.Filtered
    decoder.reset(bytes, envelope.payloadOffset, envelope.payloadLength)
    try converter.convert(decoder) catch {
      case e: ReplicateException => throw e
      case NonFatal(e) => throw new MalformedMessageException(ErrorId.BadPayload,
        s"payload does not decode with the table's data schema: $e", e)
    }
    if (!decoder.isEnd) throw new MalformedMessageException(ErrorId.TrailingBytes,
      "bytes follow the payload's last field")
    if (out.corruptSlot >= 0) out.row.setNullAt(out.corruptSlot)
    if (converted ne converter) converted = converter
    Outcome.Row
  }

  /** Null for a known schema id of another table. */
  private def converterById(schemaId: String): MessageConverter = {
    if (schemaId == null || (schemaId ne lastId)) {
      lastById = lookUpConverter(schemaId)
      lastId = schemaId
    }
    lastById
  }

  private def lookUpConverter(schemaId: String): MessageConverter =
    if (byId.containsKey(schemaId)) byId.get(schemaId)
    else {
      val version = (if (schemaId == null) None else registry.get(schemaId).orElse(awaitVersion(schemaId, _.get(schemaId))))
        .getOrElse(throw unknownSchemaId(schemaId))
      val built = if (reads(version)) newConverter(version.dataSchema, version) else null
      byId.put(schemaId, built)
      built
    }

  private def reads(version: TableVersion): Boolean = {
    val known = readable.get(version.schemaId)
    if (known != null) known
    else {
      val reading = (everyTable || tables(version.table)) && spec.filter.forVersion(version) != VersionDecision.SkipAll
      readable.put(version.schemaId, reading)
      reading
    }
  }

  /** The version `find` finds once the metadata it waits for has come; the registry grows with it. */
  private def awaitVersion(key: String, find: SchemaRegistry => Option[TableVersion]): Option[TableVersion] =
    late.await(key, registry)(find(_).isDefined).flatMap { grown =>
      registry = grown
      find(grown)
    }

  private def newConverter(writer: Schema, version: TableVersion): MessageConverter = {
    if (!spec.registry.versions.contains(version.schemaId)) refuseMisfit(version)
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
  private def operationKept(gate: OperationGate, bytes: Array[Byte]): Boolean =
    gate == null || (try gate.keeps(decoder.reset(bytes, envelope.payloadOffset, envelope.payloadLength)) catch {
      case NonFatal(_) => true
    })

  /**
   * A version learnt late must fit the columns the query chose, or its values would be lost: the
   * query stops (whatever the mode: no message is at fault) and a new query picks the columns up.
   */
  private def refuseMisfit(version: TableVersion): Unit = spec.layout match {
    case layout: TableLayout =>
      val misfits = layout.misfits(version, spec.options.typing)
      if (misfits.nonEmpty) throw new ReplicateException(ErrorId.SchemaChanged, s"${version.table} version " +
        s"${version.tableVersion} (schema id ${version.schemaId}), whose metadata came after the query chose " +
        s"its columns, does not fit them: ${misfits.mkString(", ")}. Run the query again (a stream: restart " +
        "it from its checkpoint) to read it with its columns")
    case _: GenericLayout =>
  }

  private def unknownSchemaId(schemaId: String) = new MalformedMessageException(ErrorId.UnknownSchemaId,
    (if (schemaId == null) "data message has neither a schema id nor an embedded schema of a known table"
    else s"schema id $schemaId is unknown") + s"; the registry holds ${registry.describe}. " +
      "Point `schemaTopic` at the topic that holds this table's metadata messages; if they arrive " +
      s"after the data, set `${DecodeOptions.MetadataWait}` to wait for them")
}
