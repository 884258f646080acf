package io.sparkreplicate.files

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.Schema.Type
import org.apache.avro.io.{DatumReader, Decoder}

import io.sparkreplicate.{ErrorId, ReplicateException}
import io.sparkreplicate.codec.{AvroSchemas, AvroSkipper}

/**
 * Reads the records of an Avro container landing file straight into a reused [[LandingRecord]]:
 * the envelope bytes from `valueField` (or the whole datum when the file's schema is `bytes`),
 * and the Kafka-style coordinates `topic`, `partition`, `offset`, `timestamp`, `key` when present.
 * Any other field is skipped without being decoded.
 */
final class LandingRecordReader(valueField: String, path: String) extends DatumReader[LandingRecord] {
  private type Step = (Decoder, LandingRecord) => Unit
  private var steps: Array[Step] = Array.empty

  override def setSchema(schema: Schema): Unit = {
    steps = schema.getType match {
      case Type.BYTES => Array((in, r) => r.value = in.readBytes(r.value))
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
  }

  override def read(reuse: LandingRecord, in: Decoder): LandingRecord = {
    reuse.clear()
    var i = 0
    while (i < steps.length) { steps(i)(in, reuse); i += 1 }
    reuse
  }

  private def isBytes(schema: Schema): Boolean = AvroSchemas.unwrapNullable(schema).getType == Type.BYTES

  private def fieldStep(name: String, schema: Schema): Step = (name, schema.getType) match {
    case (`valueField`, Type.BYTES) => (in, r) => r.value = in.readBytes(r.value)
    case ("topic", Type.STRING) => (in, r) => { in.readString(r.topic); r.hasTopic = true }
    case ("partition", Type.INT) => (in, r) => { r.partition = in.readInt(); r.hasPartition = true }
    case ("offset", Type.LONG) => (in, r) => { r.offset = in.readLong(); r.hasOffset = true }
    case ("timestamp", Type.LONG) => (in, r) => { r.timestamp = in.readLong(); r.hasTimestamp = true }
    case ("key", Type.BYTES) => (in, r) => { r.key = in.readBytes(r.key); r.hasKey = true }
    case _ =>
      val skip = AvroSkipper(schema)
      (in, _) => skip(in)
  }

  /** Wraps a step so that a `[null, T]` field reads its branch first; a null value is noted. */
  private def nullable(name: String, schema: Schema, step: Step): Step =
    if (AvroSchemas.unwrapNullable(schema) eq schema) step
    else {
      val nullBranch = schema.getTypes.asScala.indexWhere(_.getType == Type.NULL)
      val isValue = name == valueField
      (in, r) => if (in.readIndex() != nullBranch) step(in, r) else if (isValue) r.valueIsNull = true
    }
}
