package io.sparkreplicate.files

import java.nio.ByteBuffer

import org.apache.avro.util.Utf8

/**
 * The current landed message and, when the landing records carry them, its Kafka coordinates.
 * One instance per open file, overwritten for every record, so nothing is allocated per message.
 */
final class LandingRecord {
  var value: ByteBuffer = ByteBuffer.allocate(0)
  var valueIsNull = false
  val topic = new Utf8()
  var hasTopic = false
  var partition = 0
  var hasPartition = false
  var offset = 0L
  var hasOffset = false
  /** Epoch milliseconds, as Kafka keeps them. */
  var timestamp = 0L
  var hasTimestamp = false
  var key: ByteBuffer = ByteBuffer.allocate(0)
  var hasKey = false

  def clear(): Unit = {
    valueIsNull = false
    hasTopic = false
    hasPartition = false
    hasOffset = false
    hasTimestamp = false
    hasKey = false
  }
}
