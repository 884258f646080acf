"""The generic layout: every table of a topic in one DataFrame, one row per data message, with the
row images as VARIANT values typed by each message's own table version.

The typed values are checked against the flat layout, which the rest of the suite checks against
the generator: for every table, the generic rows with their variants read back at the flat
layout's types must be exactly the flat read's rows."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import DataFrame, functions as F

from conftest import (BEFORE_IMAGE, HEADER_COLUMNS, MASK_COLUMNS, assert_same_rows, collect_plain,
                      evolving_tables, raises_replicate, read_metrics, assert_accounted)
from spark_replicate.generate import ColumnDef, TableDef, default_tables, generate_landing_zone

SCHEMA_NAME, TABLE_NAME = "header__schema_name", "header__table_name"


def five_tables() -> list[TableDef]:
    """The three demo tables, the evolving one (three versions) and one more, all on one topic."""
    C = ColumnDef
    extra = TableDef("SALES", "CUSTOMERS", "all", (
        C("CUSTOMER_ID", "INT8", pk_position=1),
        C("NAME", "WSTRING", 60),
        C("VIP", "BOOLEAN"),
        C("SINCE", "DATE"),
        C("PHOTO", "BYTES", 32),
    ))
    return [dataclasses.replace(t, topic="all") for t in default_tables() + evolving_tables()] + [extra]


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    root = tmp_path_factory.mktemp("generic") / "landing"
    return generate_landing_zone(root, tables=five_tables(), framing="avro", messages=1200, seed=301)


def read(spark, zone, **options) -> DataFrame:
    reader = spark.read.format("replicate").option("schemaTopic", str(zone.schema_topic))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(zone.topics["all"]))


def as_flat(generic: DataFrame, flat: DataFrame, table: str) -> DataFrame:
    """One table's generic rows in the flat layout's shape, the variants read at the flat types."""
    schema_name, table_name = table.split(".", 1)
    columns = [f for f in flat.schema.fields if not f.name.startswith("header__")]

    def image(variant):
        return [F.variant_get(variant, f"$.{c.name}", c.dataType.simpleString()).alias(c.name) for c in columns]
    before = F.when(F.col(BEFORE_IMAGE).isNull(), F.lit(None)).otherwise(F.struct(*image(F.col(BEFORE_IMAGE))))
    return (generic.where((F.col(SCHEMA_NAME) == schema_name) & (F.col(TABLE_NAME) == table_name))
            .select(*image(F.col("data")), *HEADER_COLUMNS, *MASK_COLUMNS, before.alias(BEFORE_IMAGE)))


def test_the_topic_holds_five_tables(zone):
    assert len({m.table for m in zone.messages}) == 5


def test_without_table_several_tables_read_in_the_generic_layout(spark, zone):
    df = read(spark, zone)
    assert df.columns == [SCHEMA_NAME, TABLE_NAME, *HEADER_COLUMNS, *MASK_COLUMNS, "data", BEFORE_IMAGE]
    types = dict((f.name, f.dataType.simpleString()) for f in df.schema.fields)
    assert types["data"] == types[BEFORE_IMAGE] == "variant"
    assert types[SCHEMA_NAME] == types[TABLE_NAME] == "string"


@pytest.mark.smoke
def test_every_tables_generic_rows_equal_its_flat_rows(spark, zone):
    generic = read(spark, zone)
    for table in sorted({m.table for m in zone.messages}):
        flat = read(spark, zone, table=table)
        assert_same_rows(collect_plain(as_flat(generic, flat, table)), collect_plain(flat))


def test_counts_per_table_and_operation_match_the_generator(spark, zone):
    rows = read(spark, zone).groupBy(SCHEMA_NAME, TABLE_NAME, "header__operation").count().collect()
    counts: dict = {}
    for r in rows:
        counts.setdefault(f"{r[0]}.{r[1]}", {})[r[2]] = r[3]
    assert counts == zone.expected_counts()
    metrics = read_metrics(spark)
    assert_accounted(metrics)
    assert metrics["filteredOut"] == 0 and metrics["rowsReturned"] == len(zone.messages)


@pytest.mark.smoke
def test_variants_keep_the_types_of_the_rows_own_version(spark, zone):
    """INV.ITEMS version 1 rows have no COLOR or RATING; version 3 rows have both."""
    items = read(spark, zone).where(F.col(TABLE_NAME) == "ITEMS")
    keys = {r[0]: set(r[1]) for r in items.select("header__table_version", F.expr("map_keys(from_json(to_json(data), 'map<string,string>'))")).collect()}
    assert keys[1] == {"ITEM_ID", "SKU", "QTY", "PRICE", "WEIGHT"}
    assert keys[3] == keys[1] | {"COLOR", "RATING"}
    customers = read(spark, zone).where(F.col(TABLE_NAME) == "CUSTOMERS")
    assert customers.select(F.expr("schema_of_variant_agg(data)")).first()[0] == \
        "OBJECT<CUSTOMER_ID: BIGINT, NAME: STRING, PHOTO: BINARY, SINCE: DATE, VIP: BOOLEAN>"


def test_table_with_generic_layout_keeps_that_tables_rows(spark, zone):
    df = read(spark, zone, table="HR.EMPLOYEES", layout="generic")
    assert "data" in df.columns
    assert df.count() == len(zone.messages_for("HR.EMPLOYEES"))
    assert read_metrics(spark)["filteredOut"] == len(zone.messages) - len(zone.messages_for("HR.EMPLOYEES"))


def test_layout_flat_without_table_names_the_layout_option(spark, zone):
    with raises_replicate("REPLICATE_TABLE_REQUIRED", "`layout`"):
        read(spark, zone, layout="flat").schema


def test_pruned_generic_reads_decode_only_what_is_selected(spark, zone):
    names = read(spark, zone).select(TABLE_NAME, "header__operation").distinct().count()
    assert names == len({(m.table, m.operation) for m in zone.messages})
    images = read(spark, zone).select("data").where(F.col("data").isNotNull()).count()
    assert images == len(zone.messages)


def test_explain_shows_the_generic_layout_and_its_tables(spark, zone):
    plan = read(spark, zone)._jdf.queryExecution().executedPlan().toString()
    assert "layout=generic" in plan
    for table in {m.table for m in zone.messages}:
        assert table in plan


def test_permissive_keeps_a_malformed_message_as_a_corrupt_generic_row(spark, zone, tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"atMSG but not an envelope")
    df = (spark.read.format("replicate").option("schemaTopic", str(zone.schema_topic))
          .option("mode", "PERMISSIVE").load([str(zone.topics["all"]), str(bad)]))
    corrupt = df.where(F.col("_corrupt_record").isNotNull()).select(TABLE_NAME, "data", "_corrupt_record.reason").collect()
    assert len(corrupt) == 1 and corrupt[0][0] is None and corrupt[0][1] is None
    assert corrupt[0][2].startswith("REPLICATE_")


def test_a_table_name_filter_is_pushed_and_returns_what_spark_alone_returns(spark, zone, capsys):
    condition = "header__table_name IN ('ITEMS', 'ORDERS') AND header__operation <> 'REFRESH'"
    # Python's VariantVal has no equality: the images are compared as JSON.
    df = read(spark, zone).withColumns({c: F.to_json(c) for c in ("data", BEFORE_IMAGE)})
    local = spark.createDataFrame(df.collect(), df.schema)
    expected = collect_plain(local.where(condition))
    assert_same_rows(collect_plain(df.where(condition)), expected)
    assert read_metrics(spark)["rowsReturned"] == len(expected)
    read(spark, zone).where(condition).explain()
    plan = capsys.readouterr().out
    assert "In(header__table_name, [ITEMS,ORDERS])" in plan and "layout=generic" in plan, plan
