package io.sparkreplicate.catalyst

import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.Schema.Type._
import org.apache.spark.sql.types._

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.codec.AvroSchemas

/** The Spark type of a Replicate column from its Avro schema (`[null, T]` maps as `T`). */
object AvroTypes {
  val MaxDecimalPrecision = 38

  def sparkType(schema: Schema, column: String): DataType = {
    val s = AvroSchemas.unwrapNullable(schema)
    (s.getType, s.getLogicalType) match {
      case (INT, _: LogicalTypes.Date) => DateType
      case (LONG, _: LogicalTypes.TimestampMicros | _: LogicalTypes.TimestampMillis) => TimestampType
      case (BYTES | FIXED, d: LogicalTypes.Decimal) if d.getPrecision <= MaxDecimalPrecision =>
        DecimalType(d.getPrecision, d.getScale)
      case (INT, _) => IntegerType
      case (LONG, _) => LongType
      case (FLOAT, _) => FloatType
      case (DOUBLE, _) => DoubleType
      case (BOOLEAN, _) => BooleanType
      case (STRING | ENUM, _) => StringType
      case (BYTES | FIXED, _) => BinaryType
      case _ => throw new ReplicateException(ErrorId.UnsupportedType,
        s"column `$column` has the Avro type ${s.toString.take(200)}, which Replicate " +
          "does not produce for a column; only primitives, enums and `[null, T]` unions are read")
    }
  }

  /**
   * The type that holds values of both `a` and `b` without loss, for columns whose type changed
   * between table versions; None when there is none.
   */
  def widen(a: DataType, b: DataType): Option[DataType] = (a, b) match {
    case _ if a == b => Some(a)
    case (IntegerType, LongType) | (LongType, IntegerType) => Some(LongType)
    case (FloatType, DoubleType) | (DoubleType, FloatType) => Some(DoubleType)
    case (x: DecimalType, y: DecimalType) if x.scale == y.scale =>
      Some(DecimalType(math.max(x.precision, y.precision), x.scale))
    case _ => None
  }
}
