"""Files that change between planning and reading, and empty files (README: ``ignoreMissingFiles``,
``ignoreCorruptFiles``, "Landing formats").

``load()`` plans the read (lists the files, reads the metadata); the action reads them later. A
file deleted or truncated in between must fail the read naming the file, or, with the matching
ignore setting (reader option or Spark's session conf), be skipped and counted in
``filesSkipped`` while everything else, including the messages the damaged file held before the
damage, comes back exactly. Expected rows come from the generator's record of where each message
was landed."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import (assert_same_rows, collect_plain, expected_row, raises_replicate, read_metrics, read_table,
                      record_positions, spark_conf)
from spark_replicate.generate import generate_landing_zone

TABLE = "HR.EMPLOYEES"
FRAMINGS = ["avro", "length-prefixed", "message"]
HOW = ["option", "conf"]


@pytest.fixture
def zone_of(tmp_path):
    """``zone_of(framing, **spec)``: a fresh landing zone of this test's own (it gets damaged)."""
    def make(framing: str, **spec):
        spec = {"messages": 300, "seed": 301, "sync_interval": 1024, **spec}
        return generate_landing_zone(tmp_path / framing, framing=framing, **spec)
    return make


@contextmanager
def ignoring(spark, setting: str, how: str):
    """``ignoreMissingFiles`` / ``ignoreCorruptFiles`` as a reader option, or as Spark's
    ``spark.sql.files.*`` conf (in force when the read is planned); yields the reader options."""
    if how == "option":
        yield {setting: "true"}
    else:
        with spark_conf(spark, {f"spark.sql.files.{setting}": "true"}):
            yield {}


