"""The metadata view, ``.option("messages", "metadata")``, end to end on generated landing zones.

Expected rows come from the generator's record of the MD messages it wrote (``zone.metadata``).
"""

from __future__ import annotations

import copy
import io
import json

import fastavro
import pytest

from conftest import (assert_same_rows, collect_plain, evolving_tables, raises_replicate, read_metrics,
                      record_positions)
from spark_replicate.generate import (MetadataEntry, default_tables, encode_envelope, generate_landing_zone,
                                      metadata_schema)

VIEW_COLUMNS = ["schema_id", "schema_name", "table_name", "table_version", "server", "task", "timestamp",
                "columns", "primary_key", "data_schema"]


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    """Four tables in two topics, INV.ITEMS in three versions; MD also in the data topics."""
    return generate_landing_zone(tmp_path_factory.mktemp("metaview") / "landing", framing="length-prefixed",
                                 tables=default_tables() + evolving_tables(), md_in_data_topics=True,
                                 files_per_topic=1, messages=400, seed=7)


def expected_view_row(md: dict) -> dict:
    """The view's row of one MD payload, worked out from the payload as written."""
    columns = sorted(({"name": name, "ordinal": c["ordinal"], "type": c["type"], "length": c["length"],
                       "precision": c["precision"], "scale": c["scale"],
                       "primary_key_position": c["primaryKeyPosition"], "nullable": c["nullable"]}
                      for name, c in md["tableStructure"]["tableColumns"].items()), key=lambda c: c["ordinal"])
    key = sorted((c for c in columns if c["primary_key_position"] > 0), key=lambda c: c["primary_key_position"])
    lineage = md["lineage"]
    return {"schema_id": md["schemaId"], "schema_name": lineage["schema"], "table_name": lineage["table"],
            "table_version": lineage["tableVersion"], "server": lineage["server"], "task": lineage["task"],
            "timestamp": lineage["timestamp"], "columns": columns, "primary_key": [c["name"] for c in key],
            "data_schema": md["dataSchema"]}


def view(spark, path, **options):
    reader = spark.read.format("replicate").option("messages", "metadata")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(path))


@pytest.mark.smoke
def test_every_metadata_message_of_the_schema_topic_is_a_row(spark, zone):
    df = view(spark, zone.schema_topic)
    assert df.columns == VIEW_COLUMNS
    assert {e.table for e in zone.metadata} == {"HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS", "INV.ITEMS"}
    assert sorted(e.version for e in zone.metadata if e.table == "INV.ITEMS") == [1, 2, 3]
    assert_same_rows(collect_plain(df), [expected_view_row(e.md) for e in zone.metadata])
    metrics = read_metrics(spark)
    assert (metrics["messagesRead"], metrics["rowsReturned"], metrics["filteredOut"]) == (len(zone.metadata),) * 2 + (0,)


def test_the_view_of_a_data_topic_filters_out_its_data_messages(spark, zone):
    for topic, path in zone.topics.items():
        entries = [e for e in zone.metadata if next(t for t in zone.tables if t.name == e.table).topic == topic]
        assert_same_rows(collect_plain(view(spark, path)), [expected_view_row(e.md) for e in entries])
        metrics = read_metrics(spark)
        data = sum(1 for m in zone.messages if m.topic == topic)
        assert (metrics["rowsReturned"], metrics["filteredOut"], metrics["metadataMessages"]) == (len(entries), data, 0)


def test_table_keeps_one_tables_rows_and_no_schema_registry_is_needed(spark, zone):
    # Several tables, no `table` and no schemaTopic: not an error for the view.
    rows = collect_plain(view(spark, zone.root, table="inv.items"))
    assert_same_rows(rows, [expected_view_row(e.md) for e in zone.metadata if e.table == "INV.ITEMS"])
    metrics = read_metrics(spark)
    assert metrics["rowsReturned"] == 3 and metrics["filteredOut"] == metrics["messagesRead"] - 3


def test_identical_repeats_are_kept(spark, zone, tmp_path):
    schema_file = next(zone.schema_topic.iterdir())
    (tmp_path / "twice.bin").write_bytes(schema_file.read_bytes() * 2)
    assert_same_rows(collect_plain(view(spark, tmp_path)), [expected_view_row(e.md) for e in zone.metadata] * 2)


