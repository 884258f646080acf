package io.sparkreplicate.files

/**
 * A byte range of one landed file, read by one task. Only Avro container files are ever split
 * (at sync markers); every other framing is read whole, so `start` is 0 and `length` the file's.
 * `framing` is [[Framing.Auto]] when the file has not been sniffed yet: small files are sniffed
 * by the task that reads them, not on the driver.
 */
final case class FileSplit(path: String, start: Long, length: Long, fileLength: Long, framing: Framing)
