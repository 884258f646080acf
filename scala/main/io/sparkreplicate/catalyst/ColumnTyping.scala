package io.sparkreplicate.catalyst

import java.time.ZoneId
import java.util.Locale

import org.apache.avro.Schema
import org.apache.avro.Schema.Type._
import org.apache.spark.sql.types._

import io.sparkreplicate.codec.{AvroSchemas, ColumnInfo}

/**
 * The Spark type of a table column in one table version. With Replicate's "logical data types"
 * on, the Avro type says it all ([[AvroTypes]]). With them off, dates, timestamps and decimals
 * arrive as strings, and the metadata message's source type, precision and scale say what they
 * really are; `sourceTypes` = false keeps the Avro types instead.
 *
 * @param timeZone      the zone of DATETIME strings, which carry none
 * @param widenToString whether a column whose versions have incompatible types is read as text
 */
final case class ColumnTyping(sourceTypes: Boolean, timeZone: ZoneId, widenToString: Boolean) {

  def sparkType(avro: Schema, column: ColumnInfo): DataType = {
    val avroType = AvroTypes.sparkType(avro, column.name)
    val s = AvroSchemas.unwrapNullable(avro)
    if (!sourceTypes) avroType
    else if (s.getType == STRING) ColumnTyping.ofText(column).getOrElse(avroType)
    // Decimals without the logical type: unscaled bytes, scaled by the metadata.
    else if ((s.getType == BYTES || s.getType == FIXED) && s.getLogicalType == null)
      ColumnTyping.ofUnscaledBytes(column).getOrElse(avroType)
    else avroType
  }
}

object ColumnTyping {
  private val Ints = Set("INT1", "INT2", "INT4", "UINT1", "UINT2")
  private val Longs = Set("INT8", "UINT4")

  def sourceType(column: ColumnInfo): String = column.sourceType.trim.toUpperCase(Locale.ROOT)

  /** The type a string-encoded column stands for; None keeps it a string. */
  private def ofText(column: ColumnInfo): Option[DataType] = sourceType(column) match {
    case t if Ints(t) => Some(IntegerType)
    case t if Longs(t) => Some(LongType)
    case "UINT8" => Some(DecimalType(20, 0))
    case "NUMERIC" => numeric(column)
    case "REAL4" => Some(FloatType)
    case "REAL8" => Some(DoubleType)
    case "DATE" => Some(DateType)
    case "DATETIME" | "TIMESTAMP" => Some(TimestampType)
    case "BOOLEAN" => Some(BooleanType)
    case "BYTES" | "BLOB" => Some(BinaryType)
    case _ => None
  }

  private def ofUnscaledBytes(column: ColumnInfo): Option[DataType] = sourceType(column) match {
    case "NUMERIC" => numeric(column).orElse(Some(StringType))
    case "UINT8" => Some(DecimalType(20, 0))
    case _ => None
  }

  /**
   * NUMERIC(p, s) as the Spark decimal that holds all its values: a negative scale (multiples of
   * 10^-s) becomes scale 0 with -s more digits, and a scale above the precision (e.g. Oracle's
   * NUMBER(2, 5)) widens the precision to the scale. Beyond 38 digits, or with no precision given,
   * no Spark decimal fits: the column stays a string, normalised to the scale.
   */
  def numeric(column: ColumnInfo): Option[DataType] = {
    val (p, s) = (column.precision, column.scale)
    val (precision, scale) = if (s < 0) (p - s, 0) else (math.max(p, s), s)
    if (p <= 0 || precision > DecimalType.MAX_PRECISION) None else Some(DecimalType(precision, scale))
  }
}
