"""Every output column of the README's "Output columns", checked against the generated messages.

One table (HR.EMPLOYEES, which shares its topic with HR.DEPARTMENTS) is compared column by
column and message by message; every table is then compared as a whole multiset of rows.
Messages are matched by their Kafka coordinates (``header__source``), which the tested columns
do not influence.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DateType, DecimalType, IntegerType,
                               LongType, StringType, StructField, StructType, TimestampType)

from conftest import (BEFORE_IMAGE, HEADER_COLUMNS, MASK_COLUMNS, SOURCE, assert_same_rows, collect_plain,
                      expected_row, expected_rows, read_table, table_def)
from spark_replicate.generate import default_tables

TABLE = "HR.EMPLOYEES"
EMPLOYEES = next(t for t in default_tables() if t.name == TABLE)
TABLE_COLUMNS = [c.name for c in EMPLOYEES.columns]

# The Spark types of the table's columns: the generator sends DATE, DATETIME and NUMERIC as text
# (Replicate's logical types off) and the metadata's source types type them.
EMPLOYEES_TYPES = {
    "EMP_ID": IntegerType(), "FIRST_NAME": StringType(), "LAST_NAME": StringType(), "EMAIL": StringType(),
    "HIRE_DATE": DateType(), "SALARY": DecimalType(10, 2), "DEPT_ID": IntegerType(), "IS_ACTIVE": BooleanType(),
    "PHOTO": BinaryType(), "UPDATED_AT": TimestampType(),
}
HEADER_TYPES = {
    "header__schema_id": StringType(), "header__table_version": LongType(), "header__operation": StringType(),
    "header__change_seq": StringType(), "header__timestamp": TimestampType(),
    "header__stream_position": StringType(), "header__transaction_id": StringType(),
    "header__transaction_event_counter": LongType(), "header__transaction_last_event": BooleanType(),
    "header__external_schema_id": StringType(), "header__change_mask": BinaryType(),
    "header__column_mask": BinaryType(),
}


@pytest.fixture(scope="module")
def employees_df(spark, avro_zone):
    return read_table(spark, avro_zone, TABLE)


@pytest.fixture(scope="module")
def actual_by_message(spark, avro_zone):
    """The rows read (with their source coordinates), keyed by (partition, offset)."""
    rows = collect_plain(read_table(spark, avro_zone, TABLE, includeSource="true"))
    keyed = {(row[SOURCE]["partition"], row[SOURCE]["offset"]): row for row in rows}
    assert len(keyed) == len(rows), "two rows carry the same Kafka coordinates"
    return keyed


@pytest.fixture(scope="module")
def expected_by_message(avro_zone):
    return {(m.partition, m.offset): expected_row(avro_zone, m) for m in avro_zone.messages_for(TABLE)}


def test_columns_are_the_table_columns_in_ordinal_order_then_the_headers(employees_df):
    assert employees_df.columns == TABLE_COLUMNS + HEADER_COLUMNS + MASK_COLUMNS + [BEFORE_IMAGE]


def test_column_types_follow_the_avro_types_and_the_design(employees_df):
    schema = employees_df.schema
    table_fields = [StructField(name, EMPLOYEES_TYPES[name]) for name in TABLE_COLUMNS]
    assert [(f.name, f.dataType) for f in schema.fields[:len(TABLE_COLUMNS)]] == \
        [(f.name, f.dataType) for f in table_fields]
    assert {name: schema[name].dataType for name in HEADER_COLUMNS} == HEADER_TYPES
    for name in MASK_COLUMNS:
        assert schema[name].dataType == ArrayType(StringType(), containsNull=False)
    before = schema[BEFORE_IMAGE].dataType
    assert isinstance(before, StructType)
    assert [(f.name, f.dataType) for f in before.fields] == [(f.name, f.dataType) for f in table_fields]


def test_every_message_comes_back_exactly_once(actual_by_message, expected_by_message, avro_zone):
    assert len(expected_by_message) == len(avro_zone.messages_for(TABLE)) > 300
    assert actual_by_message.keys() == expected_by_message.keys()


@pytest.mark.parametrize("column", TABLE_COLUMNS + HEADER_COLUMNS + MASK_COLUMNS + [BEFORE_IMAGE])
def test_column_equals_the_generated_message_row_by_row(column, actual_by_message, expected_by_message):
    keys = sorted(expected_by_message.keys() & actual_by_message.keys())
    assert keys, "no message to compare"
    mismatches = [(key, actual_by_message[key][column], expected_by_message[key][column])
                  for key in keys if actual_by_message[key][column] != expected_by_message[key][column]]
    assert not mismatches, (
        f"{column}: {len(mismatches)} of {len(keys)} rows differ; first (partition, offset), read, "
        f"expected: {mismatches[:3]}")


def test_masks_with_an_extra_leading_zero_byte_are_exercised(avro_zone):
    """Guards the premise of the mask columns: Replicate sometimes sends one more, zero, byte."""
    natural = (len(EMPLOYEES.columns) + 7) // 8
    lengths = {len(m.change_mask) for m in avro_zone.messages_for(TABLE) if m.change_mask is not None}
    assert lengths == {natural, natural + 1}


def test_header_timestamp_is_the_header_text_read_as_utc(employees_df, avro_zone):
    """Formatted in the session time zone (UTC), the timestamp is exactly the text Replicate sent."""
    formatted = employees_df.select(
        "header__change_seq", F.date_format("header__timestamp", "yyyy-MM-dd HH:mm:ss.SSSSSS").alias("ts"))
    actual = sorted((r.header__change_seq or "", r.ts) for r in formatted.collect())
    expected = sorted((m.headers["changeSequence"], m.headers["timestamp"] or None)
                      for m in avro_zone.messages_for(TABLE))
    assert actual == expected


def test_refresh_rows_have_null_cdc_headers_masks_and_before_image(actual_by_message, avro_zone):
    refresh = [row for row in actual_by_message.values() if row["header__operation"] == "REFRESH"]
    assert len(refresh) == avro_zone.counts[TABLE]["REFRESH"] > 0
    cdc_only = ["header__change_seq", "header__timestamp", "header__stream_position", "header__transaction_id",
                "header__transaction_event_counter", "header__transaction_last_event",
                "header__change_mask", "header__column_mask", *MASK_COLUMNS, BEFORE_IMAGE]
    assert {column: {row[column] for row in refresh} for column in cdc_only} == \
        {column: {None} for column in cdc_only}


def test_operation_counts_equal_the_generated_counts(employees_df, avro_zone):
    counts = {r["header__operation"]: r["count"] for r in employees_df.groupBy("header__operation").count().collect()}
    assert counts == avro_zone.expected_counts()[TABLE]
    assert set(counts) == {"REFRESH", "INSERT", "UPDATE", "DELETE"}


@pytest.mark.parametrize("table", [t.name for t in default_tables()])
def test_whole_table_equals_the_generated_rows_as_a_multiset(spark, avro_zone, table):
    df = read_table(spark, avro_zone, table)
    assert df.columns == [c.name for c in table_def(avro_zone, table).columns] + HEADER_COLUMNS + \
        MASK_COLUMNS + [BEFORE_IMAGE]
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, table))
