"""A stream whose data files land before the schema-topic files of their table versions
(README "Streaming" and "Metadata that arrives late"): with enough ``metadataWait`` a batch
waits and decodes them; without, ``mode`` decides and nothing is lost; a late version that does
not fit a flat stream stops it from a task, and the restart reads every message once.

The late metadata lands from a thread started by the ``foreachBatch`` of the batch that needs it:
that batch was planned (its files and metadata logged) before it landed, whatever the timing."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame

from _streams import Landing, as_json, batch, evolving_table, rows, stream
from spark_replicate.generate import LandingZone, default_tables, generate_landing_zone

LATE_AFTER_SECONDS = 2


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> LandingZone:
    """HR.EMPLOYEES, HR.DEPARTMENTS, SALES.ORDERS, and INV.ITEMS with versions 1 to 4; one file per message."""
    return generate_landing_zone(tmp_path_factory.mktemp("late-staged") / "zone", framing="message",
                                 tables=default_tables() + [evolving_table()], messages=240, seed=185)


@pytest.fixture
def landing(staged, tmp_path) -> Landing:
    return Landing(staged, tmp_path / "landing")


class LateMetadata:
    """Schema-topic files held back until the next batch runs: its ``foreachBatch`` calls
    ``batch_started``, which lands them from a thread ``LATE_AFTER_SECONDS`` later."""

    def __init__(self, landing: Landing):
        self.landing, self.held, self.threads = landing, [], []

    def hold(self, files: list[Path]) -> None:
        self.held = [f for f in files if f not in self.landing.landed]

    def batch_started(self) -> None:
        if self.held:
            files, self.held = self.held, []
            thread = threading.Thread(target=lambda: (time.sleep(LATE_AFTER_SECONDS), self.landing.land(files)))
            thread.start()
            self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join()


def split_by(staged: LandingZone, layout: str):
    """(options, messages landed with their metadata first, messages whose metadata comes late):
    flat INV.ITEMS gets a version that fits its columns late (3 drops WEIGHT); the generic
    layout gets a whole table late (SALES.ORDERS, unknown when the query started)."""
    if layout == "flat":
        items = staged.messages_for("INV.ITEMS")
        return ({"table": "INV.ITEMS"}, [m for m in items if m.table_version <= 2],
                [m for m in items if m.table_version == 3])
    return ({"layout": "generic"}, [m for m in staged.messages if m.topic == "hr"],
            [m for m in staged.messages if m.topic == "sales"])


def collecting(sink: Counter, late: LateMetadata | None = None):
    """A ``foreachBatch`` adding the batch's rows to ``sink`` once they are all read."""
    def run(df: DataFrame, _: int) -> None:
        if late is not None:
            late.batch_started()
        sink.update(rows(as_json(df)))
    return run


@pytest.mark.parametrize("layout", ["flat", "generic"])
def test_data_landed_before_its_metadata_waits_for_it_and_is_decoded(spark, staged, landing, tmp_path, layout):
    options, first, late_messages = split_by(staged, layout)
    landing.land_messages(first)
    late, sink = LateMetadata(landing), Counter()
    query = (stream(spark, landing, metadataWait="60s", **options).writeStream
             .foreachBatch(collecting(sink, late)).option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        late.hold(landing.metadata_of(late_messages))
        landing.land([m.file for m in late_messages])
        query.processAllAvailable()
    finally:
        query.stop()
        late.join()
    expected = rows(as_json(batch(spark, landing, **options)))
    assert sum(expected.values()) == len(first) + len(late_messages)
    assert sink == expected  # every row decoded (FAILFAST would have failed on any unknown schema id)
    assert source_metric_sum(query, "metadataWaits") >= 1 and source_metric_sum(query, "metadataWaitMillis") > 0


def source_metric_sum(query, metric: str) -> int:
    """The replicate source's ``metric`` summed over the query's batches, from their progress."""
    return sum(int(p["sources"][0]["metrics"][metric]) for p in query.recentProgress)


@pytest.mark.parametrize("layout", ["flat", "generic"])
def test_without_enough_wait_permissive_quarantines_the_messages_and_loses_none(spark, staged, landing, tmp_path,
                                                                               layout):
    options, first, late_messages = split_by(staged, layout)
    landing.land_messages(first)
    reasons: Counter = Counter()

    def record(df: DataFrame, _: int) -> None:
        reasons.update(r.reason for r in df.select("_corrupt_record.reason").collect())

    query = (stream(spark, landing, metadataWait="1s", mode="PERMISSIVE", **options).writeStream
             .foreachBatch(record).option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        landing.land([m.file for m in late_messages])  # their metadata never lands during the query
        query.processAllAvailable()
    finally:
        query.stop()
    assert reasons == {None: len(first), "REPLICATE_UNKNOWN_SCHEMA_ID": len(late_messages)}
    assert source_metric_sum(query, "metadataWaits") >= 1


def test_without_enough_wait_failfast_fails_and_a_restart_once_the_metadata_landed_reads_the_batch(
        spark, staged, landing, tmp_path):
    options, first, late_messages = split_by(staged, "flat")
    landing.land_messages(first)
    sink: Counter = Counter()

    def start():
        return (stream(spark, landing, **options).writeStream.foreachBatch(collecting(sink))
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    query = start()
    try:
        query.processAllAvailable()
        landing.land([m.file for m in late_messages])
        with pytest.raises(StreamingQueryException, match="REPLICATE_UNKNOWN_SCHEMA_ID") as failure:
            query.processAllAvailable()
    finally:
        query.stop()
    assert late_messages[0].schema_id in str(failure.value) and "metadataWait" in str(failure.value)
    # The failed batch's log holds no metadata of its version; the restart knows it, still with no wait.
    landing.land(landing.metadata_of(late_messages))
    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    expected = rows(as_json(batch(spark, landing, **options)))
    assert sum(expected.values()) == len(first) + len(late_messages) and sink == expected


def test_a_late_version_a_task_finds_misfitting_stops_the_stream_and_the_restart_reads_each_message_once(
        spark, staged, landing, tmp_path):
    items = {v: [m for m in staged.messages_for("INV.ITEMS") if m.table_version == v] for v in (1, 2, 3)}
    late, sink = LateMetadata(landing), Counter()
    schemas: list[list[str]] = []

    def start():
        df = stream(spark, landing, table="INV.ITEMS", metadataWait="60s")
        schemas.append(df.columns)
        return (df.writeStream.foreachBatch(collecting(sink, late))
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    landing.land_messages(items[1])
    query = start()
    try:
        query.processAllAvailable()
        # Version 2 adds COLOR: its data lands first; the batch reading it was planned without its metadata,
        # and the task that waits for it finds that the stream's columns cannot hold it.
        late.hold(landing.metadata_of(items[2]))
        landing.land([m.file for m in items[2]])
        with pytest.raises(StreamingQueryException, match="REPLICATE_SCHEMA_CHANGED") as failure:
            query.processAllAvailable()
    finally:
        query.stop()
        late.join()
    assert "COLOR" in str(failure.value) and "restart it from its checkpoint" in str(failure.value)
    assert not any('"header__table_version":2' in row for _, _, row in sink)

    query = start()  # the restart: COLOR is in the schema; the failed batch runs again with its logged files
    try:
        query.processAllAvailable()
        landing.land_messages(items[3])
        query.processAllAvailable()
    finally:
        query.stop()
    assert "COLOR" not in schemas[0] and "COLOR" in schemas[1]
    expected = rows(as_json(batch(spark, landing, table="INV.ITEMS")))
    assert sum(expected.values()) == sum(len(m) for m in items.values()) and sink == expected
