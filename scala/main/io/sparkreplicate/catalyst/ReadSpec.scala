package io.sparkreplicate.catalyst

import org.apache.spark.sql.types.StructType

import io.sparkreplicate.ReplicateOptions
import io.sparkreplicate.codec.SchemaRegistry

/**
 * Everything an executor needs to turn landed messages into rows; broadcast once per scan.
 * `filter` is what the pushed-down filters let the reader remove without decoding rows.
 */
final case class ReadSpec(
    options: ReplicateOptions,
    registry: SchemaRegistry,
    layout: OutputLayout,
    required: StructType,
    filter: MessageFilter = MessageFilter.KeepAll)
