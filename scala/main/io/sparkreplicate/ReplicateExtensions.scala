package io.sparkreplicate

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier

import io.sparkreplicate.cdc.ReplayFunctions
import io.sparkreplicate.sql.FromReplicate

/**
 * Registers the connector's SQL functions (`from_replicate`, and `replicate_values_after` and
 * `replicate_names_mask` of the changes' replay) in every session of an application started with
 * `spark.sql.extensions=io.sparkreplicate.ReplicateExtensions` (which
 * `spark_replicate.configure_spark` sets), Spark Connect servers included.
 */
final class ReplicateExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectFunction((FunctionIdentifier(FromReplicate.Name), FromReplicate.info, FromReplicate.build _))
    ReplayFunctions.all.foreach(extensions.injectFunction)
  }
}
