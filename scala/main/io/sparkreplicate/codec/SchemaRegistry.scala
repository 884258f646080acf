package io.sparkreplicate.codec

import org.apache.avro.{Schema, SchemaNormalization}

import io.sparkreplicate.{ErrorId, ReplicateException}

/**
 * Every table version learnt from metadata messages, keyed by schema id. Immutable and
 * serializable: built once on the driver and broadcast to the executors.
 *
 * @param origins where the metadata was read from (paths or globs), for error messages
 */
final class SchemaRegistry private (
    val versions: Map[String, TableVersion],
    val origins: Seq[String]) extends Serializable {

  def get(schemaId: String): Option[TableVersion] = versions.get(schemaId)

  /** Each table's versions, oldest first. */
  lazy val tables: Map[TableName, IndexedSeq[TableVersion]] =
    versions.values.groupBy(_.table).map { case (t, vs) => t -> vs.toIndexedSeq.sortBy(_.tableVersion) }

  /**
   * The version whose data schema is exactly `schema`: how a self-describing message that
   * carries no (or an unknown) schema id is matched to its table.
   */
  def byDataSchema(schema: Schema): Option[TableVersion] =
    byFingerprint.get(SchemaNormalization.parsingFingerprint64(schema))

  @transient private lazy val byFingerprint: Map[Long, TableVersion] =
    versions.values.map(v => SchemaNormalization.parsingFingerprint64(v.dataSchema) -> v).toMap

  def describe: String =
    s"${versions.size} schema id(s) of ${tables.size} table(s), read from ${origins.mkString(", ")}"
}

object SchemaRegistry {

  /**
   * Identical repeats of a metadata message (Replicate re-sends them on task restart) collapse
   * into one; two different messages under one schema id are a conflict the user must resolve.
   */
  def build(metadata: Iterable[TableVersion], origins: Seq[String]): SchemaRegistry = {
    val byId = metadata.groupBy(_.schemaId).map { case (id, copies) =>
      val first = copies.head
      copies.find(!_.sameAs(first)).foreach { other =>
        throw new ReplicateException(ErrorId.ConflictingMetadata,
          s"schema id $id is announced twice with different content: in ${first.origin} " +
            s"(${first.table} version ${first.tableVersion}) and in ${other.origin} " +
            s"(${other.table} version ${other.tableVersion}). Point `schemaTopic` at one task's " +
            "schema topic, or remove the stale metadata.")
      }
      id -> first
    }
    new SchemaRegistry(byId, origins)
  }
}
