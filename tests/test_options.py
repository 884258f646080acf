"""Reader options (README "Options"): expandMasks, includeSource, case-insensitive names, invalid
values, and the Python shorthand ``spark_replicate.read``."""

from __future__ import annotations

import fastavro
import pytest
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructType, TimestampType

import spark_replicate
from conftest import (BEFORE_IMAGE, FRAMING_ZONES, HEADER_COLUMNS, MASK_COLUMNS, SOURCE, SOURCE_FIELDS, ZONE_SPECS,
                      assert_same_rows, collect_plain, expected_rows, expected_rows_with_source, project,
                      raises_replicate, read_table)

TABLE = "HR.EMPLOYEES"


# -- expandMasks ---------------------------------------------------------------------------------


def test_expand_masks_false_removes_only_the_two_array_columns(spark, avro_zone):
    expanded = read_table(spark, avro_zone, TABLE)
    raw = read_table(spark, avro_zone, TABLE, expandMasks="false")
    assert raw.columns == [c for c in expanded.columns if c not in MASK_COLUMNS]
    assert "header__change_mask" in raw.columns and "header__column_mask" in raw.columns
    assert_same_rows(collect_plain(raw), expected_rows(avro_zone, TABLE, expand_masks=False))


# -- includeSource -------------------------------------------------------------------------------


def test_include_source_adds_the_source_struct_last(spark, avro_zone):
    df = read_table(spark, avro_zone, TABLE, includeSource="true")
    assert df.columns[-2:] == [BEFORE_IMAGE, SOURCE]
    source = df.schema[SOURCE].dataType
    assert isinstance(source, StructType)
    assert [(f.name, f.dataType) for f in source.fields] == [
        ("file", StringType()), ("position", LongType()), ("index", LongType()), ("topic", StringType()),
        ("partition", IntegerType()), ("offset", LongType()), ("timestamp", TimestampType()),
        ("key", BinaryType())]


@pytest.mark.parametrize("zone_name", FRAMING_ZONES)
def test_include_source_gives_the_file_and_kafka_coordinates_of_each_message(spark, landing_zone, zone_name):
    """Kafka coordinates come from the container records when they carry them, else are null."""
    zone = landing_zone(zone_name)
    spec = ZONE_SPECS[zone_name]
    df = read_table(spark, zone, TABLE, includeSource="true")
    coordinates = [f"{SOURCE}.{name}" for name in SOURCE_FIELDS if name not in ("position", "index")]
    expected = expected_rows_with_source(zone, TABLE, spec["framing"], spec.get("value_schema", "record"))
    assert_same_rows(project(collect_plain(df), ["header__change_seq", "EMP_ID", *coordinates]),
                     project(expected, ["header__change_seq", "EMP_ID", *coordinates]))


@pytest.mark.parametrize("zone_name", FRAMING_ZONES)
def test_include_source_position_and_index_locate_each_message_in_its_file(spark, landing_zone, zone_name):
    """position: the container block's start (index: the record in it), or the frame's start."""
    zone = landing_zone(zone_name)
    spec = ZONE_SPECS[zone_name]
    df = read_table(spark, zone, TABLE, includeSource="true")
    located = ["header__change_seq", "EMP_ID", f"{SOURCE}.file", f"{SOURCE}.position", f"{SOURCE}.index"]
    expected = expected_rows_with_source(zone, TABLE, spec["framing"], spec.get("value_schema", "record"))
    assert_same_rows(project(collect_plain(df), located), project(expected, located))


def test_include_source_rows_equal_the_generated_rows_in_full(spark, avro_zone):
    df = read_table(spark, avro_zone, TABLE, includeSource="true")
    coordinates_only = [c for c in df.columns if c != SOURCE] + \
        [f"{SOURCE}.{name}" for name in ("topic", "partition", "offset", "timestamp", "key")]
    assert_same_rows(project(collect_plain(df), coordinates_only),
                     project(expected_rows_with_source(avro_zone, TABLE, "avro"), coordinates_only))


# -- valueField ------------------------------------------------------------------------------------


