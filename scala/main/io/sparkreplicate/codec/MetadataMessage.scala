package io.sparkreplicate.codec

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.avro.generic.{GenericDatumReader, GenericRecord}

import io.sparkreplicate.{DecodeLimits, ErrorId, MalformedMessageException}

/**
 * Decodes metadata (MD) payloads. Their schema differs per table (`tableColumns` is a record with
 * one field per column), so they are read generically with the embedded schema and navigated by
 * field name; metadata messages are few, so generic decoding costs nothing that matters.
 */
object MetadataMessage {

  /** @param limits caps on the embedded schema, untrusted input like any other byte */
  def decode(buf: Array[Byte], envelope: Envelope, origin: String,
      limits: DecodeLimits = DecodeLimits.Default): TableVersion = {
    if (envelope.messageSchema == null) throw new MalformedMessageException(ErrorId.BadPayload,
      "metadata message carries no `messageSchema`: its payload cannot be decoded without it")
    val schema = AvroSchemas.parseEmbedded(envelope.messageSchema, limits.maxEmbeddedSchemaBytes, limits.maxSchemaDepth)
    val decoder = new SliceDecoder().reset(buf, envelope.payloadOffset, envelope.payloadLength)
    val record = try {
      new GenericDatumReader[GenericRecord](schema).read(null, decoder)
    } catch {
      case e: MalformedMessageException => throw e
      case NonFatal(e) => throw new MalformedMessageException(ErrorId.BadPayload,
        s"metadata payload does not decode with its embedded schema: ${e.getMessage}", e)
    }
    if (!decoder.isEnd) throw new MalformedMessageException(ErrorId.TrailingBytes,
      "bytes follow the metadata payload")
    val version = try fromRecord(record, origin) catch {
      case e: ClassCastException => throw new MalformedMessageException(ErrorId.BadPayload,
        s"a metadata field has an unexpected type: ${e.getMessage}", e)
    }
    if (envelope.schemaId != null && envelope.schemaId != version.schemaId) {
      throw new MalformedMessageException(ErrorId.BadPayload, s"envelope schema id " +
        s"${envelope.schemaId} differs from the metadata's own schemaId ${version.schemaId}")
    }
    version
  }

  private def fromRecord(record: GenericRecord, origin: String): TableVersion = {
    val lineage = record.req[GenericRecord]("lineage")
    val columns = record.req[GenericRecord]("tableStructure").req[GenericRecord]("tableColumns")
    val columnInfos = columns.getSchema.getFields.asScala.map { field =>
      val column = columns.get(field.pos).asInstanceOf[GenericRecord]
      ColumnInfo(
        name = field.name,
        ordinal = column.req[Number]("ordinal").intValue,
        sourceType = column.opt("type").map(_.toString).getOrElse(""),
        length = column.opt("length").map(_.asInstanceOf[Number].intValue).getOrElse(0),
        precision = column.opt("precision").map(_.asInstanceOf[Number].intValue).getOrElse(0),
        scale = column.opt("scale").map(_.asInstanceOf[Number].intValue).getOrElse(0),
        primaryKeyPosition =
          column.opt("primaryKeyPosition").map(_.asInstanceOf[Number].intValue).getOrElse(0),
        nullable = column.opt("nullable").forall(_ == java.lang.Boolean.TRUE))
    }.sortBy(_.ordinal).toIndexedSeq
    val ordinals = columnInfos.map(_.ordinal)
    if (ordinals != (1 to columnInfos.size)) throw new MalformedMessageException(
      ErrorId.BadPayload, s"column ordinals are ${ordinals.mkString(",")}, expected 1..${columnInfos.size}")
    TableVersion(
      schemaId = record.req[CharSequence]("schemaId").toString,
      lineage = Lineage(
        server = lineage.opt("server").map(_.toString).orNull,
        task = lineage.opt("task").map(_.toString).orNull,
        schema = lineage.req[CharSequence]("schema").toString,
        table = lineage.req[CharSequence]("table").toString,
        tableVersion = lineage.req[Number]("tableVersion").longValue,
        timestamp = lineage.opt("timestamp").map(_.toString).orNull),
      columns = columnInfos,
      dataSchemaJson = record.req[CharSequence]("dataSchema").toString,
      origin = origin)
  }

  private implicit class FieldAccess(val record: GenericRecord) extends AnyVal {
    def opt(name: String): Option[AnyRef] =
      if (record.getSchema.getField(name) == null) None else Option(record.get(name))

    def req[T](name: String): T = opt(name).getOrElse(throw new MalformedMessageException(
      ErrorId.BadPayload, s"metadata message has no `$name` in `${record.getSchema.getName}`"))
      .asInstanceOf[T]
  }
}
