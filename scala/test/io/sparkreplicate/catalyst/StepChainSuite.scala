package io.sparkreplicate.catalyst

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.codec.{DecodeStep, SliceDecoder}

/**
 * The compiled chains run every step once, in order, whatever the steps' classes (final ones named
 * in the compiled code, others called virtually) and however long the record (chains of chains).
 * That they decode each kind of column as its step does is [[ColumnStepSuite]]'s to check.
 */
class StepChainSuite extends AnyFunSuite {
  private val in = new SliceDecoder

  /** A step the compiled code can name: public and final. */
  private def recording(log: mutable.Buffer[Int], id: Int): DecodeStep = new StepChainSuite.Recording(log, id)

  /** A step of a class that is not final, so only called virtually. */
  private def open(log: mutable.Buffer[Int], id: Int): DecodeStep = new StepChainSuite.Open(log, id)

  private def runs(steps: Array[DecodeStep], log: mutable.Buffer[Int]): Seq[Int] = {
    log.clear()
    StepChain(steps)(in)
    log.toSeq
  }

  test("steps run in order, final and other classes mixed, each once") {
    val log = mutable.Buffer.empty[Int]
    val lambda: DecodeStep = _ => log += 3
    val steps = Array(recording(log, 0), open(log, 1), recording(log, 2), lambda)
    assert(runs(steps, log) == Seq(0, 1, 2, 3))
  }

  test("an empty record runs nothing") {
    val log = mutable.Buffer.empty[Int]
    assert(runs(Array.empty, log).isEmpty)
  }

  test("records longer than one compiled method run whole, in order") {
    val log = mutable.Buffer.empty[Int]
    for (n <- Seq(StepChain.MaxCalls - 1, StepChain.MaxCalls, StepChain.MaxCalls + 1, 5 * StepChain.MaxCalls + 3,
        StepChain.MaxCalls * StepChain.MaxCalls + 7)) {
      val steps = Array.tabulate(n)(i => if (i % 3 == 0) open(log, i) else recording(log, i))
      assert(runs(steps, log) == (0 until n), s"$n steps")
    }
  }

  test("one class per shape: chains of the same step classes share it, other shapes get their own") {
    val log = mutable.Buffer.empty[Int]
    val a = StepChain(Array(recording(log, 0), open(log, 1)))
    val b = StepChain(Array(recording(log, 2), open(log, 3)))
    val c = StepChain(Array(open(log, 4), recording(log, 5)))
    assert(a.getClass eq b.getClass)
    assert(a.getClass ne c.getClass)
    log.clear()
    a(in); b(in); c(in)
    assert(log == Seq(0, 1, 2, 3, 4, 5))
  }

  test("past its maximum of shapes, a new shape runs in a plain loop; the shapes compiled before stay compiled") {
    val log = mutable.Buffer.empty[Int]
    val chains = new StepChain(maxShapes = 1)
    val first = chains(Array(recording(log, 0), open(log, 1)))
    val other = chains(Array(open(log, 2), recording(log, 3)))
    val again = chains(Array(recording(log, 4), open(log, 5)))
    assert(first.getClass.getName == "io.sparkreplicate.catalyst.CompiledStepChain")
    assert(other.isInstanceOf[StepChain.Loop])
    assert(again.getClass eq first.getClass)
    log.clear()
    first(in); other(in); again(in)
    assert(log == Seq(0, 1, 2, 3, 4, 5))
  }
}

object StepChainSuite {
  final class Recording(log: mutable.Buffer[Int], id: Int) extends DecodeStep {
    def apply(in: SliceDecoder): Unit = log += id
  }

  class Open(log: mutable.Buffer[Int], id: Int) extends DecodeStep {
    def apply(in: SliceDecoder): Unit = log += id
  }
}
