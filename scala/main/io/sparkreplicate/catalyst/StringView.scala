package io.sparkreplicate.catalyst

import java.lang.reflect.Modifier

import scala.util.Try

import org.apache.spark.unsafe.types.UTF8String

/**
 * One UTF8String pointed at value after value: what a [[StringSlot]] hands Spark's copy. Spark 4's
 * UTF8String caches what it works out about its bytes (characters, validity, ASCII) in volatile
 * fields, which its constructor writes: four memory fences for every string made, about 20 ns a
 * string that escapes (21.7 ns against 1.9 ns for a re-pointed one, a loop of 20 million on this
 * machine), and profile M holds about 22 strings a message. A view is re-pointed with plain stores
 * (one thread reads it) and its caches are put back to a new string's, so whatever Spark works
 * out about one value is not taken for the next.
 *
 * The fields are found once, by name; on a Spark whose UTF8String lacks them, or holds a field of
 * another kind, [[create]] gives null and the slot makes a new string per value.
 */
private[catalyst] object StringView {
  private val unsafe: sun.misc.Unsafe = {
    val field = classOf[sun.misc.Unsafe].getDeclaredField("theUnsafe")
    field.setAccessible(true)
    field.get(null).asInstanceOf[sun.misc.Unsafe]
  }

  /** Where a UTF8String keeps its bytes' location, and its caches with a new string's values. */
  private final class Fields(val base: Long, val offset: Long, val numBytes: Long,
      val intCaches: Array[Long], val intFresh: Array[Int], val objectCaches: Array[Long], val objectFresh: Array[AnyRef])

  private val fields: Option[Fields] = Try {
    val declared = classOf[UTF8String].getDeclaredFields.filterNot(f => Modifier.isStatic(f.getModifiers))
    def at(name: String) = unsafe.objectFieldOffset(declared.find(_.getName == name).get)
    val (ints, objects) = declared.filterNot(f => Set("base", "offset", "numBytes")(f.getName))
      .partition(_.getType == java.lang.Integer.TYPE)
    require(objects.forall(!_.getType.isPrimitive), "a cache of another primitive kind")
    val fresh = UTF8String.fromBytes(Array[Byte](0))
    val intAt = ints.map(unsafe.objectFieldOffset)
    val objectAt = objects.map(unsafe.objectFieldOffset)
    new Fields(at("base"), at("offset"), at("numBytes"), intAt, intAt.map(unsafe.getInt(fresh, _)), objectAt,
      objectAt.map(unsafe.getObject(fresh, _)))
  }.toOption

  /** A view to point with [[point]], or null where views cannot be had. */
  def create(): UTF8String = if (fields.isEmpty) null else UTF8String.fromBytes(Array.emptyByteArray)

  /**
   * `view`, pointed at `length` bytes of `array` at `offset` (an address: `Platform.BYTE_ARRAY_OFFSET`
   * included). A field is written only where it changes: a reference stored into a long-lived
   * object costs the garbage collector's write barrier, and the caches stay as they are unless
   * something asked for them.
   */
  def point(view: UTF8String, array: Array[Byte], offset: Long, length: Int): UTF8String = {
    val f = fields.get
    if (unsafe.getObject(view, f.base) ne array) unsafe.putObject(view, f.base, array)
    unsafe.putLong(view, f.offset, offset)
    unsafe.putInt(view, f.numBytes, length)
    var i = 0
    while (i < f.intCaches.length) {
      if (unsafe.getInt(view, f.intCaches(i)) != f.intFresh(i)) unsafe.putInt(view, f.intCaches(i), f.intFresh(i))
      i += 1
    }
    i = 0
    while (i < f.objectCaches.length) {
      if (unsafe.getObject(view, f.objectCaches(i)) ne f.objectFresh(i)) {
        unsafe.putObject(view, f.objectCaches(i), f.objectFresh(i))
      }
      i += 1
    }
    view
  }
}
