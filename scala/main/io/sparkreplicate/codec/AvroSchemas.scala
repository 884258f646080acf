package io.sparkreplicate.codec

import java.util.concurrent.ConcurrentHashMap

import org.apache.avro.{Schema, SchemaParseException}

import io.sparkreplicate.{ErrorId, MalformedMessageException}

/**
 * Parses Avro schema JSON, once per distinct text per JVM: self-describing messages repeat the
 * same schema text in every envelope, and parsing it each time would dominate the decode.
 */
object AvroSchemas {
  private val MaxCached = 4096
  private val cache = new ConcurrentHashMap[String, Schema]()

  def parse(json: String): Schema = {
    val cached = cache.get(json)
    if (cached != null) cached
    else {
      val parsed = try {
        new Schema.Parser().setValidateDefaults(false).parse(json)
      } catch {
        case e @ (_: SchemaParseException | _: RuntimeException) =>
          throw new MalformedMessageException(ErrorId.BadEmbeddedSchema,
            s"embedded Avro schema does not parse: ${e.getMessage}", e)
      }
      if (cache.size < MaxCached) cache.put(json, parsed)
      parsed
    }
  }

  /** `[null, T]` or `[T, null]` → T; any other schema unchanged. */
  def unwrapNullable(schema: Schema): Schema =
    if (schema.getType == Schema.Type.UNION && schema.getTypes.size == 2) {
      val branches = schema.getTypes
      if (branches.get(0).getType == Schema.Type.NULL) branches.get(1)
      else if (branches.get(1).getType == Schema.Type.NULL) branches.get(0)
      else schema
    } else schema
}
