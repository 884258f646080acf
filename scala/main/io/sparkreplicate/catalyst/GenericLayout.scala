package io.sparkreplicate.catalyst

import io.sparkreplicate.codec.TableName

/** The shape of a read's rows: one table's typed columns, or every table's rows as variants. */
trait OutputLayout extends Serializable {
  /** The tables whose data messages become rows. */
  def tables: Seq[TableName]
}

/**
 * All tables at once: one row per data message, whatever its table, with the table's name and
 * the row images as VARIANT values typed by the message's own table version.
 */
final case class GenericLayout(tables: Seq[TableName]) extends OutputLayout
