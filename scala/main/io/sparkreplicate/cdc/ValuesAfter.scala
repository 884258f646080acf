package io.sparkreplicate.cdc

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExpressionInfo, GenericInternalRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, LongType, StructField, StructType}

/**
 * `replicate_values_after(full, partial)` over a window of a key's events in their order: the
 * value columns as they stand after the frame's events, folded in the order the frame gives them.
 * An event's `full` (its `Full`: the struct of its values) sets every column, one copy of it;
 * then its `partial` (struct(m0.., v)) sets the columns its mask words name. An event has one of
 * them, or both: a row moved to a new key whose mask leaves columns out starts from its
 * before-image. The replay's one window
 * function for all the columns: `last(..., ignoreNulls)` per column, as before it, spread every
 * partial event into a struct per column and kept a value per column in the window, which took
 * about a fifth more time for `latest_state` on the benchmark's apply data.
 *
 * A window function only: a fold in the frame's order has no merge of two partial results.
 */
final case class ValuesAfter(full: Expression, partial: Expression, mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0) extends ImperativeAggregate with CodegenFallback {

  override def children: Seq[Expression] = Seq(full, partial)
  override def nullable: Boolean = true
  override def dataType: DataType = values

  private lazy val values = full.dataType.asInstanceOf[StructType]
  private lazy val width = values.length
  private lazy val types = values.fields.map(_.dataType)
  private lazy val words = (width + 63) / 64
  private lazy val partialValues = partial.dataType.asInstanceOf[StructType].fieldIndex("v")

  /** The buffer: the last `full` values, each column's value set since, and the words of which are. */
  override lazy val aggBufferSchema: StructType = StructType(StructField("full", values) +:
    (types.indices.map(i => StructField(s"v$i", types(i))) ++ (0 until words).map(w => StructField(s"m$w", LongType))))
  override lazy val aggBufferAttributes: Seq[AttributeReference] =
    aggBufferSchema.map(f => AttributeReference(f.name, f.dataType)())
  override lazy val inputAggBufferAttributes: Seq[AttributeReference] = aggBufferAttributes.map(_.newInstance())

  /** The buffer's position of the word saying which columns were set since the last `full`. */
  private def setWord(w: Int): Int = mutableAggBufferOffset + 1 + width + w

  override def initialize(buffer: InternalRow): Unit = {
    buffer.setNullAt(mutableAggBufferOffset)
    clearSet(buffer)
  }

  private def clearSet(buffer: InternalRow): Unit = {
    var w = 0
    while (w < words) { buffer.setLong(setWord(w), 0L); w += 1 }
  }

  override def update(buffer: InternalRow, input: InternalRow): Unit = {
    val event = full.eval(input).asInstanceOf[InternalRow]
    if (event != null) {
      // Copied: the frame's rows are the window's buffer, which a spill reads back into one row.
      buffer.update(mutableAggBufferOffset, event.copy())
      clearSet(buffer)
    }
    val columns = partial.eval(input).asInstanceOf[InternalRow]
    if (columns != null) {
      val v = columns.getStruct(partialValues, width)
      var w = 0
      while (w < words) {
        var bits = columns.getLong(w)
        buffer.setLong(setWord(w), buffer.getLong(setWord(w)) | bits)
        while (bits != 0) {
          val i = 64 * w + java.lang.Long.numberOfTrailingZeros(bits)
          buffer.update(mutableAggBufferOffset + 1 + i,
            if (v.isNullAt(i)) null else InternalRow.copyValue(v.get(i, types(i))))
          bits &= bits - 1
        }
        w += 1
      }
    }
  }

  override def merge(buffer: InternalRow, input: InternalRow): Unit =
    throw new UnsupportedOperationException(s"${ValuesAfter.Name} is a window function only")

  override def eval(buffer: InternalRow): Any = {
    val last = if (buffer.isNullAt(mutableAggBufferOffset)) null else buffer.getStruct(mutableAggBufferOffset, width)
    var anySet = false
    var w = 0
    while (w < words) { anySet ||= buffer.getLong(setWord(w)) != 0; w += 1 }
    if (!anySet) last // the usual case: the key's last event set every column
    else {
      val out = new Array[Any](width)
      var i = 0
      while (i < width) {
        val set = (buffer.getLong(setWord(i / 64)) & (1L << (i % 64))) != 0
        val at = mutableAggBufferOffset + 1 + i
        out(i) = if (set) { if (buffer.isNullAt(at)) null else buffer.get(at, types(i)) }
          else if (last == null || last.isNullAt(i)) null
          else last.get(i, types(i))
        i += 1
      }
      new GenericInternalRow(out)
    }
  }

  override def withNewMutableAggBufferOffset(offset: Int): ImperativeAggregate = copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): ImperativeAggregate = copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(children: IndexedSeq[Expression]): ValuesAfter =
    copy(full = children(0), partial = children(1))
}

object ValuesAfter {
  val Name = "replicate_values_after"

  val info: ExpressionInfo = new ExpressionInfo(classOf[ValuesAfter].getName, null, Name,
    s"$Name(full, partial) OVER (...) - The value columns after a window frame's change events, " +
      "as the replay of spark_replicate's apply builds them (internal).", "", "", "", "", "", "", "")

  def build(arguments: Seq[Expression]): Expression = arguments match {
    case Seq(full, partial) => ValuesAfter(full, partial)
    case _ => throw new IllegalArgumentException(s"$Name takes an event's full and partial structs")
  }
}
