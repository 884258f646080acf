package io.sparkreplicate.cdc

/**
 * A run of [[Changes.applyTopicContinuously]], applying in a thread of its own until [[stop]], as
 * a `StreamingQuery` runs until stopped.
 *
 * @param body applies until the function it is given returns true, then returns what it applied
 */
final class ContinuousApply private[cdc] (body: (() => Boolean) => Map[String, ApplyResult]) {
  @volatile private var stopping = false
  @volatile private var outcome: Either[Throwable, Map[String, ApplyResult]] = _
  private val thread = new Thread(() => outcome = try Right(body(() => stopping)) catch { case e: Throwable => Left(e) },
    "spark-replicate continuous apply")
  thread.setDaemon(true)
  thread.start()

  /** False once stopped, or once it failed: [[stop]] then throws what made it fail. */
  def isActive: Boolean = thread.isAlive

  /**
   * Stops every query between batches and returns what the run applied per table (`batch` the
   * last; `held` after the last transactional cycle); throws what made the run fail, if it did.
   */
  def stop(): Map[String, ApplyResult] = {
    stopping = true
    thread.join()
    outcome.fold(e => throw e, identity)
  }
}
