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
 * @param decoding the decoder and its last value, shared by every copy of this call (see [[Decoding]])
 */
final case class ReplicateDecode(child: Expression, spec: RowSpec, decoding: Decoding = new Decoding)
    extends UnaryExpression with ExpectsInputTypes {
  override def inputTypes = Seq(BinaryType)
  override def dataType: DataType = spec.required
  override def nullable: Boolean = true
  override def prettyName: String = FromReplicate.Name

  /** Plans show the call, not the whole decoding spec. */
  override protected def stringArgs: Iterator[Any] = Iterator(child)

  @transient private lazy val where = s"a value of ${child.sql}"

  override def nullSafeEval(input: Any): Any = decoding(input.asInstanceOf[Array[Byte]], this)

  private[sql] def decode(decoder: RowDecoder, bytes: Array[Byte]): Any =
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

/**
 * The decoder of one `from_replicate` call in one task, and the last value it decoded with that
 * value's struct. Spark evaluates a call twice per row when a filter on its result is pushed below
 * the projection that makes it (`where("r IS NOT NULL")` under `select("r.*")`, the usual way to
 * drop the null rows), each time through its own copy of the expression: binding the filter and
 * the projection to their inputs copies it. Copies keep this holder (a case class copy passes it
 * on), and a task deserializes them together, so they find each other's struct here and a message
 * is decoded once. Only identity is compared: the struct's strings point into the value, so a
 * value must not change while its struct is read, whatever is cached.
 *
 * The struct is the decoder's own row, reused for the next value, as `from_avro` does: Spark
 * copies a value it keeps (into an UnsafeRow, or by `InternalRow.copyValue` where it buffers one).
 * Not part of the call's meaning: any two holders are equal, so plans compare as before.
 */
final class Decoding extends Serializable {
  @transient private var rowDecoder: RowDecoder = _
  @transient private var lastValue: Array[Byte] = _
  @transient private var lastStruct: Any = _

  /** The struct of `bytes`, decoded by `call` unless it is the last value decoded. */
  def apply(bytes: Array[Byte], call: ReplicateDecode): Any = {
    if (bytes ne lastValue) {
      lastValue = null // until decoded: a value that fails is not taken for the last one
      // An expression has no metrics to report the waits for late metadata in.
      if (rowDecoder == null) rowDecoder = RowDecoder(call.spec, new ReadCounters)
      lastStruct = call.decode(rowDecoder, bytes)
      lastValue = bytes
    }
    lastStruct
  }

  override def equals(other: Any): Boolean = other.isInstanceOf[Decoding]
  override def hashCode: Int = 0
}
