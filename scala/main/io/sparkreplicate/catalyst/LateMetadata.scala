package io.sparkreplicate.catalyst

import scala.collection.mutable

import io.sparkreplicate.codec.{SchemaRegistry, TableVersion}

/** Re-reads a source's metadata, in the executors: every table version the source holds now. */
trait MetadataRefresh extends Serializable {
  def read(): Seq[TableVersion]
}

/**
 * `metadataWait`: a data message whose metadata has not arrived yet waits for it, as Replicate
 * advises its consumers, re-reading the metadata source with growing pauses until its schema id
 * appears or the wait runs out. Each missing id waits once per reader: once given up on, its
 * later messages go straight to the parse mode, so a stream of them costs one wait, not one each.
 */
final class LateMetadata(waitMillis: Long, refresh: Option[MetadataRefresh], counters: ReadCounters) {
  private val givenUp = mutable.Set.empty[String]

  /**
   * The registry grown by what the source holds now, once `found` holds in it; None when the wait
   * ran out first (or there is no wait, or no source to re-read).
   */
  def await(key: String, current: SchemaRegistry)(found: SchemaRegistry => Boolean): Option[SchemaRegistry] =
    refresh.filter(_ => waitMillis > 0 && !givenUp(key)).flatMap { source =>
      val started = System.nanoTime()
      val deadline = started + waitMillis * 1000000L
      var pause = LateMetadata.FirstPauseMillis
      var result = Option.empty[SchemaRegistry]
      while (result.isEmpty && !givenUp(key)) {
        val grown = SchemaRegistry.build(current.versions.values ++ source.read(), current.origins)
        val left = (deadline - System.nanoTime()) / 1000000L
        if (found(grown)) result = Some(grown)
        else if (left <= 0) givenUp += key
        else {
          Thread.sleep(math.min(pause, left))
          pause = math.min(pause * 2, LateMetadata.MaxPauseMillis)
        }
      }
      counters.metadataWaits += 1
      counters.metadataWaitMillis += (System.nanoTime() - started) / 1000000L
      result
    }
}

object LateMetadata {
  private val FirstPauseMillis = 100L
  /** The metadata source is re-read at least this often while a message waits. */
  private val MaxPauseMillis = 2000L
}
