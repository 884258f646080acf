package io.sparkreplicate.catalyst

import java.io.Closeable

import org.apache.spark.sql.catalyst.InternalRow

/**
 * The messages one reader decodes, one at a time, wherever they come from (landed files, a
 * Kafka partition). The current message is the slice `[offset, offset + length)` of `bytes`,
 * valid until the next call to [[next]].
 *
 * A problem with the input itself (a file gone or unreadable) is the input's to handle: it skips
 * and goes on, or throws. A single bad message is the reader's, which applies the parse mode.
 */
trait MessageInput extends Closeable {
  /**
   * Moves to the next message; false at the end.
   *
   * @throws io.sparkreplicate.MalformedMessageException for a message that cannot even be cut
   *         out (a bad frame): there is then no current message (`length` is -1)
   */
  def next(): Boolean
  def bytes: Array[Byte]
  def offset: Int
  def length: Int
  /** Where the current message is, for errors: the file or topic and the position in it. */
  def describePosition: String
  /** Fills a row of [[OutputColumns.sourceType]] with the current message's coordinates. */
  def writeSource(row: InternalRow): Unit
}
