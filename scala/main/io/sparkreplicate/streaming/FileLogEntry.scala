package io.sparkreplicate.streaming

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.hadoop.fs.{FileStatus, Path}

import io.sparkreplicate.codec.{ColumnInfo, Lineage, TableVersion}

/** A landed file as a stream took it: a later listing that differs means the file changed. */
final case class LoggedFile(path: String, length: Long, modificationTime: Long) {
  def status: FileStatus = new FileStatus(length, false, 0, 0, modificationTime, new Path(path))
  def sameAs(other: FileStatus): Boolean = other.getLen == length && other.getModificationTime == modificationTime
}

object LoggedFile {
  def apply(status: FileStatus): LoggedFile =
    LoggedFile(status.getPath.toString, status.getLen, status.getModificationTime)
}

/**
 * What one micro-batch took: its data files, the files whose metadata messages it took in (the
 * schema-topic files landed since the previous batch, or without a schema topic the data files
 * landed since), and the table versions they announce. A batch decodes with the versions of every
 * entry up to its own, so a re-planned batch decodes exactly as it first did.
 */
final case class FileLogEntry(files: Seq[LoggedFile], schemaFiles: Seq[LoggedFile], versions: Seq[TableVersion])

/** The entry as JSON: a checkpoint outlives the code that wrote it, so no Java serialization. */
object FileLogEntry {
  private val mapper = new ObjectMapper

  def toJson(entry: FileLogEntry): String = {
    val root = mapper.createObjectNode()
    files(root.putArray("files"), entry.files)
    files(root.putArray("schemaFiles"), entry.schemaFiles)
    val versions = root.putArray("versions")
    entry.versions.foreach(v => version(versions.addObject(), v))
    mapper.writeValueAsString(root)
  }

  def fromJson(json: String): FileLogEntry = {
    val root = mapper.readTree(json)
    FileLogEntry(files(root.get("files")), files(root.get("schemaFiles")),
      root.get("versions").elements().asScala.map(version).toSeq)
  }

  private def files(array: com.fasterxml.jackson.databind.node.ArrayNode, files: Seq[LoggedFile]): Unit =
    files.foreach { f =>
      array.addObject().put("path", f.path).put("length", f.length).put("modificationTime", f.modificationTime)
    }

  private def files(array: JsonNode): Seq[LoggedFile] = array.elements().asScala.map { f =>
    LoggedFile(f.get("path").asText, f.get("length").asLong, f.get("modificationTime").asLong)
  }.toSeq

  private def version(node: ObjectNode, v: TableVersion): Unit = {
    node.put("schemaId", v.schemaId).put("dataSchema", v.dataSchemaJson).put("origin", v.origin)
    val l = v.lineage
    node.putObject("lineage").put("server", l.server).put("task", l.task).put("schema", l.schema)
      .put("table", l.table).put("tableVersion", l.tableVersion).put("timestamp", l.timestamp)
    val columns = node.putArray("columns")
    v.columns.foreach { c =>
      columns.addObject().put("name", c.name).put("ordinal", c.ordinal).put("sourceType", c.sourceType)
        .put("length", c.length).put("precision", c.precision).put("scale", c.scale)
        .put("primaryKeyPosition", c.primaryKeyPosition).put("nullable", c.nullable)
    }
  }

  private def version(node: JsonNode): TableVersion = {
    val l = node.get("lineage")
    TableVersion(
      schemaId = text(node, "schemaId"),
      lineage = Lineage(text(l, "server"), text(l, "task"), text(l, "schema"), text(l, "table"),
        l.get("tableVersion").asLong, text(l, "timestamp")),
      columns = node.get("columns").elements().asScala.map { c =>
        ColumnInfo(text(c, "name"), c.get("ordinal").asInt, text(c, "sourceType"), c.get("length").asInt,
          c.get("precision").asInt, c.get("scale").asInt, c.get("primaryKeyPosition").asInt, c.get("nullable").asBoolean)
      }.toIndexedSeq,
      dataSchemaJson = text(node, "dataSchema"),
      origin = text(node, "origin"))
  }

  /** Null stays null: the lineage's server, task and timestamp may be absent from a metadata message. */
  private def text(node: JsonNode, field: String): String =
    Option(node.get(field)).filterNot(_.isNull).map(_.asText).orNull
}
