package io.sparkreplicate.files

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import io.sparkreplicate.{ErrorId, ReplicateException}

/** Resolves user paths and globs to the landed files under them. */
object LandingFiles {

  /**
   * Files under each path (directories are walked recursively). As in Spark's file sources,
   * names starting with `_` or `.` below the given paths are skipped: they are side files
   * (`_SUCCESS`, `.crc`) or, by our convention, the `_schema` topic beside the data topics.
   */
  def list(paths: Seq[String], conf: Configuration): Seq[FileStatus] =
    paths.flatMap { p =>
      val path = new Path(p)
      val fs = path.getFileSystem(conf)
      val matched = Option(fs.globStatus(path)).map(_.toSeq).getOrElse(Seq.empty)
      if (matched.isEmpty) throw new ReplicateException(ErrorId.PathNotFound,
        s"path `$p` does not exist or its glob matches nothing")
      matched.flatMap(walk(_, conf))
    }.distinctBy(_.getPath.toString).sortBy(_.getPath.toString)

  /** [[list]] with Java collections, for the Python package (the export command lists input as reads do). */
  def listJava(paths: java.util.List[String], conf: Configuration): java.util.List[FileStatus] =
    list(paths.asScala.toSeq, conf).asJava

  private def walk(status: FileStatus, conf: Configuration): Seq[FileStatus] =
    if (status.isFile) Seq(status)
    else {
      val fs = status.getPath.getFileSystem(conf)
      fs.listStatus(status.getPath).toSeq
        .filterNot(s => s.getPath.getName.startsWith("_") || s.getPath.getName.startsWith("."))
        .flatMap(walk(_, conf))
    }
}
