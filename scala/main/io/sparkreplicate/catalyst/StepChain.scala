package io.sparkreplicate.catalyst

import java.lang.reflect.Constructor
import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.catalyst.expressions.MutableValue
import org.codehaus.janino.ClassBodyEvaluator

import io.sparkreplicate.codec.{DecodeStep, SliceDecoder}

/**
 * One step that runs a record's steps in order, compiled (with Janino, which Spark ships) into
 * one method per shape of steps. A loop over an array of steps calls them all through one virtual
 * call site, which sees every step class and so stays megamorphic: one dispatch per field, and no
 * step inlined into it. The compiled method instead reads what most fields are inline (each
 * column's union branch, and its value when an int, a long or a string; see [[StepCode]]), with
 * the read position in a local variable, and calls the steps for the rest through fields of their
 * own final classes: direct calls, which the JIT inlines. Inlining every step's own read did not
 * fit: each inlined the decoder's whole varint reader, and past a few columns the JIT stopped
 * inlining (a method's inlined code is capped at 8000 bytes of bytecode).
 *
 * A class is compiled once per shape (a table version's sequence of [[StepCode]]s, not its
 * values) and shared by every converter of that shape in the JVM. Long records are cut into
 * chains of at most [[StepChain.MaxCalls]] steps, chained in turn, so that no method grows past
 * what the JIT compiles and inlines well.
 */
private[catalyst] object StepChain {
  /**
   * Steps per compiled method: the JIT inlines into one method at most 8000 bytes of bytecode,
   * its own and its callees' (a string's validation and a long varint's read are a few hundred
   * each), and past that calls even a setter; 12 columns measured over it on profile M.
   */
  val MaxCalls = 8
  /**
   * Shapes compiled per JVM, at most: a stream of ever new shapes (embedded schemas that differ
   * message by message) must not fill the metaspace. Past it, steps run in a plain loop.
   */
  val MaxShapes = 2048

  private val shared = new StepChain(MaxShapes)

  def apply(steps: Array[DecodeStep]): DecodeStep = shared(steps)

  private def compile(shape: Seq[StepCode]): Constructor[_ <: DecodeStep] = {
    val step = classOf[DecodeStep].getName
    val slot = classOf[MutableValue].getName
    val fields = shape.zipWithIndex.flatMap { case (c, i) =>
      Seq(s"private final ${c.stepClass.getName} s$i;") ++
        Option(c.slotClass).map(s => s"private final ${s.getName} v$i;")
    }
    val assignments = shape.zipWithIndex.flatMap { case (c, i) =>
      Seq(s"s$i = (${c.stepClass.getName}) steps[$i];") ++
        Option(c.slotClass).map(s => s"v$i = (${s.getName}) slots[$i];")
    }
    val evaluator = new ClassBodyEvaluator()
    evaluator.setParentClassLoader(StepCode.Loader)
    evaluator.setClassName("io.sparkreplicate.catalyst.CompiledStepChain")
    evaluator.setExtendedClass(classOf[DecodeStep])
    evaluator.cook(
      s"""${fields.mkString("\n")}
         |public CompiledStepChain($step[] steps, $slot[] slots) {
         |  ${assignments.mkString("\n  ")}
         |}
         |public void apply(${classOf[SliceDecoder].getName} in) {
         |  byte[] buf = in.array();
         |  int end = in.limit();
         |  int pos = in.arrayOffset();
         |  ${shape.zipWithIndex.map { case (c, i) => c.code(i) }.mkString("\n  ")}
         |  in.seek(pos);
         |}
         |""".stripMargin)
    evaluator.getClazz.asSubclass(classOf[DecodeStep])
      .getConstructor(classOf[Array[DecodeStep]], classOf[Array[MutableValue]])
  }

  /** The steps in a plain loop, once [[MaxShapes]] are compiled. */
  private[catalyst] final class Loop(steps: Array[DecodeStep]) extends DecodeStep {
    def apply(in: SliceDecoder): Unit = { var i = 0; while (i < steps.length) { steps(i)(in); i += 1 } }
  }
}

/** The compiled chains of at most `maxShapes` shapes (a JVM shares one: [[StepChain.apply]]). */
private[catalyst] final class StepChain(maxShapes: Int) {
  import StepChain._

  private val compiled = new ConcurrentHashMap[Seq[StepCode], Constructor[_ <: DecodeStep]]()

  def apply(steps: Array[DecodeStep]): DecodeStep =
    if (steps.length <= MaxCalls) chain(steps)
    else apply(steps.grouped(MaxCalls).map(chain).toArray)

  private def chain(steps: Array[DecodeStep]): DecodeStep = {
    val shape = steps.map(StepCode.of).toSeq
    val known = compiled.get(shape)
    val constructor = if (known != null) known
      else if (compiled.size >= maxShapes) null
      else compiled.computeIfAbsent(shape, _ => compile(shape))
    if (constructor == null) new Loop(steps)
    else {
      val slots: Array[MutableValue] = steps.map {
        case c: ColumnStep => c.target
        case _ => null
      }
      constructor.newInstance(steps, slots)
    }
  }
}
