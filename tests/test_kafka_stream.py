"""``spark.readStream.format("replicate")`` over Apache Kafka: Spark's own Kafka source decides the
micro-batches and the offsets in the checkpoint; every message reaches a Parquet file sink exactly
once, through triggers, limits, a stop and restart, and a driver killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from _cluster import python_group
from _kafka import PREFIX, fingerprint, kafka_read
from conftest import SOURCE

pytestmark = pytest.mark.kafka

TABLE, TOPIC = "SALES.ORDERS", "sales"


def records_in_topic(zone, topic: str) -> int:
    from test_kafka_publish import landed
    return len(landed(zone.topics[topic]))


def write_stream(df, sink: Path, checkpoint: Path, **trigger):
    return (df.writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(checkpoint))
            .trigger(**trigger).start())


def assert_exactly_once(spark: SparkSession, sink: Path, zone, kafka_bootstrap: str) -> None:
    """The sink holds every message of the table once: as the batch read, and no record twice."""
    written = spark.read.parquet(str(sink))
    assert written.count() == written.select(f"{SOURCE}.partition", f"{SOURCE}.offset").distinct().count()
    assert written.count() == len(zone.messages_for(TABLE))
    assert fingerprint(written) == fingerprint(kafka_read(spark, kafka_bootstrap, TOPIC, table=TABLE,
                                                          includeSource=True))


def batch_sizes(query) -> list[int]:
    """Records per micro-batch that read any, from the Kafka offsets in each batch's progress."""
    def total(offsets: dict | None) -> int:
        return sum(sum(partitions.values()) for partitions in (offsets or {}).values())
    sources = [json.loads(progress.json)["sources"][0] for progress in query.recentProgress]
    sizes = [total(source["endOffset"]) - total(source["startOffset"]) for source in sources]
    return [size for size in sizes if size]


def test_available_now_with_max_offsets_per_trigger(spark, kafka_zone, kafka_bootstrap, tmp_path):
    df = kafka_read(spark, kafka_bootstrap, TOPIC, stream=True, table=TABLE, includeSource=True,
                    startingOffsets="earliest", maxOffsetsPerTrigger=200)
    query = write_stream(df, tmp_path / "sink", tmp_path / "checkpoint", availableNow=True)
    query.awaitTermination()
    sizes = batch_sizes(query)
    assert len(sizes) > 1 and max(sizes) <= 200 and sum(sizes) == records_in_topic(kafka_zone, TOPIC)
    assert_exactly_once(spark, tmp_path / "sink", kafka_zone, kafka_bootstrap)


def test_a_processing_time_trigger(spark, kafka_zone, kafka_bootstrap, tmp_path):
    df = kafka_read(spark, kafka_bootstrap, TOPIC, stream=True, table=TABLE, includeSource=True,
                    startingOffsets="earliest")
    query = write_stream(df, tmp_path / "sink", tmp_path / "checkpoint", processingTime="1 second")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert_exactly_once(spark, tmp_path / "sink", kafka_zone, kafka_bootstrap)


@pytest.mark.smoke
def test_a_query_stopped_and_restarted_from_its_checkpoint(spark, kafka_zone, kafka_bootstrap, tmp_path):
    def stream():
        return kafka_read(spark, kafka_bootstrap, TOPIC, stream=True, table=TABLE, includeSource=True,
                          startingOffsets="earliest", maxOffsetsPerTrigger=100)
    first = write_stream(stream(), tmp_path / "sink", tmp_path / "checkpoint", processingTime="100 milliseconds")
    try:
        deadline = time.monotonic() + 120
        while len(batch_sizes(first)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        first.stop()
    committed = sum(batch_sizes(first))
    assert 0 < committed < records_in_topic(kafka_zone, TOPIC)
    write_stream(stream(), tmp_path / "sink", tmp_path / "checkpoint", availableNow=True).awaitTermination()
    assert_exactly_once(spark, tmp_path / "sink", kafka_zone, kafka_bootstrap)


STREAMING_DRIVER = """
    import sys
    import spark_replicate
    from pyspark.sql import SparkSession

    bootstrap, topic, schema_topic, table, sink, checkpoint = sys.argv[1:]
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    spark = spark_replicate.configure_spark(builder, kafka=True).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = (spark.readStream.format("replicate").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("schemaTopic", schema_topic).option("table", table)
          .option("includeSource", "true").option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", "100").load())
    (df.writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
     .trigger(processingTime="0 seconds").start().awaitTermination())
"""


@pytest.mark.slow
def test_a_driver_killed_mid_batch_and_restarted(spark, kafka_zone, kafka_bootstrap, tmp_path):
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"

    def driver() -> subprocess.Popen:
        return python_group(STREAMING_DRIVER, kafka_bootstrap, PREFIX + TOPIC, PREFIX + "_schema", TABLE, str(sink),
                            str(checkpoint), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def batches(kind: str) -> set[str]:
        folder = checkpoint / kind
        return {p.name for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()

    running = driver()
    try:
        # Killed once a batch is planned (its offsets written) but not yet committed, after two
        # committed ones.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and running.poll() is None:
            if len(batches("commits")) >= 2 and batches("offsets") - batches("commits"):
                break
            time.sleep(0.01)
        assert running.poll() is None, running.stderr.read().decode()[-3000:]
        os.killpg(running.pid, signal.SIGKILL)
        running.wait(timeout=60)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert len(batches("commits")) >= 2
    # The same query restarted on the checkpoint, by this process (a JVM other than the killed one).
    df = kafka_read(spark, kafka_bootstrap, TOPIC, stream=True, table=TABLE, includeSource=True,
                    startingOffsets="earliest", maxOffsetsPerTrigger=100)
    restarted = write_stream(df, sink, checkpoint, availableNow=True)
    try:
        assert restarted.awaitTermination(300), "the restarted query did not finish in time"
    finally:
        restarted.stop()
    assert_exactly_once(spark, sink, kafka_zone, kafka_bootstrap)
