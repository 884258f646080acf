package io.sparkreplicate.catalyst

import org.apache.spark.sql.types.StructType

import io.sparkreplicate.DecodeOptions
import io.sparkreplicate.codec.SchemaRegistry

/** Everything an executor needs to turn messages into rows; shipped once per scan. */
sealed trait RowSpec extends Serializable {
  def options: DecodeOptions
  /** The output columns the query selected. */
  def required: StructType
}

/**
 * The change rows of one table (flat layout) or of several (generic layout). `filter` is what the
 * pushed-down filters let the reader remove without decoding rows; `refresh` re-reads the
 * metadata for a message whose schema id `registry` lacks (`metadataWait`), when the source can.
 */
final case class ReadSpec(
    options: DecodeOptions,
    registry: SchemaRegistry,
    layout: OutputLayout,
    required: StructType,
    filter: MessageFilter = MessageFilter.KeepAll,
    refresh: Option[MetadataRefresh] = None) extends RowSpec

/** The metadata view: one row per metadata message; no registry is needed to decode them. */
final case class MetadataSpec(options: DecodeOptions, required: StructType) extends RowSpec
