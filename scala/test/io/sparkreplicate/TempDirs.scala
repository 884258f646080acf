package io.sparkreplicate

import java.nio.file.{Files, Path}

import scala.collection.mutable
import scala.reflect.io.Directory

import org.scalatest.{BeforeAndAfterAll, Suite}

/** Temporary directories a suite makes, deleted with all they hold once it has run. */
trait TempDirs extends BeforeAndAfterAll { this: Suite =>
  private val made = mutable.Buffer[Path]()

  def tempDir(prefix: String): Path = made.synchronized {
    val dir = Files.createTempDirectory(prefix)
    made += dir
    dir
  }

  abstract override def afterAll(): Unit =
    try super.afterAll() finally made.synchronized(made.foreach(dir => new Directory(dir.toFile).deleteRecursively()))
}
