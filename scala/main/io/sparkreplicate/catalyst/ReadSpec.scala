package io.sparkreplicate.catalyst

import org.apache.spark.sql.types.StructType

import io.sparkreplicate.ReplicateOptions
import io.sparkreplicate.codec.SchemaRegistry

/** Everything an executor needs to turn landed messages into rows; broadcast once per scan. */
sealed trait RowSpec extends Serializable {
  def options: ReplicateOptions
  /** The output columns the query selected. */
  def required: StructType
}

/**
 * The change rows of one table (flat layout) or of several (generic layout). `filter` is what the
 * pushed-down filters let the reader remove without decoding rows.
 */
final case class ReadSpec(
    options: ReplicateOptions,
    registry: SchemaRegistry,
    layout: OutputLayout,
    required: StructType,
    filter: MessageFilter = MessageFilter.KeepAll) extends RowSpec

/** The metadata view: one row per metadata message; no registry is needed to decode them. */
final case class MetadataSpec(options: ReplicateOptions, required: StructType) extends RowSpec
