"""``format("replicate")`` over Apache Kafka, in batch: Spark's own Kafka source reads a real broker
(tests/_kafka.py) and the connector decodes the records. The generator publishes a task to Kafka
and lands the same messages as files, so each Kafka read is compared with the file reader on the
same messages: counts and checksums per table and operation."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer
from pyspark.errors import IllegalArgumentException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import spark_replicate
from conftest import SOURCE, evolving_tables, read_table
from spark_replicate.generate import SCHEMA_TOPIC, default_tables, generate_landing_zone

pytestmark = pytest.mark.kafka

PREFIX = "read-"


@pytest.fixture(scope="module")
def kafka_zone(tmp_path_factory, kafka_bootstrap):
    """Several tables on one topic (hr), a table of three versions (inventory), before-images and
    masks, three partitions per topic, metadata also in the data topics; landed and published."""
    return generate_landing_zone(tmp_path_factory.mktemp("kafka-read") / "landing", messages=1500, seed=117,
                                 tables=default_tables() + evolving_tables(), files_per_topic=3,
                                 md_in_data_topics=True, kafka=kafka_bootstrap, kafka_topic_prefix=PREFIX)


def kafka_read(spark: SparkSession, bootstrap: str, topic: str, schema_topic: bool = True, **options) -> DataFrame:
    reader = (spark.read.format("replicate").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", PREFIX + topic))
    if schema_topic:
        reader = reader.option("schemaTopic", PREFIX + SCHEMA_TOPIC)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def fingerprint(df: DataFrame) -> dict[str, tuple[int, int]]:
    """Per operation: (rows, sum of a hash of every column but ``header__source``)."""
    columns = [c for c in df.columns if c != SOURCE]
    rows = (df.groupBy("header__operation")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.xxhash64(*columns).cast("decimal(38,0)")).alias("h"))
            .collect())
    return {r["header__operation"]: (r["n"], int(r["h"])) for r in rows}


@pytest.mark.parametrize("table", ["HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS", "INV.ITEMS"])
def test_a_table_read_from_kafka_equals_the_file_read(spark, kafka_zone, kafka_bootstrap, table):
    topic = next(t.topic for t in kafka_zone.tables if t.name == table)
    from_kafka = fingerprint(kafka_read(spark, kafka_bootstrap, topic, table=table))
    assert from_kafka == fingerprint(read_table(spark, kafka_zone, table))
    assert sum(n for n, _ in from_kafka.values()) == len(kafka_zone.messages_for(table))


def test_the_generic_layout_with_metadata_from_the_data_topics(spark, kafka_zone, kafka_bootstrap):
    from_kafka = kafka_read(spark, kafka_bootstrap, "hr", schema_topic=False, layout="generic")
    from_files = read_table(spark, kafka_zone, None, paths=[kafka_zone.topics["hr"]], schema_topic=False,
                            layout="generic")
    for df in (from_kafka, from_files):
        assert "data" in df.columns
    by_table = lambda df: {(r[0], r[1]): r[2] for r in df.groupBy("header__table_name", "header__operation")
                           .agg(F.sum(F.xxhash64(F.to_json("data"), "header__change_seq").cast("decimal(38,0)")))
                           .collect()}
    assert by_table(from_kafka) == by_table(from_files)


def test_several_topics_by_pattern(spark, kafka_zone, kafka_bootstrap):
    df = (spark.read.format("replicate").option("kafka.bootstrap.servers", kafka_bootstrap)
          .option("subscribePattern", PREFIX + "(hr|sales)").option("schemaTopic", PREFIX + SCHEMA_TOPIC)
          .option("layout", "generic").load())
    expected = sum(1 for m in kafka_zone.messages if m.topic in ("hr", "sales"))
    assert df.count() == expected


def test_the_source_column_carries_the_kafka_coordinates(spark, kafka_zone, kafka_bootstrap):
    df = kafka_read(spark, kafka_bootstrap, "sales", table="SALES.ORDERS", includeSource=True)
    source = df.schema[SOURCE].dataType
    assert all(source[name].nullable for name in ("file", "position", "index"))
    rows = df.select(f"{SOURCE}.*").collect()
    assert {(r["file"], r["position"], r["index"]) for r in rows} == {(None, None, None)}
    assert {r.topic for r in rows} == {PREFIX + "sales"}
    expected = {(m.partition, m.offset, m.key, m.timestamp_ms) for m in kafka_zone.messages_for("SALES.ORDERS")}
    assert {(r.partition, r.offset, bytes(r.key), int(r.timestamp.timestamp() * 1000)) for r in rows} == expected


def test_starting_and_ending_offsets_select_the_records(spark, kafka_zone, kafka_bootstrap):
    topic = PREFIX + "sales"
    df = kafka_read(spark, kafka_bootstrap, "sales", table="SALES.ORDERS", includeSource=True,
                    startingOffsets=json.dumps({topic: {"0": 10, "1": -2, "2": 40}}),
                    endingOffsets=json.dumps({topic: {"0": 60, "1": 25, "2": -1}}))
    got = {(r.partition, r.offset) for r in df.select(f"{SOURCE}.*").collect()}
    expected = {(m.partition, m.offset) for m in kafka_zone.messages_for("SALES.ORDERS")
                if (m.partition == 0 and 10 <= m.offset < 60) or (m.partition == 1 and m.offset < 25)
                or (m.partition == 2 and m.offset >= 40)}
    assert got == expected and got


def test_metadata_view_of_the_schema_topic(spark, kafka_zone, kafka_bootstrap):
    df = kafka_read(spark, kafka_bootstrap, SCHEMA_TOPIC, schema_topic=False, messages="metadata")
    assert sorted((r.schema_name + "." + r.table_name, r.table_version) for r in df.collect()) == \
        sorted((m.table, m.version) for m in kafka_zone.metadata)


def test_exactly_one_subscription_is_required(spark, kafka_bootstrap):
    with pytest.raises(IllegalArgumentException, match="REPLICATE_INVALID_OPTION.*exactly one of"):
        spark.read.format("replicate").option("kafka.bootstrap.servers", kafka_bootstrap).load()
