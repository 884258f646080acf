package io.sparkreplicate.catalyst

import org.apache.spark.sql.sources

import io.sparkreplicate.ParseMode
import io.sparkreplicate.codec.TableVersion

/**
 * A predicate on the headers that can be known before a data message's row is decoded: the
 * table (lineage schema and table name) and its version, which the registry entry found by the
 * message's schema id gives, and the operation, which the payload's `headers` record carries
 * after the row images. SQL's three-valued logic throughout, so that a null header behaves
 * exactly as in Spark's own evaluation: a message passes only when the predicate is TRUE.
 */
sealed trait MessagePredicate extends Serializable

object MessagePredicate {
  /** A header a predicate can read, by its output column. */
  sealed abstract class Header(val column: String) extends Serializable
  case object Schema extends Header(OutputColumns.SchemaName)
  case object Table extends Header(OutputColumns.TableName)
  case object Version extends Header(OutputColumns.TableVersion)
  case object Operation extends Header(OutputColumns.Operation)
  val headers: Seq[Header] = Seq(Schema, Table, Version, Operation)

  sealed abstract class Comparison(val holds: Int => Boolean) extends Serializable
  case object Equal extends Comparison(_ == 0)
  case object Less extends Comparison(_ < 0)
  case object LessOrEqual extends Comparison(_ <= 0)
  case object Greater extends Comparison(_ > 0)
  case object GreaterOrEqual extends Comparison(_ >= 0)

  /** A decided truth value: Some(true), Some(false), or None for NULL. */
  final case class Truth(value: Option[Boolean]) extends MessagePredicate
  val True: Truth = Truth(Some(true))
  val False: Truth = Truth(Some(false))
  val Null: Truth = Truth(None)

  /** `header op literal`; the literal is never null (a comparison with NULL is NULL). */
  final case class Compare(header: Header, op: Comparison, literal: Any) extends MessagePredicate
  /** `header <=> literal`; the literal may be null. */
  final case class NullSafeEqual(header: Header, literal: Any) extends MessagePredicate
  /** `header IN (literals)`; `withNull` when the list holds a NULL too. */
  final case class In(header: Header, literals: Set[Any], withNull: Boolean) extends MessagePredicate
  final case class IsNull(header: Header) extends MessagePredicate
  final case class Not(child: MessagePredicate) extends MessagePredicate
  final case class And(left: MessagePredicate, right: MessagePredicate) extends MessagePredicate
  final case class Or(left: MessagePredicate, right: MessagePredicate) extends MessagePredicate

  /** What is known of a message: a header's value (null for NULL), or [[Unknown]]. */
  type Facts = Header => Any
  case object Unknown

  /**
   * `p` with the known headers put in: a [[Truth]] when they decide it, otherwise what remains
   * to be decided from the unknown ones.
   */
  def partial(p: MessagePredicate, facts: Facts): MessagePredicate = p match {
    case t: Truth => t
    case Compare(h, op, literal) => known(h, facts, p) {
      case null => Null
      case v => Truth(Some(op.holds(compare(v, literal))))
    }
    case NullSafeEqual(h, literal) => known(h, facts, p)(v => Truth(Some(v == literal)))
    case In(h, literals, withNull) => known(h, facts, p) {
      case null => Null
      case v => if (literals.contains(v)) True else if (withNull) Null else False
    }
    case IsNull(h) => known(h, facts, p)(v => Truth(Some(v == null)))
    case Not(child) => partial(child, facts) match {
      case Truth(v) => Truth(v.map(!_))
      case rest => Not(rest)
    }
    case And(l, r) => (partial(l, facts), partial(r, facts)) match {
      case (False, _) | (_, False) => False
      case (True, rest) => rest
      case (rest, True) => rest
      case (Null, Null) => Null
      case (a, b) => And(a, b)
    }
    case Or(l, r) => (partial(l, facts), partial(r, facts)) match {
      case (True, _) | (_, True) => True
      case (False, rest) => rest
      case (rest, False) => rest
      case (Null, Null) => Null
      case (a, b) => Or(a, b)
    }
  }

  private def known(h: Header, facts: Facts, undecided: MessagePredicate)(decide: Any => Truth): MessagePredicate =
    facts(h) match {
      case Unknown => undecided
      case v => decide(v)
    }

  /** Literals are checked by [[MessageFilter.convert]]: longs for the version, strings otherwise. */
  private def compare(value: Any, literal: Any): Int = (value, literal) match {
    case (a: Long, b: Long) => java.lang.Long.compare(a, b)
    case (a: String, b: String) => a.compareTo(b)
    case _ => throw new IllegalArgumentException(s"cannot compare $value with $literal")
  }
}

