package io.sparkreplicate.catalyst

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type._

import io.sparkreplicate.codec.{AvroSchemas, AvroSkipper, SliceDecoder}

/**
 * A pushed filter's decision on the operation of one writer schema's messages, taken by peeking:
 * the fields before `headers` (the row images) and the headers before `operation` are skipped
 * without being materialised, and only the operation is read. Built once per writer schema; for
 * an enum the decision per symbol is taken here, once.
 *
 * `keeps` reads the payload only as far as the operation, so it throws a malformed-message
 * error for damage it meets on the way, and cannot see damage after it.
 */
final class OperationGate private (peek: SliceDecoder => Boolean) {
  def keeps(in: SliceDecoder): Boolean = peek(in)
}

object OperationGate {

  /**
   * None when the operation is neither an enum nor a string (nor absent, which reads as null):
   * then only the full decode can tell, and the converter refuses such a schema anyway.
   */
  def build(writer: Schema, decision: VersionDecision.ByOperation): Option[OperationGate] = {
    val keepsNull = decision.keeps(null)
    skipUpTo(writer, "headers") match {
      case None => Some(new OperationGate(_ => keepsNull))
      case Some((skipBefore, headers)) => headersPeek(headers, decision, keepsNull).map { peek =>
        new OperationGate(in => { skipBefore(in); peek(in) })
      }
    }
  }

  /** `headers` (a record, or `[null, record]` read as the converter reads it) up to its operation. */
  private def headersPeek(schema: Schema, decision: VersionDecision.ByOperation,
      keepsNull: Boolean): Option[SliceDecoder => Boolean] = {
    val headers = AvroSchemas.unwrapNullable(schema)
    if (headers.getType != RECORD) None
    else {
      val peek: Option[SliceDecoder => Boolean] = skipUpTo(headers, "operation") match {
        case None => Some(_ => keepsNull)
        case Some((skipHeaders, operationSchema)) => operation(operationSchema, decision, keepsNull)
          .map(read => in => { skipHeaders(in); read(in) })
      }
      peek.map(orNull(schema, "headers", keepsNull))
    }
  }

  /** The step skipping the record's fields before `name`, and that field's schema. */
  private def skipUpTo(record: Schema, name: String): Option[(AvroSkipper.Skip, Schema)] = {
    val fields = record.getFields.asScala
    val at = fields.indexWhere(_.name == name)
    if (at < 0) None
    else {
      val skips = fields.take(at).map(f => AvroSkipper(f.schema)).toArray
      Some((in => { var i = 0; while (i < skips.length) { skips(i)(in); i += 1 } }, fields(at).schema))
    }
  }

  private def operation(schema: Schema, decision: VersionDecision.ByOperation,
      keepsNull: Boolean): Option[SliceDecoder => Boolean] = {
    val value = AvroSchemas.unwrapNullable(schema)
    val read: Option[SliceDecoder => Boolean] = value.getType match {
      case ENUM =>
        val keeps = value.getEnumSymbols.asScala.map(decision.keeps).toArray
        Some(in => keeps(ValueWriters.enumIndex(in, keeps.length, "operation")))
      // The row's value is this string as sent; readString refuses invalid UTF-8, as the row would.
      case STRING => Some(in => decision.keeps(in.readString()))
      case _ => None
    }
    read.map(orNull(schema, "operation", keepsNull))
  }

  /** `read` for the value of `[null, T]` (or of a plain `T`); a null decides `keepsNull`. */
  private def orNull(schema: Schema, name: String, keepsNull: Boolean)(read: SliceDecoder => Boolean): SliceDecoder => Boolean = {
    var kept = false
    val step = ValueWriters.nullableUnion(schema, name)(() => kept = keepsNull, in => kept = read(in))
    in => { step(in); kept }
  }
}
