package io.sparkreplicate.bench

import java.lang.management.ManagementFactory
import java.net.{URL, URLClassLoader}
import java.nio.file.Paths

import scala.collection.mutable

/**
 * Compares two builds of the decoder (their compiled main classes, e.g. `target/scala-2.13/classes`
 * copied aside before a change) in one JVM, their passes over the same messages taking turns: on
 * a shared machine, two JVMs run one after the other meet different loads, while passes that
 * alternate every second meet the same. Each build is loaded with [[DecoderBench]] by a class
 * loader of its own (the project's classes first, Spark and the rest shared), so each has its own
 * classes and JIT-compiled code.
 *
 * `bin/sbt "Test/runMain io.sparkreplicate.bench.BuildComparison <dataset> <SCHEMA.TABLE> <messages> <rounds> <case,...> <classes A> <classes B>"`
 * prints, per case and build, the median and spread of the passes' CPU time per message.
 */
object BuildComparison {
  def main(args: Array[String]): Unit = {
    val (root, table, messages, roundArg, caseArg, buildA, buildB) = args match {
      case Array(root, table, messages, rounds, cases, a, b) => (root, table, messages, rounds, cases, a, b)
      case _ => sys.error("arguments: <dataset> <SCHEMA.TABLE> <messages> <rounds> <case,...> <classes A> <classes B>")
    }
    val testClasses = Paths.get(classOf[DecoderBench.Prepared].getProtectionDomain.getCodeSource.getLocation.toURI)
    val builds = Seq(buildA, buildB)
    val prepared = builds.map { dir =>
      val loader = new ProjectFirstLoader(Array(Paths.get(dir).toUri.toURL, testClasses.toUri.toURL), getClass.getClassLoader)
      val bench = loader.loadClass(classOf[DecoderBench.Prepared].getName)
      bench.getConstructor(classOf[String], classOf[String], classOf[Int])
        .newInstance(root, table, Integer.valueOf(messages.toInt)).asInstanceOf[AnyRef]
    }
    val count = messages.toInt
    val wanted = caseArg.split(',').toSeq
    def passes(p: AnyRef): Map[String, Int => Unit] =
      p.getClass.getMethod("cases").invoke(p).asInstanceOf[Seq[(String, String, Int => Unit)]].map(c => c._1 -> c._3).toMap
    val cases = prepared.map(passes)
    val threads = ManagementFactory.getThreadMXBean
    val cpu = mutable.Map.empty[(String, Int), mutable.ArrayBuffer[Double]]
    val rounds = roundArg.toInt
    val warmupRounds = 3
    for (round <- 0 until warmupRounds + rounds; c <- wanted; b <- if (round % 2 == 0) Seq(0, 1) else Seq(1, 0)) {
      val one = cases(b)(c)
      val cpu0 = threads.getCurrentThreadCpuTime
      var i = 0
      while (i < count) { one(i); i += 1 }
      if (round >= warmupRounds) cpu.getOrElseUpdate((c, b), mutable.ArrayBuffer.empty) += (threads.getCurrentThreadCpuTime - cpu0).toDouble / count
    }
    for (c <- wanted; b <- builds.indices) {
      val xs = cpu((c, b)).sorted
      println(f"BuildComparison: $c%-16s ${builds(b)}%-40s CPU ns/message median ${xs(xs.size / 2)}%6.0f " +
        f"(quartiles ${xs(xs.size / 4)}%6.0f ${xs(3 * xs.size / 4)}%6.0f, ${xs.size} passes)")
    }
  }

  /** Loads the project's classes (`io.sparkreplicate`) from its own URLs first, the rest from the parent. */
  private final class ProjectFirstLoader(urls: Array[URL], parent: ClassLoader) extends URLClassLoader(urls, parent) {
    override def loadClass(name: String, resolve: Boolean): Class[_] =
      if (!name.startsWith("io.sparkreplicate.")) super.loadClass(name, resolve)
      else getClassLoadingLock(name).synchronized {
        val loaded: Class[_] = findLoadedClass(name)
        val c = if (loaded != null) loaded else findClass(name)
        if (resolve) resolveClass(c)
        c
      }
  }
}
