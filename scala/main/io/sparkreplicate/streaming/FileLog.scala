package io.sparkreplicate.streaming

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.sparkreplicate.{ErrorId, ReplicateException}

/**
 * The durable log of what a stream took, one entry per micro-batch, kept in the source's folder of
 * the query's checkpoint: `<checkpoint>/sources/<n>/<batch>`, each a version line and the entry as
 * JSON. An entry is written under a hidden name and renamed into place, so a crash never leaves a
 * half-written one, and it is never rewritten: a batch re-planned after a failure reads it back.
 */
final class FileLog(directory: String, conf: Configuration) {
  private val dir = new Path(directory)
  private val fs = dir.getFileSystem(conf)

  /** The batch ids logged, in order; none for a new stream. */
  def batches: Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.map(_.getPath.getName).flatMap(_.toLongOption).sorted

  def get(batch: Long): FileLogEntry = {
    val path = new Path(dir, batch.toString)
    val text = try {
      val in = fs.open(path)
      try new String(in.readAllBytes(), UTF_8) finally in.close()
    } catch {
      case e: FileNotFoundException => throw new ReplicateException(ErrorId.BadCheckpoint, s"the stream's " +
        s"checkpoint has no entry $path for batch $batch: it was removed, or the checkpoint was copied " +
        "incompletely. Restore it, or start the query on a new checkpoint location", e)
    }
    text.split("\n", 2) match {
      case Array(FileLog.Version, json) => FileLogEntry.fromJson(json)
      case _ => throw new ReplicateException(ErrorId.BadCheckpoint, s"$path is not an entry of this version " +
        s"of the connector (it does not start with `${FileLog.Version}`): was the checkpoint written by a newer one?")
    }
  }

  def add(batch: Long, entry: FileLogEntry): Unit = {
    val target = new Path(dir, batch.toString)
    val temporary = new Path(dir, s".$batch.tmp")
    val out = fs.create(temporary, true)
    try out.write(s"${FileLog.Version}\n${FileLogEntry.toJson(entry)}".getBytes(UTF_8)) finally out.close()
    if (fs.exists(target) || !fs.rename(temporary, target)) {
      fs.delete(temporary, false)
      throw new ReplicateException(ErrorId.BadCheckpoint, s"$target exists already: two queries run on one " +
        "checkpoint location. Stop the other query; give each query a checkpoint location of its own")
    }
  }
}

object FileLog {
  val Version = "v1"
}