def victim_file(zone) -> Path:
    """A data file holding messages of the table (the one with the middle message)."""
    messages = zone.messages_for(TABLE)
    return messages[len(messages) // 2].file


def record_ends(path: Path, framing: str) -> list[int]:
    """End offset of every landed record of a file, in file order: the end of its container
    block or frame (a record is only readable once all of that is there)."""
    positions = record_positions(path, framing)
    starts = sorted({position for position, _ in positions}) + [path.stat().st_size]
    end_of = dict(zip(starts, starts[1:]))
    return [end_of[position] for position, _ in positions]


def truncate_in_the_middle(path: Path, framing: str):
    """Cuts the file inside its middle record; returns whether a message of the file is still whole."""
    data = path.read_bytes()
    if framing == "message":
        path.write_bytes(data[:len(data) // 2])
        return lambda message: message.file != path
    ends = record_ends(path, framing)
    middle = len(ends) // 2
    start = ends[middle - 1] if middle else 0
    cut = (start + ends[middle]) // 2
    path.write_bytes(data[:cut])
    return lambda message: message.file != path or ends[message.offset] <= cut


def assert_read_skipping_one_file(spark, df, zone, survives) -> None:
    rows = collect_plain(df)
    metrics = read_metrics(spark)
    expected = [expected_row(zone, m) for m in zone.messages_for(TABLE) if survives(m)]
    assert_same_rows(rows, expected)
    assert metrics["filesSkipped"] == 1, metrics
    assert metrics["rowsReturned"] == len(expected) and metrics["malformed"] == 0, metrics


# -- deleted ---------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_file_deleted_after_planning_fails_the_read_naming_it(spark, zone_of, framing):
    zone = zone_of(framing)
    victim = victim_file(zone)
    df = read_table(spark, zone, TABLE, framing=framing)
    victim.unlink()
    with raises_replicate("REPLICATE_FILE_MISSING", victim.name, "ignoreMissingFiles"):
        df.collect()


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_file_deleted_after_planning_is_skipped_and_counted_when_missing_files_are_ignored(spark, zone_of,
                                                                                           framing, how):
    zone = zone_of(framing)
    victim = victim_file(zone)
    with ignoring(spark, "ignoreMissingFiles", how) as options:
        df = read_table(spark, zone, TABLE, framing=framing, **options)
        victim.unlink()
        assert_read_skipping_one_file(spark, df, zone, lambda m: m.file != victim)


# -- truncated -------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_file_truncated_after_planning_fails_the_read_naming_it(spark, zone_of, framing):
    zone = zone_of(framing)
    victim = victim_file(zone)
    df = read_table(spark, zone, TABLE, framing=framing)
    truncate_in_the_middle(victim, framing)
    with raises_replicate("REPLICATE_CORRUPT_FILE", victim.name):
        df.collect()


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_file_truncated_after_planning_keeps_the_messages_before_the_damage_when_corrupt_files_are_ignored(
        spark, zone_of, framing, how):
    zone = zone_of(framing)
    victim = victim_file(zone)
    with ignoring(spark, "ignoreCorruptFiles", how) as options:
        df = read_table(spark, zone, TABLE, framing=framing, **options)
        survives = truncate_in_the_middle(victim, framing)
        assert_read_skipping_one_file(spark, df, zone, survives)


# -- a large container file split across tasks ------------------------------------------------


@pytest.fixture
def split_container(spark, zone_of):
    """One container file per topic, large enough to be cut into several splits (framing auto:
    the reader sniffs it on the driver to split it)."""
    zone = zone_of("avro", messages=3000, files_per_topic=1, sync_interval=2048)
    with spark_conf(spark, {"spark.sql.files.maxPartitionBytes": "64k"}):
        yield zone


def test_a_split_container_deleted_after_planning_fails_the_read_naming_it(spark, split_container):
    (victim,) = split_container.topics["hr"].iterdir()
    df = read_table(spark, split_container, TABLE)
    victim.unlink()
    with raises_replicate("REPLICATE_FILE_MISSING", victim.name):
        df.collect()


def test_a_split_container_deleted_after_planning_is_skipped_once_when_missing_files_are_ignored(
        spark, split_container):
    (victim,) = split_container.topics["hr"].iterdir()
    df = read_table(spark, split_container, TABLE, ignoreMissingFiles="true")
    victim.unlink()
    assert_read_skipping_one_file(spark, df, split_container, lambda m: m.file != victim)


def test_a_split_container_truncated_after_planning_is_skipped_once_keeping_the_messages_before_the_damage(
        spark, split_container):
    (victim,) = split_container.topics["hr"].iterdir()
    df = read_table(spark, split_container, TABLE, ignoreCorruptFiles="true")
    assert df.rdd.getNumPartitions() > 4, "the premise: the file is read by several tasks"
    survives = truncate_in_the_middle(victim, "avro")
    assert_read_skipping_one_file(spark, df, split_container, survives)


def test_a_file_too_large_for_one_task_in_no_known_framing_is_skipped_when_corrupt_files_are_ignored(spark, zone_of):
    """A large file is sniffed when the read is planned (to cut it at sync markers); one in no
    framing is still a corrupt file for ``ignoreCorruptFiles``, not a failed query."""
    zone = zone_of("avro")
    (zone.topics["hr"] / "part-99999.bin").write_bytes(b"not a landed message " * 10_000)
    with spark_conf(spark, {"spark.sql.files.maxPartitionBytes": "64k"}):
        df = read_table(spark, zone, TABLE, ignoreCorruptFiles="true")
        assert_read_skipping_one_file(spark, df, zone, lambda m: True)


# -- empty files -----------------------------------------------------------------------------


@pytest.mark.parametrize("framing_option", ["named", "auto"])
@pytest.mark.parametrize("framing", FRAMINGS)
def test_an_empty_file_adds_no_row_and_no_error(spark, zone_of, framing, framing_option):
    zone = zone_of(framing, messages=60)
    extension = victim_file(zone).suffix
    (zone.topics["hr"] / f"empty{extension}").write_bytes(b"")
    df = read_table(spark, zone, TABLE, framing=framing if framing_option == "named" else "auto")
    assert_same_rows(collect_plain(df), [expected_row(zone, m) for m in zone.messages_for(TABLE)])
    metrics = read_metrics(spark)
    assert metrics["filesSkipped"] == 0 and metrics["malformed"] == 0, metrics
