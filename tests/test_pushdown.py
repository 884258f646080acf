"""Filter pushdown: filters on ``header__operation`` and ``header__table_version`` remove messages
before their rows are decoded, and a pushed filter returns exactly what the same filter returns
when Spark alone evaluates it (on the rows of an unfiltered read, collected first)."""

from __future__ import annotations

import io
import json
import re
import shutil

import fastavro
import pytest
from pyspark.sql import functions as F

from conftest import assert_same_rows, collect_plain, raises_replicate, read_metrics, read_table, smoke_cases
from spark_replicate.generate import encode_envelope

ITEMS = "INV.ITEMS"

# (filter, whether every part of it is pushed)
FILTERS = [
    ("header__operation = 'INSERT'", True),
    ("header__operation IN ('UPDATE', 'DELETE')", True),
    ("NOT header__operation = 'INSERT'", True),
    ("header__operation <> 'REFRESH'", True),
    ("header__operation = 'DELETE' OR header__table_version = 1", True),
    ("header__table_version = 2", True),
    ("header__table_version IN (1, 3)", True),
    ("header__table_version BETWEEN 2 AND 3", True),
    ("header__table_version < 3", True),
    ("header__table_version >= 2 AND header__operation = 'UPDATE'", True),
    ("header__table_version <=> 2", True),
    ("NOT (header__operation <=> 'UPDATE')", True),
    ("header__operation IS NULL", True),
    ("header__operation IS NOT NULL AND NOT header__table_version IN (2)", True),
    ("header__operation IN ('INSERT', NULL)", True),
    # Only the operation's half is pushed; Spark evaluates QTY.
    ("header__operation = 'UPDATE' AND QTY > 10", False),
    # Nothing can be pushed: one side of the OR reads the row.
    ("header__operation = 'INSERT' OR QTY > 10", False),
]


@pytest.fixture(scope="module")
def evolving(landing_zone):
    return landing_zone("evolving")


def unpushed(spark, df, condition: str) -> list[dict]:
    """``condition`` evaluated by Spark alone: on the unfiltered read's rows, collected first."""
    local = spark.createDataFrame(df.collect(), df.schema)
    return collect_plain(local.where(condition))


def scan_description(df, capsys) -> str:
    """The replicate scan's description, as EXPLAIN shows it."""
    df.explain()
    plan = capsys.readouterr().out
    match = re.search(r"Replicate \[.*?\] RuntimeFilters", plan)
    assert match, plan
    return match.group(0)


def pushed_filters(description: str) -> str:
    return re.search(r"pushedFilters=\[(.*?)\], files=", description).group(1)


# On the other minors: one filter of each kind Spark translates for the scan (=, IN with a NULL,
# a range, OR, NOT over <=>, IS NULL) and one pushed in part; the others combine the same kinds.
SMOKE_FILTERS = {"header__operation IN ('INSERT', NULL)", "header__table_version BETWEEN 2 AND 3",
                 "header__operation = 'DELETE' OR header__table_version = 1", "NOT (header__operation <=> 'UPDATE')",
                 "header__operation IS NULL", "header__operation = 'UPDATE' AND QTY > 10"}


def filter_cases(filters: list[tuple[str, bool]], smoke: set[str]) -> list:
    return smoke_cases([pytest.param(condition, flag, id=condition) for condition, flag in filters], smoke)


@pytest.mark.parametrize("condition,whole", filter_cases(FILTERS, SMOKE_FILTERS))
def test_a_pushed_filter_returns_what_spark_alone_returns(spark, evolving, condition, whole):
    df = read_table(spark, evolving, ITEMS)
    expected = unpushed(spark, df, condition)
    assert_same_rows(collect_plain(df.where(condition)), expected)
    metrics = read_metrics(spark)
    assert metrics["messagesRead"] == len(evolving.messages)
    if whole:
        # Decided exactly: every message the filter removes is counted, none is decoded into a row.
        assert metrics["rowsReturned"] == len(expected)
        assert metrics["filteredOut"] == len(evolving.messages) - len(expected)


