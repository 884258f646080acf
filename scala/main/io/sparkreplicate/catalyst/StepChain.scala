package io.sparkreplicate.catalyst

import java.lang.reflect.{Constructor, Modifier}
import java.util.concurrent.ConcurrentHashMap

import org.codehaus.janino.ClassBodyEvaluator

import io.sparkreplicate.codec.{DecodeStep, SliceDecoder}

/**
 * One step that runs a record's steps in order. A loop over an array of steps calls them all
 * through one virtual call site, which sees every step class and so stays megamorphic: one
 * dispatch per field, and no step inlined into it. Instead a class is compiled (with Janino, which
 * Spark ships) whose `apply` calls each step through a field of the step's own final class: direct
 * calls, which the JIT inlines.
 *
 * A class is compiled once per sequence of step classes (a table version's shape, not its
 * values) and shared by every converter of that shape in the JVM. Long records are cut into
 * chains of at most [[StepChain.MaxCalls]] calls, chained in turn, so that no method grows past
 * what the JIT compiles and inlines well (it never compiles a method of over 8000 bytes of bytecode).
 */
private[catalyst] object StepChain {
  /** Calls per compiled method. */
  val MaxCalls = 32
  /**
   * Shapes compiled per JVM, at most: a stream of ever new shapes (embedded schemas that differ
   * message by message) must not fill the metaspace. Past it, steps run in a plain loop.
   */
  val MaxShapes = 2048

  private val compiled = new ConcurrentHashMap[Seq[Class[_]], Constructor[_ <: DecodeStep]]()

  def apply(steps: Array[DecodeStep]): DecodeStep =
    if (steps.length <= MaxCalls) chain(steps)
    else apply(steps.grouped(MaxCalls).map(chain).toArray)

  private def chain(steps: Array[DecodeStep]): DecodeStep = {
    val shape = steps.map(fieldType).toSeq
    val known = compiled.get(shape)
    val constructor = if (known != null) known
      else if (compiled.size >= MaxShapes) null
      else compiled.computeIfAbsent(shape, _ => compile(shape))
    if (constructor == null) new Loop(steps) else constructor.newInstance(steps.asInstanceOf[AnyRef])
  }

  /**
   * The step's class when the compiled code can name it (public, final, and found by name from
   * this loader: not a hidden class, nor a chain compiled by another loader); else the abstract
   * step, called virtually.
   */
  private def fieldType(step: DecodeStep): Class[_] = {
    val c = step.getClass
    val nameable = Modifier.isPublic(c.getModifiers) && Modifier.isFinal(c.getModifiers) && !c.isHidden &&
      (try Class.forName(c.getName, false, Loader) eq c catch { case _: ClassNotFoundException => false })
    if (nameable) c else classOf[DecodeStep]
  }

  private val Loader = classOf[DecodeStep].getClassLoader

  private def compile(shape: Seq[Class[_]]): Constructor[_ <: DecodeStep] = {
    val step = classOf[DecodeStep].getName
    val fields = shape.zipWithIndex.map { case (c, i) => s"private final ${c.getName} s$i;" }
    val assignments = shape.zipWithIndex.map { case (c, i) => s"s$i = (${c.getName}) steps[$i];" }
    val calls = shape.indices.map(i => s"s$i.apply(in);")
    val evaluator = new ClassBodyEvaluator()
    evaluator.setParentClassLoader(Loader)
    evaluator.setClassName("io.sparkreplicate.catalyst.CompiledStepChain")
    evaluator.setExtendedClass(classOf[DecodeStep])
    evaluator.cook(
      s"""${fields.mkString("\n")}
         |public CompiledStepChain($step[] steps) {
         |  ${assignments.mkString("\n  ")}
         |}
         |public void apply(${classOf[SliceDecoder].getName} in) {
         |  ${calls.mkString("\n  ")}
         |}
         |""".stripMargin)
    evaluator.getClazz.asSubclass(classOf[DecodeStep]).getConstructor(classOf[Array[DecodeStep]])
  }

  /** The steps in a plain loop, once [[MaxShapes]] are compiled. */
  private final class Loop(steps: Array[DecodeStep]) extends DecodeStep {
    def apply(in: SliceDecoder): Unit = { var i = 0; while (i < steps.length) { steps(i)(in); i += 1 } }
  }
}
