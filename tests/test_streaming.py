"""``spark.readStream.format("replicate")`` over a landing zone that grows while the query runs
(README "Streaming"): real streaming queries in ``local[2]`` writing to a Parquet file sink or to
``foreachBatch``, on files moved into the landing paths as a sink lands them (whole, under a
``_``-name first, then renamed), each compared with a batch read of the same landing."""

from __future__ import annotations

import math
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, functions as F

from _cluster import python_group
from _streams import Landing, as_json, batch, checkpoint_batches, evolving_table, kill_when, rows, stream
from conftest import spark_conf
from spark_replicate.generate import LandingZone, generate_landing_zone


def source_metrics(query) -> list[dict[str, int]]:
    """The replicate source's metrics of each batch the query ran."""
    return [{k: int(v) for k, v in p["sources"][0]["metrics"].items()}
            for p in query.recentProgress if p["numInputRows"] or int(p["sources"][0]["metrics"]["filesRead"])]


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> LandingZone:
    """Three tables in two topics (hr: EMPLOYEES and DEPARTMENTS; sales: ORDERS), one file per message."""
    return generate_landing_zone(tmp_path_factory.mktemp("stream-staged") / "zone", framing="message",
                                 messages=240, seed=181)


@pytest.fixture
def landing(staged, tmp_path) -> Landing:
    return Landing(staged, tmp_path / "landing")


