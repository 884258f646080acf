"""Masks as real Replicate output writes them (README "Output columns"): a bit past the table's
last column names no column and is ignored, never malformed, and each message that had one is
counted in ``maskBitsIgnored``.

The zone comes from the project's generator with ``stray_mask_bits``: a share of the UPDATEs
carry the bit of ordinal ncols + 1 in their change mask, as Replicate sends on Oracle sources
(``04000000`` over 26 columns). Expected rows, names and counts come from the generator's record
of what it wrote, never from the reader.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from conftest import (MASK_COLUMNS, assert_same_rows, collect_plain, expected_rows, read_metrics, read_table,
                      table_def, version_columns)
from spark_replicate.generate import generate_landing_zone, mask_ordinals

STRAY_SHARE = 0.5


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    return generate_landing_zone(tmp_path_factory.mktemp("masks") / "landing", messages=900, seed=221,
                                 framing="length-prefixed", stray_mask_bits=STRAY_SHARE)


def stray(zone, message) -> bool:
    """Whether a generated message's masks set a bit past its own version's last column."""
    ncols = len(version_columns(table_def(zone, message.table), message.table_version))
    return any(mask is not None and max(mask_ordinals(mask), default=0) > ncols
               for mask in (message.change_mask, message.column_mask))


def test_the_zone_has_updates_whose_change_mask_sets_a_bit_past_the_last_column(zone):
    updates = [m for m in zone.messages if m.operation == "UPDATE"]
    with_stray = [m for m in updates if stray(zone, m)]
    assert 0 < len(with_stray) < len(updates)
    assert all(m.operation == "UPDATE" for m in zone.messages if stray(zone, m))


@pytest.mark.parametrize("table", ["HR.EMPLOYEES", "SALES.ORDERS"])
def test_failfast_reads_every_row_naming_only_the_tables_columns(spark, zone, table):
    df = read_table(spark, zone, table, mode="FAILFAST")
    assert_same_rows(collect_plain(df), expected_rows(zone, table))
    metrics = read_metrics(spark)
    messages = zone.messages_for(table)
    assert metrics["malformed"] == 0
    assert metrics["rowsReturned"] == len(messages)
    assert metrics["maskBitsIgnored"] == sum(stray(zone, m) for m in messages) > 0


def test_the_raw_masks_stay_exactly_as_sent(spark, zone):
    table = "HR.EMPLOYEES"
    sent = sorted((m.headers["changeSequence"], m.change_mask, m.column_mask) for m in zone.messages_for(table)
                  if m.operation == "UPDATE")
    rows = (read_table(spark, zone, table).where("header__operation = 'UPDATE'")
            .select("header__change_seq", "header__change_mask", "header__column_mask").collect())
    assert sorted((r[0], bytes(r[1]), bytes(r[2])) for r in rows) == sent


def test_the_count_does_not_depend_on_the_columns_selected(spark, zone):
    table = "HR.EMPLOYEES"
    read_table(spark, zone, table).select("header__operation").collect()
    assert read_metrics(spark)["maskBitsIgnored"] == sum(stray(zone, m) for m in zone.messages_for(table))


def test_the_generic_layout_ignores_them_too(spark, zone):
    df = read_table(spark, zone, None, paths=list(zone.topics.values()), layout="generic")
    rows = df.select("header__change_seq", *MASK_COLUMNS).collect()
    expected = {}
    for table in (t.name for t in zone.tables):
        for row in expected_rows(zone, table):
            expected[row["header__change_seq"]] = (row["header__changed_columns"], row["header__present_columns"])
    assert {r[0]: (r[1], r[2]) for r in rows if r[0] is not None} == \
        {seq: names for seq, names in expected.items() if seq is not None}
    assert read_metrics(spark)["maskBitsIgnored"] == sum(stray(zone, m) for m in zone.messages)


def test_a_pushed_operation_filter_counts_only_the_rows_it_decodes(spark, zone):
    table = "HR.EMPLOYEES"
    read_table(spark, zone, table).where(F.col("header__operation") == "INSERT").collect()
    metrics = read_metrics(spark)
    assert metrics["maskBitsIgnored"] == 0 and metrics["filteredOut"] > 0
