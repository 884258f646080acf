package io.sparkreplicate.cdc

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.sql.catalyst.expressions.{ExpectsInputTypes, Expression, ExpressionInfo, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{ArrayType, BinaryType, DataType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * `replicate_names_mask(names, 'n0', 'n1', ...)`: a BIGINT whose bit `j` is set when the array
 * `names` holds the constant `nj` (at most 64 of them); null when the array is null. The changes'
 * events take a mask's columns (`header__present_columns`) as bits with it, one call per 64 value
 * columns. An `array_contains` per column did the same, but its generated loop, once per column,
 * made the code of the events' projection too long for whole-stage code generation (12.8 KB
 * against the 8,000 bytes the JIT compiles, on a table of 30 columns), and outside it the
 * projection of the benchmark's 2,000,000 changes took 3.1 s against 2.7 s.
 */
final case class NamesMask(child: Expression, names: Seq[String]) extends UnaryExpression with ExpectsInputTypes {
  require(names.size <= 64, s"${NamesMask.Name} takes at most 64 names, one per bit")

  override def inputTypes = Seq(ArrayType(StringType))
  override def dataType: DataType = LongType
  override def nullable: Boolean = true
  override def prettyName: String = NamesMask.Name

  @transient private lazy val bitOf: java.util.HashMap[UTF8String, java.lang.Long] = {
    val map = new java.util.HashMap[UTF8String, java.lang.Long]()
    names.zipWithIndex.foreach { case (n, j) => map.put(UTF8String.fromString(n), 1L << j) }
    map
  }

  /** The bits of the names `array` holds. */
  def bits(array: ArrayData): Long = {
    var bits = 0L
    var i = 0
    while (i < array.numElements()) {
      if (!array.isNullAt(i)) {
        val bit = bitOf.get(array.getUTF8String(i))
        if (bit != null) bits |= bit
      }
      i += 1
    }
    bits
  }

  override def nullSafeEval(input: Any): Any = bits(input.asInstanceOf[ArrayData])

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val self = ctx.addReferenceObj("namesMask", this)
    defineCodeGen(ctx, ev, array => s"$self.bits($array)")
  }

  override protected def withNewChildInternal(newChild: Expression): NamesMask = copy(child = newChild)
}

object NamesMask {
  val Name = "replicate_names_mask"

  val info: ExpressionInfo = new ExpressionInfo(classOf[NamesMask].getName, null, Name,
    s"$Name(names, n0, n1, ...) - A BIGINT with bit j set when the array of strings names holds the " +
      "constant nj (at most 64); null when names is null (internal: the changes' replay).", "", "", "", "", "", "",
    "")

  /**
   * The names are constant strings, or constant binaries holding their UTF-8 bytes: a binary
   * literal (`X'...'`) means the same whatever the session's settings, where how a quoted string's
   * backslashes read depends on `spark.sql.parser.escapedStringLiterals`.
   */
  def build(arguments: Seq[Expression]): Expression = arguments match {
    case array +: names if names.size <= 64 && names.forall(constantName(_).isDefined) =>
      NamesMask(array, names.flatMap(constantName))
    case _ => throw new IllegalArgumentException(s"$Name takes an array of strings and at most 64 constant " +
      s"names (strings, or binaries of their UTF-8 bytes), not ${arguments.map(_.sql).mkString(", ")}")
  }

  private def constantName(name: Expression): Option[String] = (name.dataType, name.foldable) match {
    case (_: StringType, true) => Option(name.eval()).map(_.toString)
    case (BinaryType, true) => Option(name.eval()).map(b => new String(b.asInstanceOf[Array[Byte]], UTF_8))
    case _ => None
  }
}