def test_the_filters_are_not_trivial_on_this_zone(spark, evolving):
    """Guards the premise: each filter keeps some rows and removes others, except IS NULL."""
    # Counted by Spark alone, in one job: a condition inside an aggregate is not pushed to the scan.
    counts = read_table(spark, evolving, ITEMS).select(
        *[F.expr(f"count_if({condition})") for condition, _ in FILTERS]).first()
    total = len(evolving.messages)
    for (condition, _), n in zip(FILTERS, counts):
        assert (n == 0) if "IS NULL" in condition else (0 < n < total), condition


def test_explain_shows_the_pushed_filters_and_the_versions_read(spark, evolving, capsys):
    df = read_table(spark, evolving, ITEMS)
    description = scan_description(df.where("header__table_version >= 2 AND header__operation = 'UPDATE'"), capsys)
    assert "tables=INV.ITEMS(versions=2,3)," in description
    assert pushed_filters(description) == ("IsNotNull(header__table_version), IsNotNull(header__operation), "
                                           "GreaterThanOrEqual(header__table_version,2), EqualTo(header__operation,UPDATE)")
    assert "mode=FAILFAST, framing=auto" in description
    unfiltered = scan_description(df, capsys)
    assert "INV.ITEMS(versions=1,2,3), pushedFilters=[]" in unfiltered


def test_explain_shows_only_the_filters_that_are_pushed(spark, evolving, capsys):
    df = read_table(spark, evolving, ITEMS)
    assert pushed_filters(scan_description(df.where("header__operation = 'UPDATE' AND QTY > 10"), capsys)) == \
        "IsNotNull(header__operation), EqualTo(header__operation,UPDATE)"
    assert pushed_filters(scan_description(df.where("header__operation = 'INSERT' OR QTY > 10"), capsys)) == ""
    assert pushed_filters(scan_description(df.where("QTY > 10 AND header__change_seq > '0'"), capsys)) == ""


def test_a_version_filter_reads_no_message_of_the_other_versions(spark, evolving):
    df = read_table(spark, evolving, ITEMS).where("header__table_version = 3")
    versions = {r["header__table_version"] for r in collect_plain(df.select("header__table_version"))}
    assert versions == {3}
    metrics = read_metrics(spark)
    assert metrics["filteredOut"] == sum(1 for m in evolving.messages if m.table_version != 3)


# -- damaged messages: what is removed is never decoded; what cannot be decided is not hidden -----


def payload_of(entry, message, marker: str | None = None) -> bytes:
    """``message`` re-encoded with its version's data schema; ``marker`` replaces the SKU."""
    schema = fastavro.parse_schema(json.loads(entry.data_schema_json))
    data = dict(message.data, SKU=marker) if marker else message.data
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, {"data": data, "beforeData": message.before, "headers": message.headers})
    return out.getvalue()


@pytest.fixture(scope="module")
def damaged(evolving, tmp_path_factory):
    """The evolving zone's data plus damaged messages, each in its own file (framing ``message``):
    an UPDATE of version 2 whose SKU is not UTF-8, a DELETE of version 1 with bytes after its
    payload, and (separately) a version-2 message cut inside its row image."""
    root = tmp_path_factory.mktemp("pushdown-damaged")
    data = root / "inventory"
    shutil.copytree(evolving.topics["inventory"], data)
    entries = {e.version: e for e in evolving.metadata}

    def first(version, operation):
        return next(m for m in evolving.messages if m.table_version == version and m.operation == operation)

    update = first(2, "UPDATE")
    marker = "QQQQZZZZ"
    bad_utf8 = payload_of(entries[2], update, marker).replace(marker.encode(), b"\xff\xfe\xfd\xfc\xff\xfe\xfd\xfc")
    (data / "zz-bad-utf8.msg").write_bytes(encode_envelope("DT", bad_utf8, entries[2].schema_id))
    delete = first(1, "DELETE")
    trailing = payload_of(entries[1], delete) + b"\x00\x00"
    (data / "zz-trailing.msg").write_bytes(encode_envelope("DT", trailing, entries[1].schema_id))
    cut = root / "cut"
    cut.mkdir()
    (cut / "zz-cut.msg").write_bytes(encode_envelope("DT", payload_of(entries[2], first(2, "INSERT"))[:5],
                                                     entries[2].schema_id))
    return {"data": data, "cut": cut}


