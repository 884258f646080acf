package io.sparkreplicate.catalyst

import java.lang.reflect.Modifier

import org.apache.spark.sql.catalyst.expressions.{MutableInt, MutableLong, MutableValue}

import io.sparkreplicate.codec.{DecodeStep, SliceDecoder}

/**
 * How [[StepChain]]'s compiled method decodes one step of a record, as Java: the shape of the step,
 * not its values, which the compiled class reads from the step (`s<i>`) and its slot (`v<i>`,
 * the [[MutableValue]] it writes). The method keeps the read position in the local `pos` (the
 * array in `buf`, the slice's end in `end`); whatever it does not read itself is left to the step,
 * with the decoder moved to `pos` before and `pos` taken back after, so that every unusual case
 * and every error is the step's own.
 */
private[catalyst] sealed abstract class StepCode {
  /** The class the compiled code names the step by: its own when it can, else a base class. */
  def stepClass: Class[_]
  /** The class of its slot, or null when the code does not write the slot itself. */
  def slotClass: Class[_]
  /** The Java statements that decode step `i`. */
  def code(i: Int): String
}

private[catalyst] object StepCode {
  def of(step: DecodeStep): StepCode = step match {
    case c: ColumnStep if c.target != null => Column(nameable(c, classOf[ColumnStep]), c.nullIndex, valueOf(c, c.target))
    case other => Call(nameable(other, classOf[DecodeStep]))
  }

  /** Moves the decoder to `pos`, runs `call`, and takes its position back. */
  private def handOver(call: String) = s"in.seek(pos); $call; pos = in.arrayOffset();"

  /** Any step: called. */
  final case class Call(stepClass: Class[_]) extends StepCode {
    def slotClass: Class[_] = null
    def code(i: Int): String = handOver(s"s$i.apply(in)")
  }

  /**
   * A column: its union branch read inline (the one-byte varints 0 and 2), then its value. Any
   * other branch (out of range, or not in one byte) goes to the step, which reads it again.
   */
  final case class Column(stepClass: Class[_], nullIndex: Int, value: ValueCode) extends StepCode {
    def slotClass: Class[_] = value.slotClass
    def code(i: Int): String = {
      val read = s"f$i: { ${value.code(i)} }"
      if (nullIndex < 0) read
      else {
        // Zigzag varints: branch b is the byte 2b.
        val valueByte = 2 * (1 - nullIndex)
        val nullByte = 2 * nullIndex
        s"""{ int branch = pos < end ? (int) buf[pos] : -1;
           |  if (branch == $valueByte) { pos++; $read }
           |  else if (branch == $nullByte) { pos++; v$i.isNull_$$eq(true); }
           |  else { ${handOver(s"s$i.apply(in)")} } }""".stripMargin
      }
    }
  }

  /** How a column's value is read, after its branch; `break f<i>` ends it. */
  sealed abstract class ValueCode {
    def slotClass: Class[_] = classOf[MutableValue]
    def code(i: Int): String
  }

  private def valueOf(step: ColumnStep, slot: MutableValue): ValueCode = (step, slot) match {
    case (_: ColumnStep.IntValue, _: MutableInt) => Varint(int = true, classOf[MutableInt])
    case (_: ColumnStep.IntAsLong, _: MutableLong) => Varint(int = true, classOf[MutableLong])
    case (_: ColumnStep.LongValue, _: MutableLong) => Varint(int = false, classOf[MutableLong])
    case (_: ColumnStep.Utf8Value, _: StringSlot) => Utf8(emptyAsNull = false)
    case (_: ColumnStep.EmptyAsNull, _: StringSlot) => Utf8(emptyAsNull = true)
    case _ => ReadValue
  }

  private val Decoder = classOf[SliceDecoder].getName

  /**
   * The varint at `pos` into the local `x`, and `pos` past it: a byte without its continuation bit
   * read here, a longer one packed (see [[SliceDecoder.packedVarint]]). A varint the packed read
   * leaves, or a value `valid` refuses, goes to the step's own read from the value's start, `at`.
   */
  private def varint(i: Int, valid: String): String =
    s"""int at = pos;
       |long x;
       |int first = pos < end ? (int) buf[pos] : -1;
       |if (first >= 0) { x = (first >>> 1) ^ -(first & 1); pos++; }
       |else {
       |  long packed = $Decoder.packedVarint(buf, pos, end);
       |  if (packed == 0L) { ${handOver(s"s$i.readValue(in)")} break f$i; }
       |  x = $Decoder.varintValue(packed);
       |  pos += $Decoder.varintBytes(packed);
       |}
       |if (!($valid)) { pos = at; ${handOver(s"s$i.readValue(in)")} break f$i; }""".stripMargin

  /** An int (`int`: one out of its range is left to the step, which reports it) or a long, into its slot. */
  final case class Varint(int: Boolean, override val slotClass: Class[_]) extends ValueCode {
    def code(i: Int): String = {
      val value = if (slotClass == classOf[MutableInt]) "(int) x" else "x"
      s"""${varint(i, if (int) "(int) x == x" else "true")}
         |v$i.value_$$eq($value);
         |v$i.isNull_$$eq(false);""".stripMargin
    }
  }

  /** A string's bytes, validated where they lie, into its [[StringSlot]]; maybe an empty one as null. */
  final case class Utf8(emptyAsNull: Boolean) extends ValueCode {
    override def slotClass: Class[_] = classOf[StringSlot]
    def code(i: Int): String = {
      val set = s"v$i.set(in, pos, n); pos += n;"
      s"""${varint(i, s"x >= 0 && x <= end - pos && in.isUtf8(pos, (int) x)")}
         |int n = (int) x;
         |${if (emptyAsNull) s"if (n == 0) v$i.isNull_$$eq(true); else { $set }" else set}""".stripMargin
    }
  }

  /** Any other value: the step reads it. */
  case object ReadValue extends ValueCode {
    def code(i: Int): String = handOver(s"s$i.readValue(in)")
  }

  /**
   * The step's class when the compiled code can name it (public, final, and found by name from
   * this loader: not a hidden class, nor a chain compiled by another loader); else `base`.
   */
  private def nameable(step: DecodeStep, base: Class[_]): Class[_] = {
    val c = step.getClass
    val named = Modifier.isPublic(c.getModifiers) && Modifier.isFinal(c.getModifiers) && !c.isHidden &&
      (try Class.forName(c.getName, false, Loader) eq c catch { case _: ClassNotFoundException => false })
    if (named) c else base
  }

  private[catalyst] val Loader = classOf[DecodeStep].getClassLoader
}
