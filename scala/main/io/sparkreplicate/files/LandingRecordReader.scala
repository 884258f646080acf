package io.sparkreplicate.files

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, AvroSkipper, DecodeStep, SliceDecoder}

/**
 * Reads one record of an Avro container landing file into `r`, reused for every record: where the
 * envelope bytes are (field `valueField`, or the whole datum when the file's schema is `bytes`),
 * and the Kafka-style coordinates `topic`, `partition`, `offset`, `timestamp`, `key` when present.
 * Any other field is skipped. The steps are built once per file schema.
 */
final class LandingRecordReader(schema: Schema, valueField: String, path: String, r: LandingRecord) {
  private val readValue: DecodeStep = in => {
    r.valueLength = in.readLength()
    r.valueOffset = in.arrayOffset
    in.skipFixed(r.valueLength)
  }

  private val steps: Array[DecodeStep] = schema.getType match {
    case Type.BYTES => Array(readValue)
    case Type.RECORD =>
      val fields = schema.getFields.asScala
      if (!fields.exists(f => f.name == valueField && isBytes(f.schema))) {
        throw new ReplicateException(ErrorId.InvalidOption, s"the records of `$path` have no " +
          s"bytes field `$valueField` (fields: ${fields.map(_.name).mkString(", ")}); set the " +
          "option `valueField` to the field that holds the Replicate message")
      }
      fields.map(f => nullable(f.name, f.schema, fieldStep(f.name, AvroSchemas.unwrapNullable(f.schema)))).toArray
    case other => throw new ReplicateException(ErrorId.InvalidOption, s"`$path` is an Avro " +
      s"container of $other values; expected `bytes` or a record with a bytes field `$valueField`")
  }

  def read(in: SliceDecoder): Unit = {
    r.clear()
    var i = 0
    while (i < steps.length) { steps(i)(in); i += 1 }
  }

  private def isBytes(s: Schema): Boolean = AvroSchemas.unwrapNullable(s).getType == Type.BYTES

  private def fieldStep(name: String, s: Schema): DecodeStep = (name, s.getType) match {
    case (`valueField`, Type.BYTES) => readValue
    case ("topic", Type.STRING) => in => {
      r.topicLength = in.readLength(); r.topicOffset = in.arrayOffset; in.skipFixed(r.topicLength)
    }
    case ("partition", Type.INT) => in => { r.partition = in.readInt(); r.hasPartition = true }
    case ("offset", Type.LONG) => in => { r.offset = in.readLong(); r.hasOffset = true }
    case ("timestamp", Type.LONG) => in => { r.timestamp = in.readLong(); r.hasTimestamp = true }
    case ("key", Type.BYTES | Type.STRING) => in => {
      r.keyLength = in.readLength(); r.keyOffset = in.arrayOffset; in.skipFixed(r.keyLength)
    }
    case _ => AvroSkipper(s)
  }

  /** Wraps a step so that a `[null, T]` field reads its branch first; a null value is noted. */
  private def nullable(name: String, s: Schema, step: DecodeStep): DecodeStep =
    if (AvroSchemas.unwrapNullable(s) eq s) step
    else {
      val nullBranch = s.getTypes.asScala.indexWhere(_.getType == Type.NULL)
      val isValue = name == valueField
      in => if (in.readIndex() != nullBranch) step(in) else if (isValue) r.valueIsNull = true
    }
}
