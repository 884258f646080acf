package io.sparkreplicate.streaming

/**
 * How many new files one micro-batch takes: at most `maxFiles` files and `maxBytes` bytes, oldest
 * first, and always at least one file, so that a file larger than `maxBytes` is read on its own
 * rather than never. No limit takes every new file.
 */
final case class Admission(maxFiles: Option[Int], maxBytes: Option[Long]) {

  /** @param candidates the new files, oldest first */
  def take(candidates: Seq[LoggedFile]): Seq[LoggedFile] = {
    var bytes = 0L
    val byCount = maxFiles.fold(candidates)(candidates.take)
    val fitting = byCount.zipWithIndex.takeWhile { case (file, i) =>
      bytes += file.length
      i == 0 || maxBytes.forall(bytes <= _)
    }
    fitting.map(_._1)
  }

  /** The tighter of both limits, as Spark combines the limits it is given. */
  def min(other: Admission): Admission =
    Admission(Admission.least(maxFiles, other.maxFiles), Admission.least(maxBytes, other.maxBytes))
}

object Admission {
  val Unlimited: Admission = Admission(None, None)

  private def least[T: Ordering](a: Option[T], b: Option[T]): Option[T] = (a ++ b).minOption
}
