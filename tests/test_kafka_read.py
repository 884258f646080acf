"""``format("replicate")`` over Apache Kafka, in batch: Spark's own Kafka source reads a real broker
(tests/_kafka.py) and the connector decodes the records. The generator publishes a task to Kafka
and lands the same messages as files, so each Kafka read is compared with the file reader on the
same messages: counts and checksums per table and operation."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaAdminClient, TopicPartition
from pyspark.errors import IllegalArgumentException

import spark_replicate
from _kafka import PREFIX, fingerprint, generic_fingerprint, kafka_read, kafka_values, publish
from conftest import SOURCE, read_table, smoke_cases
from spark_replicate.generate import SCHEMA_TOPIC

pytestmark = pytest.mark.kafka

@pytest.mark.parametrize("table", smoke_cases([pytest.param(t, id=t) for t in
                                                 ["HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS", "INV.ITEMS"]],
                                                {"SALES.ORDERS"}))
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
    assert generic_fingerprint(from_kafka) == generic_fingerprint(from_files)


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


def test_a_batch_read_cuts_the_topic_for_every_core(spark, kafka_zone, kafka_bootstrap):
    """Three offset ranges per core, as Spark's Kafka source cuts them for `minPartitions`, unless the
    read sets `minPartitions` or `maxRecordsPerPartition`, or `failOnDataLoss` false (whose records lost
    from a cut partition Spark's reader fails on): then Spark's own cut, one task per partition."""
    def tasks(reader, **options):
        return reader(**options).rdd.getNumPartitions()

    def spark_own(**options):
        return kafka_values(spark, kafka_bootstrap, "sales", **options)

    def ours(**options):
        return kafka_read(spark, kafka_bootstrap, "sales", table="SALES.ORDERS", **options)

    partitions = len({m.partition for m in kafka_zone.messages if m.topic == "sales"})
    cores = spark.sparkContext.defaultParallelism
    assert tasks(spark_own) == partitions < cores * 3
    assert tasks(ours) == tasks(spark_own, minPartitions=cores * 3) > partitions
    assert tasks(ours, minPartitions=1) == tasks(ours, maxRecordsPerPartition=10**9) == partitions
    assert tasks(ours, failOnDataLoss="false") == partitions
    assert ours().count() == ours(minPartitions=1).count() == len(kafka_zone.messages_for("SALES.ORDERS"))


def test_metadata_view_of_the_schema_topic(spark, kafka_zone, kafka_bootstrap):
    df = kafka_read(spark, kafka_bootstrap, SCHEMA_TOPIC, schema_topic=False, messages="metadata")
    assert sorted((r.schema_name + "." + r.table_name, r.table_version) for r in df.collect()) == \
        sorted((m.table, m.version) for m in kafka_zone.metadata)


def test_exactly_one_subscription_is_required(spark, kafka_bootstrap):
    with pytest.raises(IllegalArgumentException, match="REPLICATE_INVALID_OPTION.*exactly one of"):
        spark.read.format("replicate").option("kafka.bootstrap.servers", kafka_bootstrap).load()


# --------------------------------------------------------------------------------------------
# Bad records: malformed values under each mode, tombstones, records lost to retention
# --------------------------------------------------------------------------------------------

GARBAGE_AT, TOMBSTONE_AT, TRUNCATED_AT = 2, 4, 6


@pytest.fixture(scope="module")
def bad_topic(kafka_zone, kafka_bootstrap) -> tuple[str, int]:
    """One partition of good SALES.ORDERS messages with a value that is no envelope, a tombstone
    and a truncated message among them; returns the topic and its number of good messages."""
    from test_kafka_publish import landed

    by_offset = {(p, o): value for p, o, _, _, value in landed(kafka_zone.topics["sales"])}
    good = [by_offset[(m.partition, m.offset)] for m in kafka_zone.messages_for("SALES.ORDERS")[:8]]
    values = list(good)
    values.insert(GARBAGE_AT, b"not a Replicate message")
    values.insert(TOMBSTONE_AT, None)
    values.insert(TRUNCATED_AT, good[0][:-7])
    publish(kafka_bootstrap, PREFIX + "bad", [(0, b"k", value) for value in values])
    return "bad", len(good)


def test_failfast_names_the_topic_partition_and_offset(spark, kafka_bootstrap, bad_topic):
    with pytest.raises(Exception, match=rf"REPLICATE_BAD_MAGIC.*topic {PREFIX}bad, partition 0, offset {GARBAGE_AT}"):
        # One task reads the partition, so the first bad record fails the read: the offset ranges a
        # batch read is otherwise cut into would race to fail first.
        kafka_read(spark, kafka_bootstrap, bad_topic[0], table="SALES.ORDERS", minPartitions=1).collect()


def test_permissive_keeps_the_bad_records_and_counts_the_tombstone_apart(spark, kafka_bootstrap, bad_topic):
    rows = kafka_read(spark, kafka_bootstrap, bad_topic[0], table="SALES.ORDERS", mode="PERMISSIVE",
                      includeSource=True).collect()
    corrupt = sorted((r["header__source"]["offset"], r["_corrupt_record"]["reason"]) for r in rows
                     if r["_corrupt_record"] is not None)
    assert corrupt == [(GARBAGE_AT, "REPLICATE_BAD_MAGIC"), (TRUNCATED_AT, "REPLICATE_TRUNCATED")]
    assert len(rows) == bad_topic[1] + 2
    metrics = spark_replicate.last_read_metrics(spark)
    assert (metrics["tombstones"], metrics["malformed"], metrics["messagesRead"]) == (1, 2, bad_topic[1] + 2)


def test_dropmalformed_drops_the_bad_records(spark, kafka_bootstrap, bad_topic):
    df = kafka_read(spark, kafka_bootstrap, bad_topic[0], table="SALES.ORDERS", mode="DROPMALFORMED")
    assert df.count() == bad_topic[1]
    metrics = spark_replicate.last_read_metrics(spark)
    assert (metrics["dropped"], metrics["tombstones"]) == (2, 1)


def test_fail_on_data_loss_decides_about_records_gone_from_the_topic(spark, kafka_zone, kafka_bootstrap):
    """Records deleted from the head of the topic (as retention would) and asked for by offset."""
    from test_kafka_publish import landed

    topic = PREFIX + "lossy"
    publish(kafka_bootstrap, topic, [(0, None, value) for *_, value in sorted(landed(kafka_zone.topics["sales"]))[:10]])
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.delete_records({TopicPartition(topic, 0): 5})
    admin.close()
    offsets = dict(startingOffsets=json.dumps({topic: {"0": 0}}), layout="generic", includeSource=True)
    with pytest.raises(Exception, match="data may have been lost|lost"):
        kafka_read(spark, kafka_bootstrap, "lossy", **offsets).collect()
    rows = kafka_read(spark, kafka_bootstrap, "lossy", failOnDataLoss="false", **offsets).collect()
    assert rows and min(r["header__source"]["offset"] for r in rows) >= 5
