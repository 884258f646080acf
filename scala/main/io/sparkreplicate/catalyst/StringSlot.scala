package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{MutableValue, SpecificInternalRow}
import org.apache.spark.sql.types.{DataType, StringType}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import io.sparkreplicate.codec.SliceDecoder

/**
 * A string slot of the reader's row that holds where the string's bytes lie rather than a
 * UTF8String: decoding a string sets three fields and allocates nothing. Reading the row, which
 * Spark does once per row as it copies it into an UnsafeRow (the projection above every row-based
 * scan, and above its filters), gets the slot's one [[StringView]] pointed at the bytes, not a new
 * UTF8String. The bytes are the message's own, valid until the next message, as every value of the
 * reused row is; so is the view, which the next message moves: what keeps a value copies the row
 * ([[copy]] makes a string of its own), or takes the slot's place ([[assign]]).
 *
 * The slot keeps the decoder, not its array, which the row is read from: a reference stored into
 * this long-lived object costs the garbage collector's write barrier (6% of the decoder's time
 * when every string stored a new UTF8String). Where each message comes in an array of its own (a
 * binary column: `from_replicate` gets a new array per row), storing it in every string's slot
 * took 705 ns a message against 673 ns (DecoderBench's `connector_own_arrays`, median of 12 passes
 * taking turns).
 */
private[catalyst] final class StringSlot extends MutableValue {
  /** The decoder whose array holds the bytes: the same one message after message. */
  private var source: SliceDecoder = _
  private var offset = 0L
  private var length = 0
  /** A UTF8String written whole (an enum symbol, the schema id): handed out as it is, not made again. */
  private var whole: UTF8String = _
  /** What reading the slot returns, pointed at its bytes (null: a new UTF8String each time). */
  private val view: UTF8String = StringView.create()

  /** The bytes at `at` in the array `in` reads now. */
  def set(in: SliceDecoder, at: Int, n: Int): Unit = setAddress(in, Platform.BYTE_ARRAY_OFFSET + at.toLong, n)

  private def setAddress(in: SliceDecoder, address: Long, n: Int): Unit = {
    if (source ne in) source = in
    if (whole ne null) whole = null
    offset = address
    length = n
    isNull = false
  }

  override def boxed: Any =
    if (isNull) null else if (whole ne null) whole
    else if (view ne null) StringView.point(view, source.array, offset, length)
    else ownString

  /** A UTF8String of its own where the bytes lie. */
  private def ownString: UTF8String = UTF8String.fromAddress(source.array, offset, length)

  /** `other`'s value, where it lies: not its view, which its next message moves. */
  def assign(other: StringSlot): Unit =
    if (other.isNull) isNull = true
    else if (other.whole ne null) update(other.whole)
    else setAddress(other.source, other.offset, other.length)

  override def update(v: Any): Unit = {
    val s = v.asInstanceOf[UTF8String]
    if (whole ne s) whole = s
    isNull = false
  }

  /**
   * A slot holding the string where it lies now (which the decoder's next message does not move)
   * as a UTF8String of its own.
   */
  override def copy(): StringSlot = {
    val c = new StringSlot
    if (!isNull) c.update(if (whole ne null) whole else ownString)
    c
  }
}

private[catalyst] object StringSlot {
  /** A reused row of `types`, with a [[StringSlot]] for each string. */
  def row(types: Seq[DataType]): SpecificInternalRow = {
    val values = new SpecificInternalRow(types).values
    types.indices.foreach(i => if (types(i).isInstanceOf[StringType]) values(i) = new StringSlot)
    new SpecificInternalRow(values)
  }

  /** The slot `ordinal` of a row made by [[row]], which must be a string. */
  def of(row: InternalRow, ordinal: Int): StringSlot = row match {
    case r: SpecificInternalRow => r.values(ordinal) match {
      case slot: StringSlot => slot
      case other => throw new IllegalStateException(s"slot $ordinal holds ${other.getClass.getSimpleName}, not a string")
    }
    case other => throw new IllegalStateException(s"${other.getClass.getSimpleName} is not a reader row")
  }
}