def rename_value_field(source_dir, target_dir, name: str) -> None:
    """Copies a topic of Kafka-record container files with the ``value`` field renamed."""
    target_dir.mkdir()
    for source in source_dir.iterdir():
        with open(source, "rb") as stream:
            container = fastavro.reader(stream)
            schema = dict(container.writer_schema)
            records = [{(name if k == "value" else k): v for k, v in r.items()} for r in container]
        schema["fields"] = [{**f, "name": name} if f["name"] == "value" else f for f in schema["fields"]]
        with open(target_dir / source.name, "wb") as stream:
            fastavro.writer(stream, schema, records)


def test_value_field_names_the_field_that_holds_the_message(spark, avro_zone, tmp_path):
    """The same landed records (data and schema topics) with the envelope in a field ``payload``."""
    rename_value_field(avro_zone.topics["hr"], tmp_path / "hr", "payload")
    rename_value_field(avro_zone.schema_topic, tmp_path / "schema", "payload")
    df = read_table(spark, avro_zone, TABLE, schema_topic=False, paths=[tmp_path / "hr"],
                    schemaTopic=str(tmp_path / "schema"), valueField="payload")
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, TABLE))


# -- option names and values ----------------------------------------------------------------------


def test_option_names_are_case_insensitive(spark, avro_zone):
    reader = (spark.read.format("replicate")
              .option("SCHEMATOPIC", str(avro_zone.schema_topic))
              .option("Table", TABLE)
              .option("EXPANDMASKS", "FALSE")
              .option("includesource", "True")
              .option("FRAMING", "AVRO")
              .option("ValueField", "value")
              .option("MODE", "failfast"))
    df = reader.load(str(avro_zone.topics["hr"]))
    assert not set(MASK_COLUMNS) & set(df.columns)
    assert df.columns[-1] == SOURCE
    kept = [c for c in df.columns if c != SOURCE]
    assert_same_rows(project(collect_plain(df), kept),
                     project(expected_rows(avro_zone, TABLE, expand_masks=False), kept))


@pytest.mark.parametrize("option, value", [
    ("expandMasks", "yes"),
    ("includeSource", "1"),
    ("mode", "LENIENT"),
    ("framing", "json"),
    ("table", "EMPLOYEES"),
])
def test_an_invalid_value_fails_naming_the_option(spark, avro_zone, option, value):
    options = {"table": TABLE, option: value}
    with raises_replicate("REPLICATE_INVALID_OPTION", f"`{option}`", value):
        read_table(spark, avro_zone, options.pop("table"), paths=[avro_zone.topics["hr"]], **options)


def test_an_invalid_value_fails_whatever_the_case_of_the_option_name(spark, avro_zone):
    with raises_replicate("REPLICATE_INVALID_OPTION", "expandMasks", "maybe"):
        read_table(spark, avro_zone, TABLE, EXPANDMASKS="maybe")


def test_a_value_field_that_the_records_lack_fails_naming_the_option(spark, avro_zone):
    with raises_replicate("REPLICATE_INVALID_OPTION", "valueField", "payload") as message:
        read_table(spark, avro_zone, TABLE, valueField="payload").collect()
    assert "value" in message[0]


# -- the Python shorthand ---------------------------------------------------------------------


def test_read_shorthand_with_snake_case_options_equals_the_long_form(spark, avro_zone):
    long_form = read_table(spark, avro_zone, TABLE, expandMasks="false", includeSource="true", framing="avro",
                           valueField="value", mode="FAILFAST")
    short = spark_replicate.read(spark, str(avro_zone.topics["hr"]), schema_topic=str(avro_zone.schema_topic),
                                 table=TABLE, expand_masks=False, include_source=True, framing="avro",
                                 value_field="value", mode="FAILFAST")
    assert short.schema == long_form.schema
    assert_same_rows(collect_plain(short), collect_plain(long_form))


def test_read_shorthand_takes_several_paths_and_schema_topics(spark, avro_zone):
    df = spark_replicate.read(spark, [str(avro_zone.topics["hr"]), str(avro_zone.topics["sales"])],
                              schema_topic=[str(avro_zone.schema_topic)], table="SALES.ORDERS")
    assert df.columns[-len(HEADER_COLUMNS) - 3:-3] == HEADER_COLUMNS
    assert_same_rows(collect_plain(df), expected_rows(avro_zone, "SALES.ORDERS"))
