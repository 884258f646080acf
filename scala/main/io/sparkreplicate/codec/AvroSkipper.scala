package io.sparkreplicate.codec

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type._

import io.sparkreplicate.{ErrorId, ReplicateException}

/**
 * Skips one Avro value of a given schema without materialising it: used for fields nobody
 * selected (a pruned before-image, unknown header fields, landing-record fields we do not use).
 * Built once per schema, so no type dispatch happens per value.
 */
object AvroSkipper {
  type Skip = DecodeStep

  def apply(schema: Schema): Skip = build(schema, Set.empty)

  private def build(schema: Schema, enclosing: Set[String]): Skip = schema.getType match {
    case NULL => _ => ()
    case BOOLEAN => _.readBoolean()
    case INT => _.readInt()
    case LONG => _.readLong()
    case FLOAT => _.readFloat()
    case DOUBLE => _.readDouble()
    case STRING => _.skipString()
    case BYTES => _.skipBytes()
    case ENUM => _.readEnum()
    case FIXED => val size = schema.getFixedSize; _.skipFixed(size)
    case ARRAY =>
      val item = build(schema.getElementType, enclosing)
      in => { var n = in.skipArray(); while (n > 0) { var i = 0L; while (i < n) { item(in); i += 1 }; n = in.skipArray() } }
    case MAP =>
      val value = build(schema.getValueType, enclosing)
      in => { var n = in.skipMap(); while (n > 0) { var i = 0L; while (i < n) { in.skipString(); value(in); i += 1 }; n = in.skipMap() } }
    case UNION =>
      val branches = schema.getTypes.asScala.map(build(_, enclosing)).toArray
      in => {
        val index = in.readIndex()
        if (index < 0 || index >= branches.length) throw new io.sparkreplicate.MalformedMessageException(
          ErrorId.BadPayload, s"union branch $index out of range")
        branches(index)(in)
      }
    case RECORD =>
      if (enclosing.contains(schema.getFullName)) throw new ReplicateException(ErrorId.UnsupportedType,
        s"recursive Avro record `${schema.getFullName}` is not supported")
      val fields = schema.getFields.asScala.map(f => build(f.schema, enclosing + schema.getFullName)).toArray
      in => { var i = 0; while (i < fields.length) { fields(i)(in); i += 1 } }
  }
}
