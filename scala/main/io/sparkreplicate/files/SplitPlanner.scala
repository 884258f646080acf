package io.sparkreplicate.files

import scala.collection.mutable.ArrayBuffer

import org.apache.hadoop.fs.FileStatus

/**
 * Cuts files into splits and packs the splits into tasks, with the same sizing rule as Spark's
 * own file sources: a split is at most `maxPartitionBytes`, smaller when the input is small so
 * that every core gets work, and opening a file costs as much as reading `openCostInBytes`.
 */
final case class SplitPlanner(maxPartitionBytes: Long, openCostInBytes: Long, minPartitions: Int) {

  /** @param framingOf the framing of a file, or [[Framing.Auto]] when unknown until read */
  def plan(files: Seq[FileStatus], framingOf: FileStatus => Framing): Seq[Seq[FileSplit]] = {
    val maxSplit = maxSplitBytes(files)
    val splits = files.flatMap { file =>
      val framing = framingOf(file)
      val length = file.getLen
      val path = file.getPath.toString
      if (framing == Framing.AvroContainer && length > maxSplit) {
        (0L until length by maxSplit).map { start =>
          FileSplit(path, start, math.min(maxSplit, length - start), length, framing)
        }
      } else Seq(FileSplit(path, 0, length, length, framing))
    }
    pack(splits.sortBy(-_.length), maxSplit)
  }

  def maxSplitBytes(files: Seq[FileStatus]): Long = {
    val total = files.map(_.getLen + openCostInBytes).sum
    val perCore = total / math.max(1, minPartitions)
    math.min(maxPartitionBytes, math.max(openCostInBytes, perCore))
  }

  private def pack(splits: Seq[FileSplit], maxSplit: Long): Seq[Seq[FileSplit]] = {
    val tasks = ArrayBuffer.empty[Seq[FileSplit]]
    val current = ArrayBuffer.empty[FileSplit]
    var size = 0L
    splits.foreach { split =>
      if (current.nonEmpty && size + split.length > maxSplit) {
        tasks += current.toSeq
        current.clear()
        size = 0
      }
      current += split
      size += split.length + openCostInBytes
    }
    if (current.nonEmpty) tasks += current.toSeq
    tasks.toSeq
  }
}
