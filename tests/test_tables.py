"""Several tables in one topic: choosing one with ``table``, the errors when it is missing or
unknown, and metadata found among the data files when there is no ``schemaTopic``."""

from __future__ import annotations

import pytest

from conftest import (BEFORE_IMAGE, assert_same_rows, collect_plain, expected_rows, raises_replicate, read_table)

ALL_TABLES = "HR.DEPARTMENTS, HR.EMPLOYEES, SALES.ORDERS"


def test_the_hr_topic_really_holds_two_tables(avro_zone):
    """Guards the premise of this module."""
    assert {m.table for m in avro_zone.messages if m.topic == "hr"} == {"HR.EMPLOYEES", "HR.DEPARTMENTS"}


@pytest.mark.smoke
@pytest.mark.parametrize("table", ["HR.EMPLOYEES", "HR.DEPARTMENTS"])
def test_table_option_returns_only_that_tables_rows_from_a_shared_topic(spark, avro_zone, table):
    df = read_table(spark, avro_zone, table)
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, table))


def test_composite_key_table_keeps_ordinal_column_order_not_key_order(spark, avro_zone):
    """HR.DEPARTMENTS's key is (COMPANY_ID, DEPT_ID) but its ordinal order is DEPT_ID first."""
    df = read_table(spark, avro_zone, "HR.DEPARTMENTS")
    assert df.columns[:4] == ["DEPT_ID", "DEPT_NAME", "COMPANY_ID", "MANAGER_ID"]


@pytest.mark.parametrize("spelling", ["hr.employees", "Hr.Employees", "HR.employees"])
def test_table_name_matches_case_insensitively(spark, avro_zone, spelling):
    exact = read_table(spark, avro_zone, "HR.EMPLOYEES")
    spelled = read_table(spark, avro_zone, spelling, paths=[avro_zone.topics["hr"]])
    assert spelled.schema == exact.schema
    assert_same_rows(collect_plain(spelled), expected_rows(avro_zone, "HR.EMPLOYEES"))


def test_tables_from_several_topics_can_be_read_in_one_load(spark, avro_zone):
    df = read_table(spark, avro_zone, "SALES.ORDERS", paths=[avro_zone.topics["hr"], avro_zone.topics["sales"]])
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, "SALES.ORDERS"))


def test_the_landing_root_can_be_read_side_files_and_schema_topic_are_skipped(spark, avro_zone):
    """``_schema`` and ``_manifest.json`` live beside the topics; underscore names are not data."""
    df = read_table(spark, avro_zone, "HR.DEPARTMENTS", paths=[avro_zone.root])
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, "HR.DEPARTMENTS"))


def test_flat_layout_without_table_the_error_lists_the_tables(spark, avro_zone):
    with raises_replicate("REPLICATE_TABLE_REQUIRED", ALL_TABLES, "`table`", "`layout`"):
        read_table(spark, avro_zone, None, paths=[avro_zone.topics["hr"]], layout="flat")


@pytest.mark.parametrize("unknown", ["HR.NOPE", "HR.EMPLOYEE", "NOPE.EMPLOYEES"])
def test_an_unknown_table_fails_naming_it_and_listing_the_known_ones(spark, avro_zone, unknown):
    with raises_replicate("REPLICATE_TABLE_NOT_FOUND", unknown, ALL_TABLES):
        read_table(spark, avro_zone, unknown, paths=[avro_zone.topics["hr"]])


# -- metadata in the data topics (no schemaTopic) ---------------------------------------------


@pytest.mark.parametrize("table", ["HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS"])
def test_metadata_is_found_among_the_data_files_without_schema_topic(spark, landing_zone, table):
    zone = landing_zone("md-in-data")
    df = read_table(spark, zone, table, schema_topic=False)
    assert df.columns[-1] == BEFORE_IMAGE
    assert_same_rows(collect_plain(df), expected_rows(zone, table))


def test_without_schema_topic_only_the_tables_of_the_data_paths_are_known(spark, landing_zone):
    zone = landing_zone("md-in-data")
    with raises_replicate("REPLICATE_TABLE_REQUIRED", "HR.DEPARTMENTS, HR.EMPLOYEES") as message:
        read_table(spark, zone, None, schema_topic=False, paths=[zone.topics["hr"]], layout="flat")
    assert "SALES.ORDERS" not in message[0]


def test_a_single_table_topic_needs_no_table_option_without_schema_topic(spark, landing_zone):
    zone = landing_zone("md-in-data")
    df = read_table(spark, zone, None, schema_topic=False, paths=[zone.topics["sales"]])
    assert_same_rows(collect_plain(df), expected_rows(zone, "SALES.ORDERS"))


def test_data_without_any_metadata_fails_with_no_metadata(spark, avro_zone):
    with raises_replicate("REPLICATE_NO_METADATA", "schemaTopic"):
        read_table(spark, avro_zone, None, schema_topic=False, paths=[avro_zone.topics["hr"]])
