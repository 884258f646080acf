"""``metadataWait``: data whose metadata lands after the query was planned waits for it.

The zone's ``INV.ITEMS`` has versions 1 to 3; the metadata messages of versions 2 and 3 are held
back from the schema topic, and land (in a thread) while the query runs, or never.
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from conftest import evolving_tables, raises_replicate, read_metrics
from spark_replicate.functions import from_replicate
from spark_replicate.generate import generate_landing_zone

TABLE = "INV.ITEMS"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("late-metadata") / "landing"
    return generate_landing_zone(root, framing="message", tables=evolving_tables(), messages=200, seed=131)


@pytest.fixture
def zone(generated, tmp_path):
    """A copy of the zone whose schema topic lacks versions 2 and 3; ``land()`` puts them back."""
    root = tmp_path / "landing"
    shutil.copytree(generated.root, root)
    schema_topic = root / generated.schema_topic.relative_to(generated.root)
    late = [e.schema_id.encode() for e in generated.metadata if e.table == TABLE and e.version > 1]
    held = tmp_path / "held"
    held.mkdir()
    for path in sorted(p for p in schema_topic.rglob("*") if p.is_file()):
        if any(schema_id in path.read_bytes() for schema_id in late):
            shutil.move(path, held / path.name)
    assert len(list(held.iterdir())) == 2

    class Zone:
        topic = str(root / generated.topics[evolving_tables()[0].topic].relative_to(generated.root))
        schema = str(schema_topic)
        messages = generated.messages_for(TABLE)

        @staticmethod
        def land(after: float = 0.0) -> threading.Thread:
            """Moves the held metadata into the schema topic ``after`` seconds from now."""
            def move():
                time.sleep(after)
                for path in held.iterdir():
                    shutil.move(path, schema_topic / path.name)
            thread = threading.Thread(target=move)
            thread.start()
            return thread
    return Zone


def read(spark, zone, **options):
    return spark.read.format("replicate").options(schemaTopic=zone.schema, table=TABLE, **options).load(zone.topic)


def by_version(rows) -> dict[int, int]:
    counts: dict[int, int] = {}
    for row in rows:
        counts[row.header__table_version] = counts.get(row.header__table_version, 0) + 1
    return counts


def expected_by_version(zone) -> dict[int, int]:
    counts: dict[int, int] = {}
    for message in zone.messages:
        counts[message.table_version] = counts.get(message.table_version, 0) + 1
    return counts


def test_messages_wait_for_metadata_landing_after_planning_and_decode_with_it(spark, zone):
    frame = read(spark, zone, layout="generic", metadataWait="60s")
    frame.schema  # planned: only version 1 is known
    landing = zone.land(after=2)
    rows = frame.select("header__table_version").collect()
    landing.join()
    assert by_version(rows) == expected_by_version(zone)
    metrics = read_metrics(spark)
    assert metrics["malformed"] == 0 and metrics["metadataWaits"] >= 1 and metrics["metadataWaitMillis"] > 0


def test_without_a_wait_the_unknown_schema_id_is_malformed_and_the_error_says_to_wait(spark, zone):
    frame = read(spark, zone, layout="generic")
    frame.schema
    zone.land().join()
    with raises_replicate("REPLICATE_UNKNOWN_SCHEMA_ID", "metadataWait"):
        frame.collect()


def test_metadata_that_never_lands_waits_once_then_the_mode_decides(spark, zone):
    frame = read(spark, zone, layout="generic", metadataWait="1s", mode="PERMISSIVE")
    tasks = frame.rdd.getNumPartitions()
    rows = frame.collect()
    late = sum(1 for m in zone.messages if m.table_version > 1)
    corrupt = [r for r in rows if r._corrupt_record is not None]
    assert len(corrupt) == late and {r._corrupt_record.reason for r in corrupt} == {"REPLICATE_UNKNOWN_SCHEMA_ID"}
    assert len(rows) - late == expected_by_version(zone)[1]
    # Each task waits once per missing schema id, whatever number of its messages carry it.
    versions = {m.table_version for m in zone.messages if m.table_version > 1}
    assert 1 <= read_metrics(spark)["metadataWaits"] <= len(versions) * tasks


def test_a_late_version_with_new_columns_stops_a_flat_read_naming_them(spark, zone):
    frame = read(spark, zone, metadataWait="60s")
    assert "COLOR" not in frame.columns
    zone.land().join()
    with raises_replicate("REPLICATE_SCHEMA_CHANGED", TABLE, "COLOR", "Run the query again"):
        frame.collect()
    assert "COLOR" in read(spark, zone).columns


def test_from_replicate_waits_as_the_reader_does(spark, zone):
    values = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(zone.topic)
              .selectExpr("content AS value"))
    frame = values.select(from_replicate("value", {"schemaTopic": zone.schema, "layout": "generic",
                                                   "metadataWait": "60s"}).alias("r"))
    frame.schema
    landing = zone.land(after=2)
    rows = frame.select("r.header__table_version").collect()
    landing.join()
    assert by_version(rows) == expected_by_version(zone)


def test_metadata_wait_must_be_a_duration(spark, zone):
    with raises_replicate("REPLICATE_INVALID_OPTION", "metadataWait", "30s"):
        read(spark, zone, metadataWait="soon").schema
