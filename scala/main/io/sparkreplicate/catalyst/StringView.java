package io.sparkreplicate.catalyst;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.unsafe.types.UTF8String;

/**
 * One UTF8String pointed at value after value: what a {@link StringSlot} hands Spark's copy. Spark
 * 4's UTF8String caches what it works out about its bytes (characters, validity, ASCII) in volatile
 * fields, which its constructor writes: four memory fences for every string made, about 20 ns a
 * string that escapes (21.7 ns against 1.9 ns for a re-pointed one, a loop of 20 million on this
 * machine), and profile M holds about 22 strings a message. A view is re-pointed with plain stores
 * (one thread reads it) and its caches are put back to a new string's, so whatever Spark works out
 * about one value is not taken for the next.
 *
 * <p>Java, not Scala, for one reason: the JIT folds a {@code static final} VarHandle into a plain
 * access at a fixed offset, and Scala has no static finals. Re-pointing through offsets held in an
 * object's fields, looping over the caches, took 6.7 ns a string against 1.4 ns with constants (a
 * loop of 44 million on this machine), and was 13% of the connector's CPU samples on profile M.
 *
 * <p>The fields are UTF8String's private ones, found by name when this class loads. A Spark whose
 * UTF8String has any other instance field, or these of other types, gets no views ({@link #create}
 * gives null and the slot makes a new string per value): a cache this class did not put back
 * would carry one value's answer to the next.
 */
final class StringView {
  private StringView() {}

  /** The instance fields of UTF8String this class knows, and their types. */
  private static final Map<String, Class<?>> KNOWN = Map.of(
      "base", Object.class, "offset", long.class, "numBytes", int.class, "numChars", int.class,
      "numBytesValid", int.class, "isValid", Object.class, "isFullAscii", Object.class);

  private static final boolean SUPPORTED = knownLayout();
  private static final VarHandle BASE = handle("base");
  private static final VarHandle OFFSET = handle("offset");
  private static final VarHandle NUM_BYTES = handle("numBytes");
  private static final VarHandle NUM_CHARS = handle("numChars");
  private static final VarHandle NUM_BYTES_VALID = handle("numBytesValid");
  private static final VarHandle IS_VALID = handle("isValid");
  private static final VarHandle IS_FULL_ASCII = handle("isFullAscii");

  /** A new string's caches, which a view gets back before each value. */
  private static final UTF8String FRESH = UTF8String.fromBytes(new byte[] {0});
  private static final int FRESH_NUM_CHARS = SUPPORTED ? (int) NUM_CHARS.get(FRESH) : 0;
  private static final int FRESH_NUM_BYTES_VALID = SUPPORTED ? (int) NUM_BYTES_VALID.get(FRESH) : 0;
  private static final Object FRESH_IS_VALID = SUPPORTED ? (Object) IS_VALID.get(FRESH) : null;
  private static final Object FRESH_IS_FULL_ASCII = SUPPORTED ? (Object) IS_FULL_ASCII.get(FRESH) : null;

  private static boolean knownLayout() {
    Map<String, Class<?>> declared = new HashMap<>();
    for (Field f : UTF8String.class.getDeclaredFields()) {
      // An enum cache's type is UTF8String's own nested enum: known by name, taken as an Object.
      if (!Modifier.isStatic(f.getModifiers())) declared.put(f.getName(), f.getType().isPrimitive() ? f.getType() : Object.class);
    }
    return declared.equals(KNOWN);
  }

  private static VarHandle handle(String name) {
    if (!SUPPORTED) return null;
    try {
      Class<?> declared = UTF8String.class.getDeclaredField(name).getType();
      return MethodHandles.privateLookupIn(UTF8String.class, MethodHandles.lookup())
          .findVarHandle(UTF8String.class, name, declared);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("UTF8String." + name + " is in its layout but cannot be reached", e);
    }
  }

  /** A view to point with {@link #point}, or null where views cannot be had. */
  static UTF8String create() {
    return SUPPORTED ? UTF8String.fromBytes(new byte[0]) : null;
  }

  /**
   * {@code view}, pointed at {@code length} bytes of {@code array} at {@code offset} (an address:
   * {@code Platform.BYTE_ARRAY_OFFSET} included). VarHandle's {@code get} and {@code set} are plain
   * accesses, volatile fields or not. A field is written only where it changes: a reference stored
   * into a long-lived object costs the garbage collector's write barrier, and the caches stay as
   * they are unless something asked for them.
   */
  static UTF8String point(UTF8String view, byte[] array, long offset, int length) {
    if ((Object) BASE.get(view) != array) BASE.set(view, (Object) array);
    OFFSET.set(view, offset);
    NUM_BYTES.set(view, length);
    if ((int) NUM_CHARS.get(view) != FRESH_NUM_CHARS) NUM_CHARS.set(view, FRESH_NUM_CHARS);
    if ((int) NUM_BYTES_VALID.get(view) != FRESH_NUM_BYTES_VALID) NUM_BYTES_VALID.set(view, FRESH_NUM_BYTES_VALID);
    if ((Object) IS_VALID.get(view) != FRESH_IS_VALID) IS_VALID.set(view, FRESH_IS_VALID);
    if ((Object) IS_FULL_ASCII.get(view) != FRESH_IS_FULL_ASCII) IS_FULL_ASCII.set(view, FRESH_IS_FULL_ASCII);
    return view;
  }
}