def test_the_damaged_messages_fail_an_unfiltered_read(spark, evolving, damaged):
    """Guards the premise: FAILFAST reports the damage when the rows are decoded."""
    with raises_replicate("REPLICATE_INVALID_UTF8"):
        read_table(spark, evolving, ITEMS, paths=[damaged["data"]]).where("header__table_version = 2").collect()
    with raises_replicate("REPLICATE_TRAILING_BYTES"):
        read_table(spark, evolving, ITEMS, paths=[damaged["data"]]).where("header__table_version = 1").collect()


@pytest.mark.parametrize("condition", ["header__operation = 'INSERT'", "header__table_version = 3",
                                       "header__operation IN ('INSERT', 'REFRESH') AND header__table_version > 1"])
def test_damaged_messages_removed_by_a_pushed_filter_are_never_decoded(spark, evolving, damaged, condition):
    expected = unpushed(spark, read_table(spark, evolving, ITEMS), condition)
    df = read_table(spark, evolving, ITEMS, paths=[damaged["data"]]).where(condition)
    assert_same_rows(collect_plain(df), expected)
    metrics = read_metrics(spark)
    assert metrics["malformed"] == 0
    assert metrics["messagesRead"] == len(evolving.messages) + 2
    assert metrics["filteredOut"] == metrics["messagesRead"] - metrics["rowsReturned"]


def test_a_message_the_peek_cannot_read_is_reported_not_hidden(spark, evolving, damaged):
    """Cut inside its row image, the message's operation cannot be read: FAILFAST fails as without
    the filter, and DROPMALFORMED counts it as malformed."""
    with raises_replicate("REPLICATE_TRUNCATED"):
        read_table(spark, evolving, ITEMS, paths=[damaged["cut"]]).where("header__operation = 'DELETE'").collect()
    df = read_table(spark, evolving, ITEMS, paths=[damaged["cut"]], mode="DROPMALFORMED")
    assert df.where("header__operation = 'DELETE'").count() == 0
    metrics = read_metrics(spark)
    assert (metrics["malformed_REPLICATE_TRUNCATED"], metrics["dropped"], metrics["filteredOut"]) == (1, 1, 0)


PERMISSIVE_FILTERS = [
    ("header__operation = 'UPDATE'", True),
    ("header__table_version = 1 OR header__operation = 'INSERT'", True),
    # A corrupt record has null headers and passes these: only a full decode can tell it apart.
    ("NOT (header__operation <=> 'UPDATE')", False),
    ("header__operation IS NULL", False),
]


@pytest.mark.parametrize("condition,pushed", filter_cases(
    PERMISSIVE_FILTERS, {"header__table_version = 1 OR header__operation = 'INSERT'", "header__operation IS NULL"}))
def test_under_permissive_corrupt_records_stay_exactly_as_unpushed(spark, evolving, damaged, capsys,
                                                                      condition, pushed):
    df = read_table(spark, evolving, ITEMS, paths=[damaged["data"], damaged["cut"]], mode="PERMISSIVE")
    expected = unpushed(spark, df, condition)
    assert_same_rows(collect_plain(df.where(condition)), expected)
    assert (pushed_filters(scan_description(df.where(condition), capsys)) != "") == pushed
    if not pushed:
        assert any(r["_corrupt_record"] is not None for r in expected)


@pytest.mark.parametrize("condition", ["header__operation = 'UPDATE'", "NOT (header__operation <=> 'UPDATE')"])
def test_under_dropmalformed_the_rows_are_exactly_as_unpushed(spark, evolving, damaged, condition):
    df = read_table(spark, evolving, ITEMS, paths=[damaged["data"], damaged["cut"]], mode="DROPMALFORMED")
    assert_same_rows(collect_plain(df.where(condition)), unpushed(spark, df, condition))
    read_metrics(spark)
