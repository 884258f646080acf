package io.sparkreplicate.files

/**
 * The current landed message and, when the landing records carry them, its Kafka coordinates.
 * Byte fields are slices of the buffer the record was read from (`buffer`), valid until the next
 * record: nothing is copied or allocated per message unless a coordinate is actually selected.
 */
final class LandingRecord {
  var buffer: Array[Byte] = Array.emptyByteArray
  var valueOffset = 0
  var valueLength = 0
  var valueIsNull = false
  var topicOffset = 0
  var topicLength = -1
  var partition = 0
  var hasPartition = false
  var offset = 0L
  var hasOffset = false
  /** Epoch milliseconds, as Kafka keeps them. */
  var timestamp = 0L
  var hasTimestamp = false
  var keyOffset = 0
  var keyLength = -1

  def hasTopic: Boolean = topicLength >= 0
  def hasKey: Boolean = keyLength >= 0

  def clear(): Unit = {
    valueLength = 0
    valueIsNull = false
    topicLength = -1
    hasPartition = false
    hasOffset = false
    hasTimestamp = false
    keyLength = -1
  }
}
