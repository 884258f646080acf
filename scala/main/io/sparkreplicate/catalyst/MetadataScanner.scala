package io.sparkreplicate.catalyst

import org.apache.hadoop.conf.Configuration

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException, ReplicateOptions}
import io.sparkreplicate.codec.{Envelope, MessageKind, MetadataMessage, TableVersion}
import io.sparkreplicate.files.{FileSplit, MessageSource}

/** Collects the metadata (MD) messages of landed files; data messages are skipped undecoded. */
object MetadataScanner {

  /**
   * @param strict true for a schema topic, where any unreadable message is an error; false for
   *               data topics, where bad frames and unreadable envelopes are left to the data
   *               read (and its mode), and the scan goes on past them as the data read does: an
   *               intact frame that is only too large is skipped, one that cannot be right ends
   *               the file (the source then has no next message). A file that the data read
   *               skips under `ignoreCorruptFiles` / `ignoreMissingFiles` ends the scan of that
   *               file, keeping the metadata found before the damage.
   */
  def scan(split: FileSplit, conf: Configuration, options: ReplicateOptions, strict: Boolean): Seq[TableVersion] = {
    val found = Seq.newBuilder[TableVersion]
    try collect(split, conf, options, strict, found) catch {
      case e: Exception if !strict && ChangeRowReader.isFileProblem(e) && ChangeRowReader.ignored(e, options) => ()
    }
    found.result()
  }

  private def collect(split: FileSplit, conf: Configuration, options: ReplicateOptions, strict: Boolean,
      found: scala.collection.mutable.Builder[TableVersion, Seq[TableVersion]]): Unit = {
    val source = MessageSource.open(split, conf, options.valueField, options.limits)
    try {
      var more = true
      while (more) {
        // A bad frame leaves no current message (`length` -1), so it is passed over below.
        more = try source.next() catch {
          case _: MalformedMessageException if !strict => true
          case e: MalformedMessageException => throw located(e, split, source)
        }
        if (more && source.length >= 0) {
          val bytes = source.bytes
          val envelope = try Envelope.decode(bytes, source.offset, source.length) catch {
            case _: MalformedMessageException if !strict => null
            case e: MalformedMessageException => throw located(e, split, source)
          }
          if (envelope != null && envelope.kind == MessageKind.Metadata) {
            val origin = s"${split.path} (${source.describePosition})"
            found += (try MetadataMessage.decode(bytes, envelope, origin, options.limits) catch {
              case e: MalformedMessageException => throw located(e, split, source)
            })
          }
        }
      }
    } finally source.close()
  }

  private def located(e: MalformedMessageException, split: FileSplit, source: MessageSource) =
    new ReplicateException(ErrorId.BadMetadata,
      s"unreadable metadata message in ${split.path}, ${source.describePosition}: [${e.errorId}] ${e.detail}", e)
}
