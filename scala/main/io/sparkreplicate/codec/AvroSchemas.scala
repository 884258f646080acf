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
        case e @ (_: SchemaParseException | _: RuntimeException | _: StackOverflowError) =>
          throw new MalformedMessageException(ErrorId.BadEmbeddedSchema,
            s"embedded Avro schema does not parse: ${e.getMessage}", e)
      }
      if (cache.size < MaxCached) cache.put(json, parsed)
      parsed
    }
  }

  /**
   * A schema carried inside a message (`messageSchema`): untrusted input, so its size and JSON
   * nesting are capped before parsing and a record that contains itself is refused, all as
   * malformed messages.
   */
  def parseEmbedded(json: String, maxBytes: Int, maxDepth: Int): Schema = {
    if (json.length > maxBytes) throw new MalformedMessageException(ErrorId.BadEmbeddedSchema,
      s"embedded schema of ${json.length} characters exceeds `maxEmbeddedSchemaBytes` ($maxBytes)")
    val depth = jsonDepth(json)
    if (depth > maxDepth) throw new MalformedMessageException(ErrorId.BadEmbeddedSchema,
      s"embedded schema nests $depth levels deep, more than `maxSchemaDepth` ($maxDepth)")
    val schema = parse(json)
    rejectRecursion(schema, Nil)
    schema
  }

  /** Deepest nesting of JSON objects and arrays, outside string literals. */
  private def jsonDepth(json: String): Int = {
    var depth = 0
    var deepest = 0
    var inString = false
    var i = 0
    while (i < json.length) {
      val c = json.charAt(i)
      if (inString) {
        if (c == '\\') i += 1 else if (c == '"') inString = false
      } else c match {
        case '"' => inString = true
        case '{' | '[' => depth += 1; deepest = math.max(deepest, depth)
        case '}' | ']' => depth -= 1
        case _ =>
      }
      i += 1
    }
    deepest
  }

  private def rejectRecursion(schema: Schema, enclosing: List[String]): Unit = schema.getType match {
    case Schema.Type.RECORD =>
      if (enclosing.contains(schema.getFullName)) throw new MalformedMessageException(
        ErrorId.BadEmbeddedSchema, s"embedded schema is recursive: record `${schema.getFullName}` contains itself")
      schema.getFields.forEach(f => rejectRecursion(f.schema, schema.getFullName :: enclosing))
    case Schema.Type.UNION => schema.getTypes.forEach(rejectRecursion(_, enclosing))
    case Schema.Type.ARRAY => rejectRecursion(schema.getElementType, enclosing)
    case Schema.Type.MAP => rejectRecursion(schema.getValueType, enclosing)
    case _ =>
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
