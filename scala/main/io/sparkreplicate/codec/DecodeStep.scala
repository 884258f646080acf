package io.sparkreplicate.codec

/**
 * One step of a decoder built once per Avro schema: reads one value (or skips it) from the
 * decoder. Readers chain many different steps, so the calls to `apply` are megamorphic; an
 * abstract class makes each a virtual call through the class's vtable, which costs less than a
 * Function1's interface dispatch. Lambdas convert to it as to a function.
 */
abstract class DecodeStep {
  def apply(in: SliceDecoder): Unit
}
