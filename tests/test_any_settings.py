"""Property tests over the generator's settings: landing zones drawn at random (framing, value
schema, headers version, typed or all-text values, embedded schemas, metadata in the data topics,
before-images, stray mask bits, partial masks, moved keys, full load, Avro blocks and codec,
evolving tables), each checked against the generator's own record of what it wrote, never against
the reader. The fixed zones of the other files test each setting; these test them together.

Hypothesis draws the same examples on every run (``derandomize``), so a failure reproduces.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from conftest import assert_same_rows, collect_plain, evolving_tables, expected_rows, read_table
from spark_replicate.generate import generate_landing_zone
from test_apply_delta import TABLES, apply, delta_rows, history_truth, in_commit_order, needs_delta, truth
from test_apply_state import applied, shuffled_with_duplicates
from test_from_replicate import decoded, messages

# Each example generates a zone and runs Spark jobs: seconds each, so few of them, and no
# deadline. No example database: nothing is written beside the tests.
EXAMPLES = settings(deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def landings(draw) -> dict:
    """The settings of a landing zone; combinations the generator refuses are not drawn."""
    framing = draw(st.sampled_from(["avro", "length-prefixed", "message"]))
    logical_types = draw(st.booleans())
    before_images = draw(st.booleans())
    return dict(
        seed=draw(st.integers(0, 10 ** 6)), messages=draw(st.sampled_from([200, 900, 2000])), framing=framing,
        value_schema=draw(st.sampled_from(["record", "bytes"])), headers_version=draw(st.sampled_from(["6.3", "7.0"])),
        logical_types=logical_types, all_text=not logical_types and draw(st.booleans()),
        embed_data_schema=draw(st.booleans()), md_in_data_topics=draw(st.booleans()), before_images=before_images,
        stray_mask_bits=draw(st.sampled_from([0.0, 0.4])), partial_masks=draw(st.sampled_from([0.0, 0.5])),
        key_changes=draw(st.sampled_from([0.0, 0.3])) if before_images else 0.0, full_load=draw(st.booleans()),
        files_per_topic=draw(st.integers(1, 4)), sync_interval=draw(st.sampled_from([64, 700, 16000])),
        codec=draw(st.sampled_from(["null", "deflate"])) if framing == "avro" else "null",
        tables=evolving_tables() if draw(st.booleans()) else None)


@settings(EXAMPLES, max_examples=10)
@given(landings())
def test_any_landing_reads_as_the_generator_wrote_it(spark, landing):
    event(f"framing {landing['framing']}")  # (pytest --hypothesis-show-statistics shows the spread)
    with tempfile.TemporaryDirectory() as work:
        zone = generate_landing_zone(Path(work) / "landing", **landing)
        for table in zone.tables:
            expected = expected_rows(zone, table.name)
            assert_same_rows(collect_plain(read_table(spark, zone, table.name)), expected)
            if landing["framing"] == "message":  # a file per message: the bytes `from_replicate` takes
                structs = decoded(messages(spark, zone, [table.topic]), schemaTopic=str(zone.schema_topic),
                                  table=table.name)
                assert_same_rows(collect_plain(structs.where("r IS NOT NULL").select("r.*")), expected)


@st.composite
def change_sets(draw) -> dict:
    """A landing's changes, always with partial masks and rows moved to new keys (what an apply
    gets wrong most easily), and how they are applied. No evolving tables: what a dropped column
    holds after an apply is a rule of its own, tested apart."""
    return dict(
        landing=dict(seed=draw(st.integers(0, 10 ** 6)), messages=draw(st.sampled_from([300, 900])),
                     key_changes=draw(st.sampled_from([0.1, 0.4])),
                     partial_masks=draw(st.sampled_from([0.4, 1.0])), full_load=draw(st.booleans()),
                     operation_mix=draw(st.sampled_from([(0.5, 0.35, 0.15), (0.2, 0.5, 0.3), (0.1, 0.8, 0.1)])),
                     files_per_topic=draw(st.integers(1, 4))),
        table=draw(st.sampled_from(TABLES)),
        batches=draw(st.integers(1, 3)), scd_type=draw(st.sampled_from([1, 2])))


@pytest.mark.slow
@needs_delta
@settings(EXAMPLES, max_examples=2)
@given(change_sets())
def test_any_changes_replay_and_apply_to_the_source_table(spark, case):
    """Both implementations, each example: Python's helpers and their Scala twins."""
    table = case["table"]
    with tempfile.TemporaryDirectory() as work:
        zone = generate_landing_zone(Path(work) / "landing", **case["landing"])
        # Files in a random order, some of them twice.
        changes = shuffled_with_duplicates(spark, zone, table, seed=case["landing"]["seed"])
        # Batches in commit order, as files landed over time bring them.
        batches = in_commit_order(read_table(spark, zone, table), case["batches"])
        state = truth(zone, table)
        expected = state if case["scd_type"] == 1 else history_truth(zone, table)
        for implementation in ("python", "scala"):
            assert_same_rows(collect_plain(applied(implementation, "latest_state", changes)), state)
            target = Path(work) / implementation
            for batch in batches:
                apply(implementation, batch, target, scd_type=case["scd_type"])
            assert_same_rows(delta_rows(spark, target), expected)
