package io.sparkreplicate.catalyst

import org.apache.hadoop.conf.Configuration

import io.sparkreplicate.{ErrorId, MalformedMessageException, ReplicateException, ReplicateOptions}
import io.sparkreplicate.codec.{Envelope, MessageKind, MetadataMessage, TableVersion}
import io.sparkreplicate.files.{FileSplit, MessageSource}

/** Collects the metadata (MD) messages of landed files; data messages are skipped undecoded. */
object MetadataScanner {

  /**
   * @param strict true for a schema topic, where any unreadable message is an error; false for
   *               data topics, where unreadable envelopes are left to the data read (and its mode)
   */
  def scan(split: FileSplit, conf: Configuration, options: ReplicateOptions, strict: Boolean): Seq[TableVersion] = {
    val source = MessageSource.open(split, conf, options.valueField, options.limits)
    val found = Seq.newBuilder[TableVersion]
    try {
      var more = true
      while (more) {
        more = try source.next() catch {
          case _: MalformedMessageException if !strict => false
          case e: MalformedMessageException => throw located(e, split, source)
        }
        if (more) {
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
    found.result()
  }

  private def located(e: MalformedMessageException, split: FileSplit, source: MessageSource) =
    new ReplicateException(ErrorId.BadMetadata,
      s"unreadable metadata message in ${split.path}, ${source.describePosition}: [${e.errorId}] ${e.detail}", e)
}
