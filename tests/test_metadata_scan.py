"""Metadata collected from the data topics (no ``schemaTopic``) past what the data read skips
(README "Options": ``schemaTopic``, ``maxMessageBytes``, ``ignoreCorruptFiles``).

A data file starts with an intact frame larger than ``maxMessageBytes``, followed by the file's
metadata and data messages. The data read skips that frame as one malformed message and reads on;
the metadata scan must do the same, or the metadata after it is never found and the read fails.
A data file cut in the middle is skipped under ``ignoreCorruptFiles``, keeping what came before
the damage: its metadata too."""

from __future__ import annotations

import struct

import pytest

from conftest import assert_same_rows, collect_plain, expected_row, expected_rows, read_metrics, read_table
from spark_replicate.generate import generate_landing_zone
from test_file_faults import record_ends

TABLE = "HR.EMPLOYEES"
LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    zone = generate_landing_zone(tmp_path_factory.mktemp("metadata-scan"), messages=200, seed=7,
                                 framing="length-prefixed", files_per_topic=1, md_in_data_topics=True)
    (data_file,) = [p for p in zone.topics["hr"].rglob("*") if p.is_file()]
    oversized = bytes(2 * LIMIT)
    data_file.write_bytes(struct.pack(">i", len(oversized)) + oversized + data_file.read_bytes())
    return zone


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_metadata_after_an_oversized_frame_is_found(spark, zone, mode):
    df = read_table(spark, zone, TABLE, schema_topic=False, mode=mode, framing="length-prefixed",
                    maxMessageBytes=str(LIMIT))
    good = df.where("_corrupt_record IS NULL").drop("_corrupt_record") if mode == "PERMISSIVE" else df
    rows = collect_plain(good)
    metrics = read_metrics(spark)
    assert_same_rows(rows, expected_rows(zone, TABLE))
    assert metrics["malformed_REPLICATE_BAD_FRAME"] == 1 and metrics["malformed"] == 1, metrics


def test_a_file_cut_short_keeps_the_metadata_before_the_damage(spark, tmp_path):
    zone = generate_landing_zone(tmp_path / "landing", messages=300, seed=8, framing="avro", files_per_topic=1,
                                 sync_interval=1024, md_in_data_topics=True)
    (data_file,) = [p for p in zone.topics["hr"].rglob("*") if p.is_file()]
    ends = record_ends(data_file, "avro")
    blocks = sorted(set(ends))
    cut = (blocks[len(blocks) // 2 - 1] + blocks[len(blocks) // 2]) // 2  # inside the middle block
    data_file.write_bytes(data_file.read_bytes()[:cut])
    df = read_table(spark, zone, TABLE, schema_topic=False, ignoreCorruptFiles="true")
    rows = collect_plain(df)
    assert read_metrics(spark)["filesSkipped"] == 1
    assert_same_rows(rows, [expected_row(zone, m) for m in zone.messages_for(TABLE) if ends[m.offset] <= cut])
