package io.sparkreplicate.v2

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Column, DataFrame, Row, SQLContext}
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.sources._
import org.apache.spark.sql.types.StructType

/**
 * The replicate read as a V1 relation, for the one place Spark still asks for one: a catalog
 * table `USING replicate` in a session whose `spark_catalog` is another implementation (Delta
 * Lake's DeltaCatalog, say). Spark's session catalog loads a provider's tables through
 * `TableProvider` only while it is the built-in one; otherwise it hands them to the V1 path. The
 * relation runs the same V2 read (`read`), with the columns the query needs and the filters it
 * can express pushed into it, so pruning and pushdown work as in `spark.read`; Spark still
 * applies every filter to the rows it gets back.
 */
private[v2] final class ReplicateRelation(override val sqlContext: SQLContext, read: DataFrame)
    extends BaseRelation with PrunedFilteredScan {
  override def schema: StructType = read.schema

  /** The V2 scan's estimate of its size ([[ReplicateScan.estimateStatistics]]), so joins are planned alike. */
  override def sizeInBytes: Long = read.queryExecution.optimizedPlan.stats.sizeInBytes.min(Long.MaxValue).toLong

  // The rows come from Spark's own plan, already in its internal form.
  override def needConversion: Boolean = false

  override def buildScan(requiredColumns: Array[String], filters: Array[Filter]): RDD[Row] = {
    val filtered = filters.flatMap(ReplicateRelation.toColumn).foldLeft(read)(_ where _)
    filtered.select(requiredColumns.toIndexedSeq.map(name => read.col(ReplicateRelation.quoted(name))): _*)
      .queryExecution.toRdd.asInstanceOf[RDD[Row]]
  }
}

private[v2] object ReplicateRelation {
  // A top-level column name, as one name whatever dots it holds.
  private def quoted(name: String): String = "`" + name.replace("`", "``") + "`"

  /** The filter as a column expression, when it has one; attributes are in Spark's quoted form. */
  def toColumn(filter: Filter): Option[Column] = filter match {
    case EqualTo(name, value) => Some(col(name) === lit(value))
    case EqualNullSafe(name, value) => Some(col(name) <=> lit(value))
    case GreaterThan(name, value) => Some(col(name) > lit(value))
    case GreaterThanOrEqual(name, value) => Some(col(name) >= lit(value))
    case LessThan(name, value) => Some(col(name) < lit(value))
    case LessThanOrEqual(name, value) => Some(col(name) <= lit(value))
    case In(name, values) => Some(col(name).isin(values.toIndexedSeq: _*))
    case IsNull(name) => Some(col(name).isNull)
    case IsNotNull(name) => Some(col(name).isNotNull)
    case StringStartsWith(name, prefix) => Some(col(name).startsWith(prefix))
    case StringEndsWith(name, suffix) => Some(col(name).endsWith(suffix))
    case StringContains(name, part) => Some(col(name).contains(part))
    // Either side alone is a weaker filter, and so still safe to push.
    case And(left, right) => (toColumn(left) ++ toColumn(right)).reduceOption(_ && _)
    case Or(left, right) => for (l <- toColumn(left); r <- toColumn(right)) yield l || r
    case Not(child) => toColumn(child).map(!_)
    case _ => None
  }
}
