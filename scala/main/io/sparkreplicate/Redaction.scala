package io.sparkreplicate

import java.util.Locale
import java.util.regex.Pattern

/**
 * Keeps secrets out of the messages the connector produces, by Spark's own settings: the values
 * of options whose names match `spark.redaction.regex`, and any text matching
 * `spark.sql.redaction.string.regex` (a path with a token in it, say).
 */
final case class Redaction(secretValues: Seq[String], stringRegex: Option[String]) {
  @transient private lazy val pattern = stringRegex.map(Pattern.compile)

  def apply(text: String): String = {
    val masked = secretValues.filter(_.nonEmpty).foldLeft(text)((t, secret) => t.replace(secret, Redaction.Mask))
    pattern.fold(masked)(_.matcher(masked).replaceAll(Redaction.Mask))
  }

  /** The same exception with a redacted message; the cause is dropped if it could repeat a secret. */
  def apply(e: ReplicateException): ReplicateException = {
    val detail = apply(e.detail)
    if (detail == e.detail) e
    else e match {
      case _: MalformedMessageException => new MalformedMessageException(e.errorId, detail)
      case _ => new ReplicateException(e.errorId, detail)
    }
  }
}

object Redaction {
  val Mask = "*********(redacted)"
  /** Spark's default for `spark.redaction.regex`. */
  val DefaultKeyRegex = "(?i)secret|password|token|access[.]?key"
  val None: Redaction = Redaction(Nil, Option.empty)

  def fromOptions(options: Map[String, String], keyRegex: String, stringRegex: Option[String]): Redaction = {
    val keys = Pattern.compile(keyRegex)
    Redaction(options.collect { case (k, v) if keys.matcher(k.toLowerCase(Locale.ROOT)).find() || keys.matcher(k).find() => v }.toSeq,
      stringRegex.filter(_.nonEmpty))
  }
}