def test_include_source_says_where_each_metadata_message_is(spark, zone):
    schema_file = next(zone.schema_topic.iterdir())
    positions = record_positions(schema_file, "length-prefixed")
    rows = collect_plain(view(spark, zone.schema_topic, includeSource="true").select("schema_id", "header__source"))
    expected = [{"schema_id": e.schema_id, "header__source": {
        "file": str(schema_file), "position": positions[i][0], "index": 0, "topic": None, "partition": None,
        "offset": None, "timestamp": None, "key": None}} for i, e in enumerate(zone.metadata)]
    assert_same_rows(rows, expected)


def md_envelope(entry: MetadataEntry, md: dict, cut: int = 0) -> bytes:
    """The MD message of ``md`` (a changed copy of ``entry.md``); ``cut`` drops payload bytes."""
    schema = metadata_schema(list(md["tableStructure"]["tableColumns"]))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), md)
    payload = buffer.getvalue()
    return encode_envelope("MD", payload[:len(payload) - cut], entry.schema_id, json.dumps(schema))


@pytest.fixture(scope="module")
def damaged(zone, tmp_path_factory):
    """A length-prefixed topic: good MD, MD with a duplicated ordinal, a DT, good MD, truncated MD."""
    first, second = zone.metadata[0], zone.metadata[1]
    bad_ordinals = copy.deepcopy(first.md)
    for column in bad_ordinals["tableStructure"]["tableColumns"].values():
        column["ordinal"] = 1
    messages = [md_envelope(first, first.md), md_envelope(first, bad_ordinals),
                encode_envelope("DT", b"\x00", first.schema_id), md_envelope(second, second.md),
                md_envelope(second, second.md, cut=3)]
    path = tmp_path_factory.mktemp("damaged") / "topic.bin"
    path.write_bytes(b"".join(len(m).to_bytes(4, "big") + m for m in messages))
    frames = [p for p, _ in record_positions(path, "length-prefixed")]
    return path, [expected_view_row(first.md), expected_view_row(second.md)], frames


def test_failfast_names_file_and_position_of_a_malformed_metadata_message(spark, damaged):
    path, _, frames = damaged
    with raises_replicate("REPLICATE_BAD_PAYLOAD", str(path), f"frame at byte {frames[1]}", "ordinals"):
        view(spark, path).collect()


def test_dropmalformed_drops_and_counts_malformed_metadata_messages(spark, damaged):
    path, good, _ = damaged
    assert_same_rows(collect_plain(view(spark, path, mode="DROPMALFORMED")), good)
    metrics = read_metrics(spark)
    assert {k: metrics[k] for k in ("messagesRead", "rowsReturned", "filteredOut", "dropped", "malformed",
                                    "malformed_REPLICATE_BAD_PAYLOAD", "malformed_REPLICATE_TRUNCATED")} == {
        "messagesRead": 5, "rowsReturned": 2, "filteredOut": 1, "dropped": 2, "malformed": 2,
        "malformed_REPLICATE_BAD_PAYLOAD": 1, "malformed_REPLICATE_TRUNCATED": 1}


@pytest.mark.smoke
def test_permissive_keeps_malformed_metadata_messages_as_corrupt_rows(spark, damaged):
    path, good, frames = damaged
    df = view(spark, path, mode="PERMISSIVE")
    assert df.columns == VIEW_COLUMNS + ["_corrupt_record"]
    rows = collect_plain(df)
    corrupt = sorted((r["_corrupt_record"] for r in rows if r["_corrupt_record"]), key=lambda c: c["reason"])
    assert [c["reason"] for c in corrupt] == ["REPLICATE_BAD_PAYLOAD", "REPLICATE_TRUNCATED"]
    raw = path.read_bytes()
    assert corrupt[0]["bytes"] == raw[frames[1] + 4:frames[2]]
    assert corrupt[1]["bytes"] == raw[frames[4] + 4:]
    assert f"frame at byte {frames[4]}" in corrupt[1]["message"]
    assert all(all(r[c] is None for c in VIEW_COLUMNS) for r in rows if r["_corrupt_record"])
    assert_same_rows([{c: r[c] for c in VIEW_COLUMNS} for r in rows if not r["_corrupt_record"]], good)
    metrics = read_metrics(spark)
    assert (metrics["rowsReturned"], metrics["filteredOut"], metrics["malformed"]) == (4, 1, 2)


def test_the_view_rejects_a_schema_topic_and_a_bad_messages_value(spark, zone):
    with raises_replicate("REPLICATE_INVALID_OPTION", "`schemaTopic`"):
        view(spark, zone.root, schemaTopic=str(zone.schema_topic)).schema
    with raises_replicate("REPLICATE_INVALID_OPTION", "`messages`", "data, metadata"):
        view(spark, zone.root, messages="md").schema
