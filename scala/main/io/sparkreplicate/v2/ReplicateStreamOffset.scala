package io.sparkreplicate.v2

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.connector.read.streaming.Offset

/** A position in the stream's file log ([[io.sparkreplicate.streaming.FileLog]]): the last batch read. */
final case class ReplicateStreamOffset(batch: Long) extends Offset {
  override def json(): String = s"""{"logOffset":$batch}"""
}

object ReplicateStreamOffset {
  def parse(json: String): ReplicateStreamOffset =
    ReplicateStreamOffset(new ObjectMapper().readTree(json).get("logOffset").asLong)

  /** Spark hands back offsets it deserialized itself, or ours. */
  def of(offset: Offset): Long = offset match {
    case ours: ReplicateStreamOffset => ours.batch
    case other => parse(other.json()).batch
  }
}
