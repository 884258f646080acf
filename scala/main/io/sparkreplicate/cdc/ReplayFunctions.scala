package io.sparkreplicate.cdc

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FunctionBuilder
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo

/** The SQL functions the changes' replay calls: [[ValuesAfter]] and [[NamesMask]]. */
object ReplayFunctions {
  val all: Seq[(FunctionIdentifier, ExpressionInfo, FunctionBuilder)] = Seq(
    (FunctionIdentifier(ValuesAfter.Name), ValuesAfter.info, ValuesAfter.build _),
    (FunctionIdentifier(NamesMask.Name), NamesMask.info, NamesMask.build _))

  /**
   * Registers them on a classic session that lacks them (one not started with
   * `spark.sql.extensions=io.sparkreplicate.ReplicateExtensions`); a Spark Connect server needs
   * the extensions, as for `from_replicate`.
   */
  def register(spark: SparkSession): Unit = spark match {
    case classic: org.apache.spark.sql.classic.SparkSession =>
      all.filterNot { case (name, _, _) => spark.catalog.functionExists(name.funcName) }.foreach {
        case (name, _, build) => classic.sessionState.functionRegistry.createOrReplaceTempFunction(name.funcName,
          build, "built-in")
      }
    case _ =>
  }
}
