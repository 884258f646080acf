package io.sparkreplicate.catalyst

import java.util.{ArrayList => JArrayList}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.types.variant.{VariantBuilder, VariantSizeLimitException}
import org.apache.spark.unsafe.types.VariantVal

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Turns rows of one struct type into VARIANT objects keyed by column name, keeping each value's
 * type (dates stay dates, decimals decimals). The per-column append steps are chosen once; a null
 * column is a variant null, so a column the version has but the message left null differs from
 * one the version does not have.
 */
final class VariantRows(struct: StructType) {
  private type Append = (VariantBuilder, InternalRow, Int) => Unit

  private val names = struct.fieldNames
  private val appends: Array[Append] = struct.fields.map(f => append(f.dataType))

  def toVariant(row: InternalRow): VariantVal = {
    val builder = new VariantBuilder(false)
    val start = builder.getWritePos
    val fields = new JArrayList[VariantBuilder.FieldEntry](names.length)
    var i = 0
    while (i < names.length) {
      fields.add(new VariantBuilder.FieldEntry(names(i), builder.addKey(names(i)), builder.getWritePos - start))
      if (row.isNullAt(i)) builder.appendNull() else appends(i)(builder, row, i)
      i += 1
    }
    try {
      builder.finishWritingObject(start, fields)
      val variant = builder.result()
      new VariantVal(variant.getValue, variant.getMetadata)
    } catch {
      case e: VariantSizeLimitException => throw new MalformedMessageException(ErrorId.BadValue,
        s"the row image exceeds the VARIANT size limit: read this table with the option `table` " +
          "for typed columns instead", e)
    }
  }

  private def append(t: DataType): Append = t match {
    case IntegerType => (b, r, i) => b.appendLong(r.getInt(i).toLong)
    case LongType => (b, r, i) => b.appendLong(r.getLong(i))
    case FloatType => (b, r, i) => b.appendFloat(r.getFloat(i))
    case DoubleType => (b, r, i) => b.appendDouble(r.getDouble(i))
    case BooleanType => (b, r, i) => b.appendBoolean(r.getBoolean(i))
    case StringType => (b, r, i) => b.appendString(r.getUTF8String(i).toString)
    case BinaryType => (b, r, i) => b.appendBinary(r.getBinary(i))
    case DateType => (b, r, i) => b.appendDate(r.getInt(i))
    case TimestampType => (b, r, i) => b.appendTimestamp(r.getLong(i))
    case d: DecimalType => (b, r, i) => b.appendDecimal(r.getDecimal(i, d.precision, d.scale).toJavaBigDecimal)
    case other => throw new IllegalArgumentException(s"no variant form of ${other.simpleString}")
  }
}