/** What the pushed filter decides for the messages of one table version. */
sealed trait VersionDecision
object VersionDecision {
  case object ReadAll extends VersionDecision
  case object SkipAll extends VersionDecision
  /** Each message is decided by its operation (null when absent). */
  final case class ByOperation(rest: MessagePredicate) extends VersionDecision {
    def keeps(operation: String): Boolean =
      MessagePredicate.partial(rest, h => if (h == MessagePredicate.Operation) operation else MessagePredicate.Unknown) ==
        MessagePredicate.True
  }
}

/**
 * The conjunction of the filters pushed down to a scan, decided per table version (before the
 * payload is touched) and then per operation. It removes only messages whose output row the same
 * filter would remove; Spark still evaluates every filter on the rows returned.
 */
final case class MessageFilter(predicates: Seq[MessagePredicate]) {
  import MessagePredicate._

  private val all: MessagePredicate = predicates.reduceOption[MessagePredicate](And(_, _)).getOrElse(True)

  def isEmpty: Boolean = predicates.isEmpty

  def forVersion(version: TableVersion): VersionDecision = partial(all, {
    case Schema => version.lineage.schema
    case Table => version.lineage.table
    case Version => version.tableVersion
    case Operation => Unknown
  }) match {
    case True => VersionDecision.ReadAll
    case Truth(_) => VersionDecision.SkipAll
    case rest => VersionDecision.ByOperation(rest)
  }

  /** Whether a row whose headers are all null, as PERMISSIVE's corrupt-record rows are, passes. */
  def keepsNullHeaders: Boolean = partial(all, _ => null) == True
}

object MessageFilter {
  import MessagePredicate._

  val KeepAll: MessageFilter = MessageFilter(Nil)

  /**
   * The offered filters this model decides, and the model. Under PERMISSIVE a malformed message
   * becomes a row with null headers, which only a full decode can tell; so when such a row would
   * pass the filters, none is used (any subset of them would let it pass too).
   */
  def push(offered: Seq[sources.Filter], mode: ParseMode): (Seq[sources.Filter], MessageFilter) = {
    val converted = offered.flatMap(f => convert(f).map(f -> _))
    val filter = MessageFilter(converted.map(_._2))
    if (mode == ParseMode.Permissive && filter.keepsNullHeaders) (Nil, KeepAll)
    else (converted.map(_._1), filter)
  }

  /** The predicate of a filter that reads only the pushable headers, with literals of their types. */
  def convert(filter: sources.Filter): Option[MessagePredicate] = filter match {
    case sources.EqualTo(c, v) => compare(c, Equal, v)
    case sources.LessThan(c, v) => ordered(c, Less, v)
    case sources.LessThanOrEqual(c, v) => ordered(c, LessOrEqual, v)
    case sources.GreaterThan(c, v) => ordered(c, Greater, v)
    case sources.GreaterThanOrEqual(c, v) => ordered(c, GreaterOrEqual, v)
    case sources.EqualNullSafe(c, v) => header(c).flatMap(h => literalOrNull(h, v).map(NullSafeEqual(h, _)))
    case sources.In(c, vs) => header(c).flatMap { h =>
      val literals = vs.toSeq.filter(_ != null).map(literal(h, _))
      if (literals.exists(_.isEmpty)) None else Some(In(h, literals.flatten.toSet, vs.contains(null)))
    }
    case sources.IsNull(c) => header(c).map(IsNull)
    case sources.IsNotNull(c) => header(c).map(h => Not(IsNull(h)))
    case sources.Not(child) => convert(child).map(Not)
    case sources.And(l, r) => for (a <- convert(l); b <- convert(r)) yield And(a, b)
    case sources.Or(l, r) => for (a <- convert(l); b <- convert(r)) yield Or(a, b)
    case _ => None
  }

  private def header(column: String): Option[Header] = headers.find(_.column == column)

  private def compare(column: String, op: Comparison, value: Any): Option[MessagePredicate] =
    header(column).flatMap(h => literalOrNull(h, value).map(v => if (v == null) Null else Compare(h, op, v)))

  /** Only the version has an order worth pushing: names and operations are matched, not ranged. */
  private def ordered(column: String, op: Comparison, value: Any): Option[MessagePredicate] =
    if (column == OutputColumns.TableVersion) compare(column, op, value) else None

  private def literalOrNull(h: Header, value: Any): Option[Any] = if (value == null) Some(null) else literal(h, value)

  private def literal(h: Header, value: Any): Option[Any] = (h, value) match {
    case (Version, v: Long) => Some(v)
    case (Version, v: Int) => Some(v.toLong)
    case (Schema | Table | Operation, v: String) => Some(v)
    case _ => None
  }
}
