package io.sparkreplicate

import java.io.File
import java.nio.file.Files

import scala.util.Random

import org.apache.avro.file.CodecFactory
import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.Fixtures._
import io.sparkreplicate.files.{AvroContainerSource, FileSplit, Framing}

/**
 * The container reader is the first code to touch landed bytes, so it is held to the same rule
 * as the decoder: whatever the file holds, reading it yields records or a ReplicateException
 * naming the file (never another exception, an OutOfMemoryError or a hang). Valid files must
 * read back exactly, with every codec and however the file is split.
 *
 * `-Dreplicate.fuzz.cases=N` raises the number of mutated files (default 1200).
 */
class ContainerFuzzSuite extends AnyFunSuite with TempDirs {
  private val cases = sys.props.get("replicate.fuzz.cases").map(_.toInt).getOrElse(1200)
  private val seed = sys.props.get("replicate.fuzz.seed").map(_.toLong).getOrElse(0xB10CL)
  private val codecs = Seq("null", "deflate", "snappy", "zstandard", "bzip2", "xz")
  private val conf = new Configuration()
  private val dir = tempDir("container-fuzz").toFile

  /** Distinct values of varied sizes, so a block boundary can fall anywhere. */
  private val records = (0 until 120).map { i =>
    Landed("hr", i % 3, i.toLong, 1700000000000L + i, if (i % 5 == 0) null else s"k$i".getBytes,
      Array.fill(1 + (i * 37) % 300)((i % 251).toByte))
  }

  /** xz at level 0: the reader allocates the dictionary the stream names for every block it
   *  inflates, 256 KiB at level 0 where the default level's is 8 MiB; its code path is the same. */
  private def factory(codec: String): CodecFactory =
    if (codec == "xz") CodecFactory.xzCodec(0) else CodecFactory.fromString(codec)

  private def container(codec: String): Array[Byte] = Files.readAllBytes(
    writeContainer(new File(dir, s"valid-$codec.avro"), records, syncInterval = 512, codec = factory(codec)).toPath)

  private def read(file: File, start: Long, length: Long, maxBlockBytes: Int = 1 << 20): Seq[Seq[Byte]] = {
    val source = new AvroContainerSource(FileSplit(file.getPath, start, length, file.length, Framing.AvroContainer),
      conf, "value", maxBlockBytes)
    try Iterator.continually(source.next()).takeWhile(identity)
      .map(_ => source.bytes.slice(source.offset, source.offset + source.length).toSeq).toVector
    finally source.close()
  }

  private val expected = records.map(_.value.toSeq)

  test("every codec reads back every record exactly") {
    codecs.foreach { codec =>
      val file = writeBytes(new File(dir, s"read-$codec.avro"), container(codec))
      assert(read(file, 0, file.length) == expected, codec)
    }
  }

  test("any split points read every block exactly once, in order") {
    val r = new Random(seed)
    codecs.foreach { codec =>
      val file = writeBytes(new File(dir, s"split-$codec.avro"), container(codec))
      (1 to 20).foreach { _ =>
        val cuts = (Seq(0L, file.length) ++ Seq.fill(r.nextInt(6))(r.nextLong(file.length))).distinct.sorted
        val parts = cuts.zip(cuts.tail).flatMap { case (from, to) => read(file, from, to - from) }
        assert(parts == expected, s"$codec split at ${cuts.mkString(",")}")
      }
    }
  }

  test(s"$cases mutated container files yield records or a ReplicateException, nothing else") {
    val r = new Random(seed)
    val originals = codecs.map(c => c -> container(c)).toMap
    val target = new File(dir, "mutated.avro")
    val unexpected = (1 to cases).flatMap { i =>
      val codec = codecs(r.nextInt(codecs.length))
      val (what, bytes) = mutate(r, originals(codec))
      writeBytes(target, bytes)
      try { read(target, 0, bytes.length, maxBlockBytes = 64 * 1024); None }
      catch {
        case _: ReplicateException => None
        case e: Throwable => Some(s"case $i ($codec, $what): $e")
      }
    }
    assert(unexpected.isEmpty, unexpected.take(5).mkString("\n"))
  }

  private def mutate(r: Random, original: Array[Byte]): (String, Array[Byte]) = {
    val b = original.clone()
    val i = r.nextInt(b.length)
    r.nextInt(5) match {
      case 0 => b(i) = (b(i) ^ (1 << r.nextInt(8))).toByte; s"flip bit at $i" -> b
      case 1 => val n = 1 + r.nextInt(8); (i until math.min(b.length, i + n)).foreach(j => b(j) = r.nextInt(256).toByte)
        s"overwrite $n at $i" -> b
      case 2 => s"truncate to $i" -> b.take(i)
      case 3 => val n = 1 + r.nextInt(16); s"delete $n at $i" -> (b.take(i) ++ b.drop(i + n))
      case _ => val n = 1 + r.nextInt(16); s"insert $n at $i" -> (b.take(i) ++ Array.fill(n)(r.nextInt(256).toByte) ++ b.drop(i))
    }
  }
}
