package io.sparkreplicate.catalyst

import io.sparkreplicate.{ErrorId, ReplicateException, SchemaEvolution}
import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}

/**
 * A stream keeps the schema it was started with while each micro-batch brings the metadata
 * landed so far. In the generic layout every table and version flows into the same columns; in
 * the flat layout a version first seen mid-stream is read into the stream's columns when it fits
 * them (no new column, each type the same or safely widened into the stream's), and otherwise
 * stops the query before any of its messages is read: a restart chooses the schema anew.
 */
object StreamSchema {

  /**
   * @param known the metadata the query's schema was chosen from
   * @param batch the metadata of this micro-batch
   */
  def forBatch(query: QuerySchema, known: SchemaRegistry, batch: SchemaRegistry): QuerySchema = query.layout match {
    case Some(_: GenericLayout) if query.options.table.isEmpty =>
      query.copy(layout = Some(GenericLayout(batch.tables.keys.toSeq.sortBy(_.toString))))
    case Some(table: TableLayout) =>
      batch.tables.getOrElse(table.table, Nil).filter(v => known.get(v.schemaId).isEmpty).foreach(check(query, table, _))
      query
    case _ => query
  }

  private def check(query: QuerySchema, layout: TableLayout, version: TableVersion): Unit = {
    val what = s"${version.table} has a new version ${version.tableVersion} (schema id ${version.schemaId})"
    if (query.options.schemaEvolution == SchemaEvolution.Fail) throw new ReplicateException(ErrorId.SchemaEvolved,
      s"$what and `schemaEvolution` is `fail`; set it to `merge` or `latest` to read new versions")
    val changes = layout.misfits(version, query.options.typing)
    if (changes.nonEmpty) throw new ReplicateException(ErrorId.SchemaChanged,
      s"$what that the stream's columns cannot hold: ${changes.mkString(", ")}. The stream stopped before " +
        "reading any message of it; restart the query from the same checkpoint to pick them up (its " +
        "schema is chosen again from the metadata landed by then, and every message is still read once)")
  }
}
