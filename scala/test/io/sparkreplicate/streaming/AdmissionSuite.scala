package io.sparkreplicate.streaming

import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.{DecodeOptions, ErrorId, ReplicateException}

class AdmissionSuite extends AnyFunSuite {
  /** Five files of 100, 200, ..., 500 bytes, oldest first. */
  private val files = (1 to 5).map(i => LoggedFile(s"/landing/part-$i", i * 100L, i.toLong))

  test("no limit takes every new file") {
    assert(Admission.Unlimited.take(files) == files)
  }

  test("maxFiles takes the oldest files") {
    assert(Admission(Some(2), None).take(files) == files.take(2))
    assert(Admission(Some(9), None).take(files) == files)
  }

  test("maxBytes takes files while their total stays within it") {
    assert(Admission(None, Some(600)).take(files) == files.take(3)) // 100 + 200 + 300
    assert(Admission(None, Some(599)).take(files) == files.take(2))
  }

  test("a file larger than maxBytes is taken alone rather than never") {
    assert(Admission(None, Some(50)).take(files) == files.take(1))
    assert(Admission(None, Some(50)).take(files.drop(4)) == files.drop(4))
  }

  test("both limits: the tighter one decides, and min combines limits as Spark's composite limit does") {
    assert(Admission(Some(4), Some(300)).take(files) == files.take(2))
    assert(Admission(Some(1), Some(10000)).take(files) == files.take(1))
    assert((Admission(Some(4), None) min Admission(Some(2), Some(300))) == Admission(Some(2), Some(300)))
    assert((Admission.Unlimited min Admission(None, Some(7))) == Admission(None, Some(7)))
  }

  test("nothing new, nothing taken") {
    assert(Admission(Some(3), Some(10)).take(Nil).isEmpty)
  }

  test("the options: a size with units, a positive count, and a bad value names its option") {
    val decode = DecodeOptions.parse(Map.empty)
    val parsed = StreamOptions.parse(Map("MAXFILESPERTRIGGER" -> "7", "maxBytesPerTrigger" -> "10g",
      "startingPosition" -> "LATEST"), decode)
    assert(parsed == StreamOptions(Admission(Some(7), Some(10L << 30)), StartingPosition.Latest))
    assert(StreamOptions.parse(Map.empty, decode) == StreamOptions(Admission.Unlimited, StartingPosition.Earliest))
    for ((option, value) <- Seq("maxFilesPerTrigger" -> "0", "maxBytesPerTrigger" -> "-1k",
        "startingPosition" -> "oldest")) {
      val e = intercept[ReplicateException](StreamOptions.parse(Map(option -> value), decode))
      assert(e.errorId == ErrorId.InvalidOption && e.detail.contains(s"`$option`"), e.detail)
    }
  }
}
