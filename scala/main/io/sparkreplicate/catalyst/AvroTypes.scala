package io.sparkreplicate.catalyst

import org.apache.avro.{LogicalTypes, Schema}
import org.apache.avro.Schema.Type._
import org.apache.spark.sql.types._

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.codec.AvroSchemas

/**
 * The Spark type of a Replicate column from its Avro schema (`[null, T]` maps as `T`). Spark 4.0
 * has no TIME type: times become strings `HH:mm:ss.ffffff`, which sort and compare as times do.
 * Decimals beyond Spark's 38 digits become their exact plain strings.
 */
object AvroTypes {

  def sparkType(schema: Schema, column: String): DataType = {
    val s = AvroSchemas.unwrapNullable(schema)
    (s.getType, s.getLogicalType) match {
      case (INT, _: LogicalTypes.Date) => DateType
      case (LONG, _: LogicalTypes.TimestampMicros | _: LogicalTypes.TimestampMillis) => TimestampType
      case (INT, _: LogicalTypes.TimeMillis) | (LONG, _: LogicalTypes.TimeMicros) => StringType
      case (BYTES | FIXED, d: LogicalTypes.Decimal) =>
        if (d.getPrecision <= DecimalType.MAX_PRECISION) DecimalType(d.getPrecision, d.getScale) else StringType
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
}
