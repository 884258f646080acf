"""Every landing framing of the README's "Landing formats", named explicitly and sniffed (``auto``), and container
files split at sync markers."""

from __future__ import annotations

import pytest
from fastavro import reader

from conftest import (FRAMING_ZONES, ZONE_SPECS, assert_same_rows, collect_plain, expected_rows, read_table,
                      spark_conf)
from spark_replicate.generate import default_tables

TABLES = [t.name for t in default_tables()]


def framing_of(zone_name: str) -> str:
    return ZONE_SPECS[zone_name]["framing"]


@pytest.mark.parametrize("table", TABLES)
# No `framing` is `framing=auto` (the option's default, one code path), named explicitly in the
# tests of large containers below and in test_file_faults.py.
@pytest.mark.parametrize("framing_option", ["named", "absent"])
@pytest.mark.parametrize("zone_name", FRAMING_ZONES)
def test_every_framing_returns_every_generated_row_exactly_once(spark, landing_zone, zone_name, framing_option,
                                                                table):
    zone = landing_zone(zone_name)
    options = {"named": {"framing": framing_of(zone_name)}, "absent": {}}
    df = read_table(spark, zone, table, **options[framing_option])
    assert_same_rows(collect_plain(df), expected_rows(zone, table))


def test_avro_value_schemas_are_a_kafka_record_and_plain_bytes(landing_zone):
    """Guards the premise of the framing tests: both container layouts are really exercised."""
    def container_schema(zone_name):
        zone = landing_zone(zone_name)
        with open(next(zone.topics["hr"].iterdir()), "rb") as stream:
            return reader(stream).writer_schema
    record = container_schema("avro")
    assert record["type"] == "record"
    assert {f["name"] for f in record["fields"]} == {"topic", "partition", "offset", "timestamp", "key", "value"}
    assert container_schema("avro-bytes") == "bytes"


def test_the_message_framing_lands_one_file_per_message(landing_zone):
    zone = landing_zone("message")
    data_files = [f for f in zone.files if f.parent.name != "_schema"]
    assert len(data_files) == len(zone.messages)


@pytest.mark.parametrize("framing", ["avro", "auto"])
@pytest.mark.parametrize("zone_name", ["large-avro", "large-avro-deflate"])
def test_a_large_container_file_is_split_and_every_message_read_once(spark, landing_zone, zone_name, framing):
    zone = landing_zone(zone_name)
    table = "HR.EMPLOYEES"
    files = list(zone.topics["hr"].iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 4 * 64 * 1024, "the topic should be one large file"
    with spark_conf(spark, {"spark.sql.files.maxPartitionBytes": "64k"}):
        df = read_table(spark, zone, table, framing=framing)
        partitions = df.rdd.getNumPartitions()
        rows = collect_plain(df)
    assert partitions > 1
    assert partitions >= files[0].stat().st_size // (64 * 1024)
    assert_same_rows(rows, expected_rows(zone, table))


def test_the_leaf_node_parallelism_sizes_the_blocks_as_for_spark_file_sources(spark, landing_zone):
    """Without spark.sql.files.minPartitionNum, the bytes per core come from
    spark.sql.leafNodeDefaultParallelism when set, as Spark's file sources take them."""
    zone = landing_zone("large-avro")

    def partitions(cores: int | None) -> int:
        conf = {"spark.sql.files.openCostInBytes": "1k"}
        if cores:
            conf["spark.sql.leafNodeDefaultParallelism"] = str(cores)
        with spark_conf(spark, conf):
            return read_table(spark, zone, "HR.EMPLOYEES").rdd.getNumPartitions()

    assert partitions(None) <= spark.sparkContext.defaultParallelism + 1 < 8 <= partitions(8)


def test_a_small_file_is_one_partition_by_default(spark, landing_zone):
    """Without the small maxPartitionBytes, the same file is not cut up needlessly."""
    zone = landing_zone("large-avro")
    df = read_table(spark, zone, "HR.EMPLOYEES")
    assert df.rdd.getNumPartitions() == 1