def test_files_landed_while_the_query_runs_are_each_read_once(spark, staged, landing, tmp_path):
    hr = [m for m in staged.messages if m.topic == "hr"]
    sales = [m for m in staged.messages if m.topic == "sales"]
    landing.land_messages(hr[:60])
    query = (as_json(stream(spark, landing, layout="generic", maxFilesPerTrigger="25")).writeStream
             .format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        landing.land_messages(hr[60:])
        query.processAllAvailable()
        landing.land_messages(sales)  # a table the query did not know at start flows through
        query.processAllAvailable()
        metrics = source_metrics(query)
    finally:
        query.stop()

    expected = rows(as_json(batch(spark, landing, layout="generic")))
    assert sum(expected.values()) == len(staged.messages)
    assert rows(spark.read.parquet(str(tmp_path / "sink"))) == expected
    assert {table for table, _, _ in expected} == {"EMPLOYEES", "DEPARTMENTS", "ORDERS"}
    # Every data file is one message: batches of at most 25 files, each message read once.
    assert all(m["filesRead"] <= 25 for m in metrics) and len(metrics) >= math.ceil(len(staged.messages) / 25)
    assert sum(m["messagesRead"] for m in metrics) == sum(m["rowsReturned"] for m in metrics) == len(staged.messages)
    assert sum(m["filesRead"] for m in metrics) == len(staged.messages)
    assert metrics[-1]["filesBehind"] == metrics[-1]["bytesBehind"] == 0
    assert any(m["filesBehind"] > 0 for m in metrics) and all(m["malformed"] == 0 for m in metrics)


@pytest.mark.smoke
def test_available_now_reads_the_files_landed_at_start_in_limited_batches(spark, staged, landing, tmp_path):
    hr = [m for m in staged.messages if m.topic == "hr"]
    landing.land_messages(hr[:70])
    seen: list[tuple[int, int]] = []

    def record(df: DataFrame, batch_id: int) -> None:
        seen.append((batch_id, df.count()))
        if batch_id == 0:
            landing.land_messages(hr[70:100])  # lands during the run: left for the next one

    def run() -> None:
        query = (stream(spark, landing, table="HR.EMPLOYEES", layout="generic", maxFilesPerTrigger="30")
                 .writeStream.foreachBatch(record).trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        query.awaitTermination(120)
        assert not query.isActive

    run()
    employees = sum(1 for m in hr[:70] if m.table == "HR.EMPLOYEES")
    # Batches of 30, 30 and 10 files; only HR.EMPLOYEES's messages become rows.
    assert [batch_id for batch_id, _ in seen] == [0, 1, 2] and sum(n for _, n in seen) == employees
    seen.clear()
    run()  # a rerun on the same checkpoint: the files landed since, once
    assert [batch_id for batch_id, _ in seen] == [3]
    assert seen[0][1] == sum(1 for m in hr[70:100] if m.table == "HR.EMPLOYEES")


def test_starting_position_latest_skips_the_files_already_landed(spark, staged, landing, tmp_path):
    hr = [m for m in staged.messages if m.topic == "hr"]
    landing.land_messages(hr[:40])
    sink: list[tuple] = []
    query = (stream(spark, landing, layout="generic", startingPosition="latest").writeStream
             .foreachBatch(lambda df, _: sink.extend(tuple(r) for r in df.select("header__change_seq").collect()))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        landing.land_messages(hr[40:50])
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(sink) == sorted((m.headers["changeSequence"] or None,) for m in hr[40:50])


def test_a_file_that_changes_after_it_was_read_fails_the_query_naming_it(spark, staged, landing, tmp_path):
    hr = [m for m in staged.messages if m.topic == "hr"]
    landing.land_messages(hr[:10])
    query = (stream(spark, landing, layout="generic").writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        rewritten = landing.root / hr[3].file.relative_to(landing.staged.root)
        rewritten.write_bytes(rewritten.read_bytes())  # the same bytes, written again
        os.utime(rewritten, (time.time() + 60, time.time() + 60))
        landing.land_messages(hr[10:12])
        with pytest.raises(StreamingQueryException, match="REPLICATE_FILE_CHANGED") as failure:
            query.processAllAvailable()
    finally:
        query.stop()
    assert str(rewritten) in str(failure.value) and "new checkpoint location" in str(failure.value)


def test_large_container_files_are_split_at_sync_markers(spark, tmp_path):
    staged = generate_landing_zone(tmp_path / "staged", framing="avro", files_per_topic=1, sync_interval=2048,
                                   messages=1500, seed=182)
    landing = Landing(staged, tmp_path / "landing")
    landing.land_all()
    with spark_conf(spark, {"spark.sql.files.maxPartitionBytes": "65536"}):
        query = (as_json(stream(spark, landing, layout="generic")).writeStream.format("parquet")
                 .option("path", str(tmp_path / "sink")).option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
    data_files = [f for f in staged.files if f.parent != staged.schema_topic]
    # One Parquet file per task that wrote rows: the two container files were read by many tasks.
    assert len(list((tmp_path / "sink").glob("part-*.parquet"))) > 2 * len(data_files)
    assert rows(spark.read.parquet(str(tmp_path / "sink"))) == rows(as_json(batch(spark, landing, layout="generic")))


def test_without_a_schema_topic_each_batch_knows_the_metadata_landed_among_the_data(spark, tmp_path):
    staged = generate_landing_zone(tmp_path / "staged", framing="message", md_in_data_topics=True,
                                   messages=90, seed=184)
    landing = Landing(staged, tmp_path / "landing")
    data_files = sorted(f for f in staged.files if f.parent != staged.schema_topic)
    landing.land(data_files[:40])
    query = (as_json(stream(spark, landing, schemaTopic=None, layout="generic", maxFilesPerTrigger="15"))
             .writeStream.format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        landing.land(data_files[40:])
        query.processAllAvailable()
    finally:
        query.stop()
    expected = rows(as_json(batch(spark, landing, schemaTopic=None, layout="generic")))
    assert sum(expected.values()) == len(staged.messages)
    assert rows(spark.read.parquet(str(tmp_path / "sink"))) == expected


def test_a_flat_stream_stops_on_a_new_column_and_a_restart_picks_it_up(spark, tmp_path):
    staged = generate_landing_zone(tmp_path / "staged", framing="message", tables=[evolving_table()],
                                   messages=160, seed=183)
    landing = Landing(staged, tmp_path / "landing")
    by_version = {v: [m for m in staged.messages if m.table_version == v] for v in (1, 2, 3, 4)}
    sink: Counter = Counter()
    schemas: list[list[str]] = []

    def start():
        df = stream(spark, landing, table="INV.ITEMS")
        schemas.append(df.columns)
        return (as_json(df).writeStream.foreachBatch(lambda batch_df, _: sink.update(rows(batch_df)))
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    def run(query, stops_with: list[str] | None = None):
        try:
            if stops_with is None:
                query.processAllAvailable()
                return
            with pytest.raises(StreamingQueryException, match="REPLICATE_SCHEMA_CHANGED") as failure:
                query.processAllAvailable()
            assert all(text in str(failure.value) for text in stops_with), str(failure.value)
            assert "restart the query from the same checkpoint" in str(failure.value)
        finally:
            query.stop()

    landing.land_messages(by_version[1])
    query = start()
    query.processAllAvailable()
    landing.land_messages(by_version[2])
    run(query, ["INV.ITEMS", "new version 2", "new column `COLOR`"])
    assert not any('"header__table_version":2' in row for _, _, row in sink)  # stopped before reading any

    query = start()  # the restart: the schema is chosen again, with COLOR
    query.processAllAvailable()
    landing.land_messages(by_version[3])  # WEIGHT dropped: the stream's columns hold it
    query.processAllAvailable()
    landing.land_messages(by_version[4])
    run(query, ["new version 4", "column `QTY` is bigint, read as int"])

    query = start()
    run(query)
    assert "COLOR" not in schemas[0] and "COLOR" in schemas[1] and "WEIGHT" in schemas[2]
    expected = rows(as_json(batch(spark, landing, table="INV.ITEMS")))
    assert sum(expected.values()) == len(staged.messages) and sink == expected


CRASH_DRIVER = """
    import json, sys
    from pyspark.sql import SparkSession, functions as F
    import spark_replicate

    landing, sink, checkpoint = {landing!r}, {sink!r}, {checkpoint!r}
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    spark = spark_replicate.configure_spark(builder).getOrCreate()
    df = (spark.readStream.format("replicate").option("schemaTopic", landing + "/_schema")
          .option("layout", "generic").option("includeSource", "true").option("maxFilesPerTrigger", "40")
          .load(landing))
    rows = df.select(F.col("header__table_name").alias("table"), "header__operation",
                     F.to_json(F.struct(*sorted(df.columns))).alias("row"))
    (rows.writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
     .trigger(processingTime="0 seconds").start().awaitTermination())
"""


def crash_driver(tmp_path: Path, landing: Landing, log: str) -> subprocess.Popen:
    """A driver program in a process group of its own, so that SIGKILL takes its JVM with it."""
    code = CRASH_DRIVER.format(landing=str(landing.root), sink=str(tmp_path / "sink"),
                               checkpoint=str(tmp_path / "checkpoint"))
    with open(tmp_path / log, "wb") as out:
        return python_group(code, stdout=out, stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_a_driver_killed_mid_batch_resumes_exactly_once_from_its_checkpoint(spark, staged, landing, tmp_path):
    landing.land_messages(staged.messages[:120])
    driver = crash_driver(tmp_path, landing, log="killed.log")
    checkpoint = tmp_path / "checkpoint"
    landing.land_messages(staged.messages[120:])  # lands while the query runs
    # Killed once a batch is planned (in the offset log) and not yet committed, after a first commit.
    kill_when(driver, lambda: bool(checkpoint_batches(checkpoint, "commits")
                                   and checkpoint_batches(checkpoint, "offsets") - checkpoint_batches(checkpoint, "commits")),
              tmp_path / "killed.log", "the streaming driver committed no batch")

    # The same query restarted on the checkpoint, by this process (a JVM other than the killed one).
    restarted = (as_json(stream(spark, landing, layout="generic", maxFilesPerTrigger="40")).writeStream
                 .format("parquet").option("path", str(tmp_path / "sink"))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert restarted.awaitTermination(240), "the restarted query did not finish in time"
    finally:
        restarted.stop()

    def summary(df: DataFrame) -> dict:
        return {(r[0], r[1]): (r[2], r[3]) for r in df.groupBy("table", "header__operation")
                .agg(F.count("*"), F.sum(F.hash("row").cast("long"))).collect()}
    sink = spark.read.parquet(str(tmp_path / "sink"))
    assert summary(sink) == summary(as_json(batch(spark, landing, layout="generic")))
    assert sink.count() == sink.distinct().count() == len(staged.messages)  # each row carries its source
