package io.sparkreplicate

import scala.util.Random

import org.apache.spark.sql.{Column, SparkSession}
import org.apache.spark.sql.functions.{coalesce, col, lit}
import org.apache.spark.sql.sources._
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.sparkreplicate.catalyst.{MessageFilter, OutputColumns => C, VersionDecision}
import io.sparkreplicate.codec.{Lineage, TableVersion}

/**
 * The pushed-filter model: which Spark filters it takes, and that its two-step decision (per
 * table version, then per operation) keeps a message exactly when Spark keeps its row: checked
 * against Spark's own evaluation of the same filters on every combination of header values.
 */
class MessageFilterSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var spark: SparkSession = _

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark = SparkSession.builder().master("local[1]").appName("MessageFilterSuite")
      .config("spark.ui.enabled", "false").getOrCreate()
  }

  override def afterAll(): Unit = try { if (spark != null) spark.stop() } finally super.afterAll()

  private def version(schema: String, table: String, number: Long) = TableVersion(s"$schema-$table-$number",
    Lineage("server", "task", schema, table, number, "2023-01-01"), IndexedSeq.empty, "{}", "test")

  private val schemas = Seq("HR", "SALES")
  private val tables = Seq("EMPLOYEES", "ORDERS")
  private val operations = Seq("INSERT", "UPDATE", "DELETE", "REFRESH", null)
  private val versions = for (s <- schemas; t <- tables; n <- 1L to 3L) yield version(s, t, n)

  /** What the model does with one message: its version's decision, then its operation's. */
  private def keeps(filter: MessageFilter, v: TableVersion, operation: String): Boolean = filter.forVersion(v) match {
    case VersionDecision.ReadAll => true
    case VersionDecision.SkipAll => false
    case byOperation: VersionDecision.ByOperation => byOperation.keeps(operation)
  }

  private def model(filters: Filter*): MessageFilter = MessageFilter(filters.map(f =>
    MessageFilter.convert(f).getOrElse(fail(s"$f is not converted"))))

  test("filters on the table, its version and the operation are converted; nothing else") {
    val converted = Seq[Filter](
      EqualTo(C.Operation, "INSERT"), EqualNullSafe(C.Operation, null), In(C.Operation, Array("INSERT", null)),
      IsNull(C.TableName), IsNotNull(C.SchemaName), EqualTo(C.TableName, "EMPLOYEES"), EqualTo(C.SchemaName, "HR"),
      LessThan(C.TableVersion, 3L), LessThanOrEqual(C.TableVersion, 3), GreaterThan(C.TableVersion, 1L),
      GreaterThanOrEqual(C.TableVersion, 2L), In(C.TableVersion, Array(1L, 2L)),
      Not(EqualTo(C.Operation, "DELETE")), And(EqualTo(C.TableVersion, 2L), IsNotNull(C.Operation)),
      Or(EqualTo(C.Operation, "DELETE"), EqualTo(C.TableName, "ORDERS")))
    converted.foreach(f => assert(MessageFilter.convert(f).isDefined, f))
    val refused = Seq[Filter](
      EqualTo("EMP_ID", 1), EqualTo(C.ChangeSeq, "1"), IsNull(C.SchemaId),
      GreaterThan(C.Operation, "DELETE"), LessThan(C.TableName, "M"), StringStartsWith(C.Operation, "IN"),
      EqualTo(C.TableVersion, "2"), EqualTo(C.TableVersion, 2.0), EqualTo(C.Operation, 1), In(C.TableVersion, Array(1L, "2")),
      And(EqualTo(C.Operation, "INSERT"), EqualTo("EMP_ID", 1)), Or(EqualTo(C.Operation, "INSERT"), IsNull("EMP_ID")),
      Not(StringContains(C.Operation, "E")), AlwaysTrue, AlwaysFalse)
    refused.foreach(f => assert(MessageFilter.convert(f).isEmpty, f))
  }

  test("a version is decided whole when the operation does not matter, and by operation otherwise") {
    val hr2 = version("HR", "EMPLOYEES", 2)
    assert(model(EqualTo(C.TableVersion, 2L)).forVersion(hr2) == VersionDecision.ReadAll)
    assert(model(EqualTo(C.TableVersion, 3L)).forVersion(hr2) == VersionDecision.SkipAll)
    assert(model(EqualTo(C.TableName, "ORDERS"), EqualTo(C.Operation, "INSERT")).forVersion(hr2) == VersionDecision.SkipAll)
    assert(model(EqualTo(C.SchemaName, "HR"), IsNotNull(C.TableName)).forVersion(hr2) == VersionDecision.ReadAll)
    // version 2 OR INSERT: version 2 is read whole, version 1 by its operation.
    val either = model(Or(EqualTo(C.TableVersion, 2L), EqualTo(C.Operation, "INSERT")))
    assert(either.forVersion(hr2) == VersionDecision.ReadAll)
    either.forVersion(version("HR", "EMPLOYEES", 1)) match {
      case byOperation: VersionDecision.ByOperation =>
        assert(byOperation.keeps("INSERT") && !byOperation.keeps("UPDATE") && !byOperation.keeps(null))
      case other => fail(s"expected a decision by operation, got $other")
    }
    assert(MessageFilter.KeepAll.forVersion(hr2) == VersionDecision.ReadAll)
  }

  test("NULL is neither true nor false: a NOT over a NULL comparison removes the message") {
    val hr1 = version("HR", "EMPLOYEES", 1)
    val notInWithNull = model(Not(In(C.Operation, Array("INSERT", null))))
    assert(!keeps(notInWithNull, hr1, "UPDATE") && !keeps(notInWithNull, hr1, "INSERT"))
    val notEqual = model(Not(EqualTo(C.Operation, "INSERT")))
    assert(keeps(notEqual, hr1, "UPDATE") && !keeps(notEqual, hr1, null))
    val notNullSafe = model(Not(EqualNullSafe(C.Operation, "INSERT")))
    assert(keeps(notNullSafe, hr1, null) && !keeps(notNullSafe, hr1, "INSERT"))
    assert(keeps(model(EqualNullSafe(C.Operation, null)), hr1, null))
    assert(!keeps(model(EqualTo(C.Operation, null)), hr1, null))
  }

  test("a row whose headers are all null (a corrupt record) passes only filters that accept NULL") {
    assert(!model(EqualTo(C.Operation, "INSERT")).keepsNullHeaders)
    assert(!model(Not(EqualTo(C.Operation, "INSERT"))).keepsNullHeaders)
    assert(model(Not(EqualNullSafe(C.Operation, "INSERT"))).keepsNullHeaders)
    assert(model(IsNull(C.TableVersion)).keepsNullHeaders)
    assert(!model(IsNull(C.TableVersion), EqualTo(C.Operation, "INSERT")).keepsNullHeaders)
  }

  test("under PERMISSIVE the filters are pushed only when they remove corrupt records too") {
    val insert = EqualTo(C.Operation, "INSERT")
    val notUpdate = Not(EqualNullSafe(C.Operation, "UPDATE"))
    val other = EqualTo("EMP_ID", 1)
    assert(MessageFilter.push(Seq(notUpdate, other), ParseMode.Permissive) == ((Nil, MessageFilter.KeepAll)))
    val (pushed, filter) = MessageFilter.push(Seq(notUpdate, insert, other), ParseMode.Permissive)
    assert(pushed == Seq(notUpdate, insert) && filter.predicates.size == 2)
    for (mode <- Seq(ParseMode.FailFast, ParseMode.DropMalformed)) {
      assert(MessageFilter.push(Seq(notUpdate, other), mode)._1 == Seq(notUpdate))
    }
  }

  // ---------------------------------------------------------------- against Spark's evaluation

  private val values: Map[String, Seq[Any]] = Map(
    C.SchemaName -> Seq("HR", "SALES", "OPS"), C.TableName -> Seq("EMPLOYEES", "ORDERS", "X"),
    C.TableVersion -> Seq(1L, 2L, 3L, 7L), C.Operation -> Seq("INSERT", "UPDATE", "DELETE", "REFRESH", "MERGE"))

  private def randomFilter(random: Random, depth: Int): Filter = {
    def pick[T](xs: Seq[T]): T = xs(random.nextInt(xs.size))
    if (depth > 0 && random.nextInt(3) == 0) random.nextInt(3) match {
      case 0 => Not(randomFilter(random, depth - 1))
      case 1 => And(randomFilter(random, depth - 1), randomFilter(random, depth - 1))
      case _ => Or(randomFilter(random, depth - 1), randomFilter(random, depth - 1))
    } else {
      val column = pick(values.keys.toSeq.sorted)
      def value: Any = if (random.nextInt(8) == 0) null else pick(values(column))
      val ordered = column == C.TableVersion
      random.nextInt(if (ordered) 9 else 5) match {
        case 0 => EqualTo(column, value)
        case 1 => EqualNullSafe(column, value)
        case 2 => In(column, Array.fill(1 + random.nextInt(3))(value))
        case 3 => IsNull(column)
        case 4 => IsNotNull(column)
        case 5 => LessThan(column, value)
        case 6 => LessThanOrEqual(column, value)
        case 7 => GreaterThan(column, value)
        case _ => GreaterThanOrEqual(column, value)
      }
    }
  }

  /** The same filter as a Spark column, for Spark to evaluate. */
  private def column(f: Filter): Column = f match {
    case EqualTo(c, v) => col(c) === lit(v)
    case EqualNullSafe(c, v) => col(c) <=> lit(v)
    case In(c, vs) => col(c).isin(vs.toSeq: _*)
    case IsNull(c) => col(c).isNull
    case IsNotNull(c) => col(c).isNotNull
    case LessThan(c, v) => col(c) < lit(v)
    case LessThanOrEqual(c, v) => col(c) <= lit(v)
    case GreaterThan(c, v) => col(c) > lit(v)
    case GreaterThanOrEqual(c, v) => col(c) >= lit(v)
    case Not(child) => !column(child)
    case And(l, r) => column(l) && column(r)
    case Or(l, r) => column(l) || column(r)
    case other => fail(s"no column for $other")
  }

  test("400 random filters decide every message exactly as Spark decides its row, NULLs included") {
    val random = new Random(20260101)
    val filters = Seq.fill(400)(randomFilter(random, 3))
    // One row per (version, operation), and one of all-null headers (id -1).
    val messages = (for (v <- versions; op <- operations) yield (v, op)).zipWithIndex
    val session = spark
    import session.implicits._
    val rows = messages.map { case ((v, op), id) =>
      (id, Option(v.lineage.schema), Option(v.lineage.table), Option(v.tableVersion), Option(op))
    } :+ ((-1, Option.empty[String], Option.empty[String], Option.empty[Long], Option.empty[String]))
    val df = rows.toDF("id", C.SchemaName, C.TableName, C.TableVersion, C.Operation)
    val kept = df.select(col("id") +: filters.indices.map(i => coalesce(column(filters(i)), lit(false)).as(s"f$i")): _*)
      .collect().map(r => r.getInt(0) -> filters.indices.map(i => r.getBoolean(i + 1))).toMap
    filters.zipWithIndex.foreach { case (f, i) =>
      val filter = model(f)
      messages.foreach { case ((v, op), id) =>
        assert(keeps(filter, v, op) == kept(id)(i), s"$f on ${v.table} v${v.tableVersion} $op")
      }
      assert(filter.keepsNullHeaders == kept(-1)(i), s"$f on null headers")
    }
    // Guards the premise: the filters are varied, keeping all, some and none.
    val shares = filters.indices.map(i => kept.values.count(_(i)))
    assert(shares.contains(0) && shares.contains(kept.size) && shares.count(s => s > 0 && s < kept.size) > 100)
  }
}
