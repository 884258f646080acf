package io.sparkreplicate.files

import java.io.{DataInputStream, EOFException}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkreplicate.{ErrorId, ReplicateException}

/** Repeated 4-byte big-endian length, then that many bytes of envelope. */
final class LengthPrefixedSource(split: FileSplit, conf: Configuration, maxMessageBytes: Int) extends MessageSource {
  private val in = {
    val path = new Path(split.path)
    new DataInputStream(path.getFileSystem(conf).open(path))
  }
  private var buffer = new Array[Byte](64 * 1024)
  private var frameLength = 0
  private var framePosition = 0L
  private var nextPosition = 0L
  private var broken = false
  val record = new LandingRecord

  override def next(): Boolean = {
    if (broken || nextPosition >= split.fileLength) return false
    framePosition = nextPosition
    frameLength = -1
    val left = split.fileLength - framePosition
    if (left < 4) fail(s"$left byte(s) at the end of the file are too few for a length prefix")
    val declared = readFully(4) { in.readInt() }
    if (declared < 0) fail(s"negative length prefix $declared")
    if (declared > left - 4) fail(s"length prefix $declared exceeds the ${left - 4} bytes left in the file")
    nextPosition = framePosition + 4 + declared
    if (declared > maxMessageBytes) {
      // The frame is intact, only too large to take: skip it, and the frames after it still count.
      in.skipNBytes(declared.toLong)
      throw MessageSource.badFrame(s"a frame of $declared bytes exceeds `maxMessageBytes` ($maxMessageBytes)")
    }
    if (declared > buffer.length) buffer = new Array[Byte](math.max(declared, buffer.length * 2).min(Int.MaxValue - 8))
    readFully(declared) { in.readFully(buffer, 0, declared) }
    frameLength = declared
    true
  }

  private def readFully[T](n: Int)(read: => T): T =
    try read catch {
      case e: EOFException => throw new ReplicateException(ErrorId.CorruptFile,
        s"${split.path} ended while reading $n bytes at byte $framePosition: it changed while being read", e)
    }

  private def fail(detail: String): Nothing = {
    broken = true
    throw MessageSource.badFrame(detail)
  }

  override def bytes: Array[Byte] = buffer
  override def offset: Int = 0
  override def length: Int = frameLength
  override def position: Long = framePosition
  override def index: Long = 0
  override def describePosition: String = s"frame at byte $framePosition"
  override def close(): Unit = in.close()
}

/** The whole file is one envelope. */
final class WholeMessageSource(split: FileSplit, conf: Configuration, maxMessageBytes: Int) extends MessageSource {
  private var consumed = false
  /** Null until read, and when the file is too large to be read as one message. */
  private var content: Array[Byte] = _
  val record = new LandingRecord

  override def next(): Boolean = {
    if (consumed || split.fileLength == 0) return false
    consumed = true
    if (split.fileLength > maxMessageBytes) throw MessageSource.badFrame(
      s"a ${split.fileLength}-byte file exceeds `maxMessageBytes` ($maxMessageBytes) for one message")
    val path = new Path(split.path)
    val in = new DataInputStream(path.getFileSystem(conf).open(path))
    try {
      content = new Array[Byte](split.fileLength.toInt)
      in.readFully(content)
    } catch {
      case e: EOFException => throw new ReplicateException(ErrorId.CorruptFile,
        s"${split.path} is shorter than the ${split.fileLength} bytes listed: it changed while being read", e)
    } finally in.close()
    true
  }

  override def bytes: Array[Byte] = content
  override def offset: Int = 0
  override def length: Int = if (content == null) -1 else content.length
  override def position: Long = 0
  override def index: Long = 0
  override def describePosition: String = "whole-file message"
  override def close(): Unit = ()
}
