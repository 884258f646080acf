package io.sparkreplicate.catalyst

import io.sparkreplicate.{DecodeLimits, ErrorId, MalformedMessageException, ReplicateException}
import io.sparkreplicate.codec.{Envelope, MessageKind, MetadataMessage, TableVersion}

/** Collects the metadata (MD) messages of an input; data messages are skipped undecoded. */
object MetadataScanner {

  /**
   * @param strict true for a schema topic, where any unreadable message is an error; false for
   *               data topics, where bad frames and unreadable envelopes are left to the data
   *               read (and its mode), and the scan goes on past them as the data read does: an
   *               intact frame that is only too large is skipped, one that cannot be right ends
   *               the input (it then has no next message). An input that the data read skips
   *               (under `ignoreCorruptFiles` / `ignoreMissingFiles`) ends the scan the same
   *               way, keeping the metadata found before the damage.
   */
  def scan(input: MessageInput, limits: DecodeLimits, strict: Boolean): Seq[TableVersion] = {
    val found = Seq.newBuilder[TableVersion]
    try {
      var more = true
      while (more) {
        // A bad frame leaves no current message (`length` -1), so it is passed over below.
        more = try input.next() catch {
          case _: MalformedMessageException if !strict => true
          case e: MalformedMessageException => throw located(e, input)
        }
        if (more && input.length >= 0) {
          val bytes = input.bytes
          val envelope = try Envelope.decode(bytes, input.offset, input.length) catch {
            case _: MalformedMessageException if !strict => null
            case e: MalformedMessageException => throw located(e, input)
          }
          if (envelope != null && envelope.kind == MessageKind.Metadata) {
            found += (try MetadataMessage.decode(bytes, envelope, input.describePosition, limits) catch {
              case e: MalformedMessageException => throw located(e, input)
            })
          }
        }
      }
    } finally input.close()
    found.result()
  }

  private def located(e: MalformedMessageException, input: MessageInput) = new ReplicateException(
    ErrorId.BadMetadata, s"unreadable metadata message in ${input.describePosition}: [${e.errorId}] ${e.detail}", e)
}
