package io.sparkreplicate.sql

import org.apache.spark.sql.catalyst.expressions.{ExpectsInputTypes, Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode}
import org.apache.spark.sql.types.{BinaryType, DataType}

import io.sparkreplicate.{MalformedMessageException, ParseMode, ReplicateException}
import io.sparkreplicate.catalyst.{Outcome, ReadCounters, RowDecoder, RowSpec}

/**
 * `from_replicate(value, options)`: one Replicate message in a binary column becomes a struct of
 * the reader's columns for the same options, decoded by the reader's own decoder. A metadata
 * message, or a data message of a table not read, gives null. A malformed message fails the
 * query (FAILFAST) or gives a struct whose corrupt-record field holds the bytes and the reason
 * (PERMISSIVE); it is never dropped, as an expression cannot drop its row.
 *
 * @param spec decided on the driver when the function is resolved: the metadata is read then
 */
final case class ReplicateDecode(child: Expression, spec: RowSpec) extends UnaryExpression with ExpectsInputTypes {
  override def inputTypes = Seq(BinaryType)
  override def dataType: DataType = spec.required
  override def nullable: Boolean = true
  override def prettyName: String = FromReplicate.Name

  /** Plans show the call, not the whole decoding spec. */
  override protected def stringArgs: Iterator[Any] = Iterator(child)

  /** One per task: each task deserializes its own copy of the expression. */
  // An expression has no metrics to report the waits for late metadata in.
  @transient private lazy val decoder = RowDecoder(spec, new ReadCounters)
  @transient private lazy val where = s"a value of ${child.sql}"
  /**
   * The last value decoded and its struct. Spark evaluates the call twice per row when a filter on
   * its result is pushed below the projection that makes it (`where("r IS NOT NULL")` under
   * `select("r.*")`, the usual way to drop the null rows); both read the same array, so the second
   * call costs nothing. Only identity is compared: the struct's strings point into the value, so a
   * value must not change while its struct is read, whatever is cached.
   */
  @transient private var lastValue: Array[Byte] = _
  @transient private var lastStruct: Any = _

  /**
   * The struct is the decoder's own row, reused for the next value, as `from_avro` does: Spark
   * copies a value it keeps (into an UnsafeRow, or by `InternalRow.copyValue` where it buffers one).
   */
  override def nullSafeEval(input: Any): Any = {
    val bytes = input.asInstanceOf[Array[Byte]]
    if (bytes ne lastValue) {
      lastValue = null // until decoded: a value that fails is not taken for the last one
      lastStruct = decode(bytes)
      lastValue = bytes
    }
    lastStruct
  }

  private def decode(bytes: Array[Byte]): Any =
    try decoder.decode(bytes, 0, bytes.length) match {
      case Outcome.Row => decoder.row
      case Outcome.Metadata | Outcome.Filtered => null
    } catch {
      case e: MalformedMessageException if spec.options.mode == ParseMode.Permissive =>
        decoder.corruptRow(bytes, 0, bytes.length, e, where)
      case e: MalformedMessageException => throw spec.options.redaction(new ReplicateException(e.errorId,
        s"malformed message in $where: ${e.detail}. Set the option `mode` to PERMISSIVE to keep " +
          s"malformed messages as structs whose `${spec.options.columnNameOfCorruptRecord}` field holds " +
          "the bytes and the reason", e))
    }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val self = ctx.addReferenceObj("fromReplicate", this)
    nullSafeCodeGen(ctx, ev, value => {
      val row = ctx.freshName("row")
      val javaType = CodeGenerator.javaType(dataType)
      s"""
         |$javaType $row = ($javaType) $self.nullSafeEval($value);
         |if ($row == null) { ${ev.isNull} = true; } else { ${ev.value} = $row; }
         |""".stripMargin
    })
  }

  override protected def withNewChildInternal(newChild: Expression): ReplicateDecode = copy(child = newChild)
}
