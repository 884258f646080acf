"""Schema evolution (README "Schema evolution"): one table whose source gets ALTERed during CDC,
read across all its versions under each ``schemaEvolution`` value, and an incompatible change.

INV.STOCK starts as (ID, QTY INT4, NOTE, PRICE); then COLOR is added (version 2), NOTE dropped
(3), QTY widened to INT8 (4) and PRICE dropped (5). Every version has its own schema id.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import DecimalType, IntegerType, LongType, StringType

from conftest import (BEFORE_IMAGE, HEADER_COLUMNS, MASK_COLUMNS, assert_same_rows, collect_plain, expected_rows,
                      raises_replicate, read_table)
from spark_replicate.generate import (AddColumn, AlterColumn, ColumnDef, DropColumn, TableDef,
                                      generate_landing_zone)

C = ColumnDef
STOCK = TableDef("INV", "STOCK", "stock", (
    C("ID", "INT4", pk_position=1), C("QTY", "INT4"), C("NOTE", "STRING", 20), C("PRICE", "NUMERIC", 0, 9, 2),
), changes=(AddColumn(C("COLOR", "WSTRING", 20)), DropColumn("NOTE"), AlterColumn(C("QTY", "INT8")),
            DropColumn("PRICE")))
# QTY changes from an integer to text: no type holds both but a string.
RETYPED = TableDef("INV", "RETYPED", "retyped", (
    C("ID", "INT4", pk_position=1), C("QTY", "INT4"), C("NAME", "STRING", 20),
), changes=(AlterColumn(C("QTY", "STRING", 20)),))
HEADERS = HEADER_COLUMNS + MASK_COLUMNS + [BEFORE_IMAGE]


@pytest.fixture(scope="module", params=["text", "logical"])
def stock_zone(request, tmp_path_factory):
    return generate_landing_zone(tmp_path_factory.mktemp("stock") / "landing", tables=[STOCK], messages=800,
                                 seed=23, logical_types=request.param == "logical")


@pytest.fixture(scope="module")
def retyped_zone(tmp_path_factory):
    return generate_landing_zone(tmp_path_factory.mktemp("retyped") / "landing", tables=[RETYPED], messages=300,
                                 seed=29)


def test_the_table_has_five_versions(stock_zone):
    versions = [(e.version, e.schema_id) for e in stock_zone.metadata]
    assert [v for v, _ in versions] == [1, 2, 3, 4, 5] and len({s for _, s in versions}) == 5
    assert {m.table_version for m in stock_zone.messages} == {1, 2, 3, 4, 5}


def test_merge_keeps_every_version_columns_latest_first_then_the_dropped_newest_drop_first(spark, stock_zone):
    df = read_table(spark, stock_zone, STOCK.name)
    assert df.columns == ["ID", "QTY", "COLOR", "PRICE", "NOTE"] + HEADERS
    types = {f.name: f.dataType for f in df.schema.fields}
    assert (types["ID"], types["QTY"], types["COLOR"], types["PRICE"], types["NOTE"]) == \
        (IntegerType(), LongType(), StringType(), DecimalType(9, 2), StringType())
    assert [f.name for f in types[BEFORE_IMAGE].fields] == ["ID", "QTY", "COLOR", "PRICE", "NOTE"]
    assert_same_rows(collect_plain(df), expected_rows(stock_zone, STOCK.name))


def test_merge_reads_each_row_as_its_own_version_has_it(spark, stock_zone):
    rows = collect_plain(read_table(spark, stock_zone, STOCK.name))
    by_version = {v: [r for r in rows if r["header__table_version"] == v] for v in range(1, 6)}
    assert all(by_version.values())
    # Every column is present in INSERTs and UPDATEs; DELETEs carry the key only.
    changes = [r for r in rows if r["header__operation"] in ("INSERT", "UPDATE")]
    assert changes
    for row in changes:
        present = row["header__present_columns"]
        version = row["header__table_version"]
        assert present == {1: ["ID", "QTY", "NOTE", "PRICE"], 2: ["ID", "QTY", "NOTE", "PRICE", "COLOR"],
                           3: ["ID", "QTY", "PRICE", "COLOR"], 4: ["ID", "QTY", "PRICE", "COLOR"],
                           5: ["ID", "QTY", "COLOR"]}[version]
    # A column added later is null in older rows; a dropped one is null in newer rows.
    assert all(r["COLOR"] is None for r in by_version[1])
    assert all(r["NOTE"] is None for v in (3, 4, 5) for r in by_version[v])
    assert all(r["PRICE"] is None for r in by_version[5])
    assert any(r["NOTE"] is not None for r in by_version[1]) and any(r["COLOR"] is not None for r in by_version[5])
    # INT8 values beyond the range of the INT4 they widened.
    assert any(r["QTY"] is not None and r["QTY"] > 2 ** 31 for v in (4, 5) for r in by_version[v])


def test_latest_keeps_only_the_latest_version_columns(spark, stock_zone):
    df = read_table(spark, stock_zone, STOCK.name, schemaEvolution="latest")
    assert df.columns == ["ID", "QTY", "COLOR"] + HEADERS
    assert df.schema["QTY"].dataType == LongType()
    assert_same_rows(collect_plain(df), expected_rows(stock_zone, STOCK.name, schema_evolution="latest"))


def test_fail_refuses_a_table_with_several_versions(spark, stock_zone):
    ids = [e.schema_id for e in stock_zone.metadata]
    with raises_replicate("REPLICATE_SCHEMA_EVOLVED", "INV.STOCK", "5 versions", "version 1", ids[0],
                          "version 5", ids[4], "`schemaEvolution`"):
        read_table(spark, stock_zone, STOCK.name, schemaEvolution="fail").schema


def test_fail_reads_a_table_with_one_version(spark, avro_zone):
    table = "HR.EMPLOYEES"
    rows = collect_plain(read_table(spark, avro_zone, table, schemaEvolution="fail"))
    assert_same_rows(rows, expected_rows(avro_zone, table))


def test_an_invalid_schema_evolution_names_the_option(spark, stock_zone):
    with raises_replicate("REPLICATE_INVALID_OPTION", "`schemaEvolution`", "newest"):
        read_table(spark, stock_zone, STOCK.name, schemaEvolution="newest").schema


def test_an_incompatible_change_names_the_column_and_both_versions(spark, retyped_zone):
    v1, v2 = (e.schema_id for e in retyped_zone.metadata)
    with raises_replicate("REPLICATE_INCOMPATIBLE_VERSIONS", "`QTY`", "INV.RETYPED", "version 1", v1,
                          "version 2", v2, "`widenToString`"):
        read_table(spark, retyped_zone, RETYPED.name).schema


def test_widen_to_string_reads_an_incompatible_column_as_text(spark, retyped_zone):
    df = read_table(spark, retyped_zone, RETYPED.name, widenToString="true")
    assert df.schema["QTY"].dataType == StringType() and df.schema["ID"].dataType == IntegerType()

    def as_text(image):
        return None if image is None else {**image, "QTY": None if image["QTY"] is None else str(image["QTY"])}
    expected = [{**row, "QTY": as_text(row)["QTY"], BEFORE_IMAGE: as_text(row[BEFORE_IMAGE])}
                for row in expected_rows(retyped_zone, RETYPED.name)]
    assert {row["header__table_version"] for row in expected} == {1, 2}
    assert_same_rows(collect_plain(df), expected)


def test_latest_still_widens_a_column_whose_older_versions_are_read(spark, retyped_zone):
    with raises_replicate("REPLICATE_INCOMPATIBLE_VERSIONS", "`QTY`"):
        read_table(spark, retyped_zone, RETYPED.name, schemaEvolution="latest").schema
