"""Variants of the wire format that real Replicate tasks produce: several table versions
after DDL, self-describing data messages (``messageSchema`` embedded), and 6.3-era headers
without the transaction fields."""

from __future__ import annotations

import io

import fastavro
import pytest

from conftest import (BEFORE_IMAGE, HEADER_COLUMNS, MASK_COLUMNS, assert_same_rows, collect_plain, expected_rows,
                      project, read_table)
from spark_replicate.generate import ENVELOPE_SCHEMA, default_tables

ITEMS = "INV.ITEMS"


@pytest.fixture(scope="module")
def evolving(landing_zone):
    return landing_zone("evolving")


def test_the_evolving_table_really_has_three_versions(evolving):
    """Guards the premise: DDL happened part-way, and messages of every version were landed."""
    assert sorted({m.table_version for m in evolving.messages}) == [1, 2, 3]
    assert len({m.schema_id for m in evolving.messages}) == 3


def test_columns_of_all_versions_appear_in_ordinal_order(spark, evolving):
    df = read_table(spark, evolving, ITEMS)
    assert df.columns == ["ITEM_ID", "SKU", "QTY", "PRICE", "WEIGHT", "COLOR", "RATING"] + HEADER_COLUMNS + \
        MASK_COLUMNS + [BEFORE_IMAGE]


def test_rows_of_every_version_read_back_exactly_with_nulls_for_later_columns(spark, evolving):
    assert_same_rows(collect_plain(read_table(spark, evolving, ITEMS)), expected_rows(evolving, ITEMS))


def test_before_images_of_every_version_read_back_exactly(spark, evolving):
    """The before image of an older version has no later columns: they must read as null, whatever
    message of a newer version the same task decoded just before."""
    columns = ["header__change_seq", "header__table_version", BEFORE_IMAGE]
    df = read_table(spark, evolving, ITEMS).select(*columns)
    assert_same_rows(collect_plain(df), project(expected_rows(evolving, ITEMS), columns))


def test_the_version_of_each_row_is_its_message_version(spark, evolving):
    df = read_table(spark, evolving, ITEMS)
    counts = {r[0]: r[1] for r in df.groupBy("header__table_version").count().collect()}
    expected: dict[int, int] = {}
    for m in evolving.messages:
        expected[m.table_version] = expected.get(m.table_version, 0) + 1
    assert counts == expected


# -- self-describing data messages, Replicate 6.3 headers ----------------------------------------


@pytest.fixture(scope="module")
def self_describing(landing_zone):
    return landing_zone("self-describing-6.3")


def test_the_data_messages_really_embed_their_schema(self_describing):
    """Guards the premise: the first DT frame carries ``messageSchema`` and no 6.3-only headers."""
    data = next(self_describing.topics["hr"].iterdir()).read_bytes()
    length = int.from_bytes(data[:4], "big")
    envelope = fastavro.schemaless_reader(io.BytesIO(data[4:4 + length]), fastavro.parse_schema(ENVELOPE_SCHEMA))
    assert envelope["type"] == "DT" and envelope["messageSchema"]
    assert "transactionEventCounter" not in envelope["messageSchema"]


@pytest.mark.parametrize("table", [t.name for t in default_tables()])
def test_self_describing_messages_with_6_3_headers_read_back_exactly(spark, self_describing, table):
    df = read_table(spark, self_describing, table)
    rows = collect_plain(df)
    assert {r["header__transaction_event_counter"] for r in rows} == {None}
    assert {r["header__transaction_last_event"] for r in rows} == {None}
    assert_same_rows(rows, expected_rows(self_describing, table))
