"""Tests of spark_replicate.generate: decode every landed byte independently and compare.

The decoding here uses only fastavro and the framing rules of the README's "Landing formats", so a
generator bug cannot hide behind a matching reader bug.
"""

from __future__ import annotations

import io
import json
import math
import re
import struct
import subprocess
import sys
from dataclasses import dataclass, replace
from datetime import datetime, time, timezone
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "python" / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "python" / "src"))

from spark_replicate import generate as gen  # noqa: E402

REFERENCE = Path("/work/shared/reference")
ENVELOPE = fastavro.parse_schema(gen.ENVELOPE_SCHEMA)
FRAMINGS = ("avro", "length-prefixed", "message")
MESSAGES = 1500


# --------------------------------------------------------------------------------------------
# Independent reading of a landing zone
# --------------------------------------------------------------------------------------------


@dataclass
class Landed:
    """One message as found on disk."""

    file: Path
    partition: int
    offset: int
    raw: bytes
    kafka: dict | None  # the container record around it, when there is one

    @property
    def envelope(self) -> dict:
        return decode(ENVELOPE, self.raw)


def decode(schema, data: bytes) -> dict:
    """Decode Avro binary and insist that every byte was used."""
    buffer = io.BytesIO(data)
    record = fastavro.schemaless_reader(buffer, schema)
    assert buffer.tell() == len(data), "trailing bytes"
    return record


def read_file(path: Path):
    match = re.fullmatch(r"part-(\d{5})(?:-(\d{10}))?\.(avro|bin|msg)", path.name)
    assert match, path
    partition = int(match[1])
    if match[3] == "avro":
        with path.open("rb") as f:
            for offset, record in enumerate(fastavro.reader(f)):
                if isinstance(record, dict):
                    yield Landed(path, partition, offset, record["value"], record)
                else:
                    yield Landed(path, partition, offset, record, None)
    elif match[3] == "bin":
        data, position, offset = path.read_bytes(), 0, 0
        while position < len(data):
            length = int.from_bytes(data[position:position + 4], "big")
            raw = data[position + 4:position + 4 + length]
            assert len(raw) == length, "truncated length-prefixed file"
            yield Landed(path, partition, offset, raw, None)
            position, offset = position + 4 + length, offset + 1
    else:
        yield Landed(path, partition, int(match[2]), path.read_bytes(), None)


def read_topic(directory: Path) -> list[Landed]:
    return [landed for path in sorted(directory.iterdir()) for landed in read_file(path)]


def registry(zone: gen.LandingZone) -> dict[str, dict]:
    """schemaId -> parsed data schema, learnt from the MD messages of the schema topic only."""
    schemas = {}
    for landed in read_topic(zone.schema_topic):
        envelope = landed.envelope
        assert envelope["type"] == "MD"
        md = decode(fastavro.parse_schema(json.loads(envelope["messageSchema"])), envelope["message"])
        schemas[md["schemaId"]] = fastavro.parse_schema(json.loads(md["dataSchema"]))
    return schemas


def decoded_data_messages(zone: gen.LandingZone) -> dict[tuple, tuple[Landed, dict, dict]]:
    """(topic, partition, offset) -> (landed, envelope, payload) for every DT message."""
    schemas = registry(zone)
    found = {}
    for topic, directory in zone.topics.items():
        for landed in read_topic(directory):
            envelope = landed.envelope
            if envelope["type"] == "DT":
                payload = decode(schemas[envelope["messageSchemaId"]], envelope["message"])
                found[(topic, landed.partition, landed.offset)] = (landed, envelope, payload)
    return found


def assert_round_trip(zone: gen.LandingZone) -> None:
    """Every DT message on disk decodes to exactly what LandingZone.messages says."""
    found = decoded_data_messages(zone)
    assert len(found) == len(zone.messages)
    for m in zone.messages:
        landed, envelope, payload = found[(m.topic, m.partition, m.offset)]
        assert landed.file == m.file
        assert envelope["messageSchemaId"] == m.schema_id
        assert payload["data"] == m.data
        assert payload["beforeData"] == m.before
        assert payload["headers"] == m.headers
        assert payload["headers"]["changeMask"] == m.change_mask
        assert payload["headers"]["columnMask"] == m.column_mask
        if landed.kafka is not None:
            assert landed.kafka["topic"] == m.topic
            assert (landed.kafka["partition"], landed.kafka["offset"]) == (m.partition, m.offset)
            assert landed.kafka["key"] == m.key
            assert int(landed.kafka["timestamp"].timestamp() * 1000) == m.timestamp_ms


def wide_table() -> gen.TableDef:
    """71 columns of every type, growing to 73 (masks go from 9 to 10 bytes) by two DDLs."""
    types = ["INT1", "INT2", "INT4", "INT8", "REAL4", "REAL8", "BOOLEAN", "STRING", "WSTRING", "BYTES",
             "DATE", "DATETIME", "NUMERIC"]
    columns = [gen.ColumnDef("ID", "INT8", pk_position=1)]
    for i in range(1, 71):
        t = types[i % len(types)]
        columns.append(gen.ColumnDef(f"C{i:02d}", t, precision=18 if t == "NUMERIC" else 0,
                                     scale=4 if t == "NUMERIC" else 0, nullable=i % 3 != 0))
    added = [gen.ColumnDef("ADDED_NOTE", "WSTRING", 80), gen.ColumnDef("ADDED_AMOUNT", "NUMERIC", 0, 9, 0)]
    return gen.TableDef("DW", "WIDE", "wide", columns, added)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=FRAMINGS)
def zone(request, tmp_path_factory) -> gen.LandingZone:
    return gen.generate_landing_zone(tmp_path_factory.mktemp(request.param), messages=MESSAGES, seed=7,
                                     framing=request.param)


@pytest.fixture(scope="module")
def avro_zone(tmp_path_factory) -> gen.LandingZone:
    return gen.generate_landing_zone(tmp_path_factory.mktemp("avro"), messages=MESSAGES, seed=7)


@pytest.fixture(scope="module")
def wide_zone(tmp_path_factory) -> gen.LandingZone:
    return gen.generate_landing_zone(tmp_path_factory.mktemp("wide"), messages=900, seed=3,
                                     tables=[wide_table()], files_per_topic=3)


# --------------------------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------------------------


def test_mask_examples():
    assert gen.mask_bytes([8, 16], 16, extra_leading_zero=True).hex().upper() == "008080"
    assert gen.mask_bytes([8, 16], 16).hex().upper() == "8080"
    assert gen.mask_bytes([1, 3], 4).hex().upper() == "05"
    assert gen.mask_bytes([1, 2, 4], 4).hex().upper() == "0B"
    assert gen.mask_ordinals(bytes.fromhex("008080")) == [8, 16]
    assert gen.mask_ordinals(bytes.fromhex("05")) == [1, 3]
    assert gen.mask_ordinals(bytes.fromhex("0B")) == [1, 2, 4]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.integers(1, n)), st.booleans())))
def test_mask_round_trip(case):
    ncols, ordinals, extra = case
    mask = gen.mask_bytes(ordinals, ncols, extra)
    assert len(mask) == math.ceil(ncols / 8) + extra
    assert gen.mask_ordinals(mask) == sorted(ordinals)
    if extra:
        assert mask[0] == 0


def test_a_stray_bit_is_the_one_past_the_last_column_as_in_real_replicate_output():
    # Real UPDATEs of Oracle-sourced tables of 26 and 37 columns.
    assert gen.mask_bytes([], 26, stray_bit=True).hex().upper() == "04000000"
    assert gen.mask_bytes([], 37, stray_bit=True).hex().upper() == "2000000000"
    assert gen.mask_bytes([1, 3], 8, stray_bit=True).hex().upper() == "0105"
    with pytest.raises(ValueError, match="stray_mask_bits"):
        gen.generate_landing_zone("/nonexistent", stray_mask_bits=1.5)


def test_mask_rejects_ordinals_outside_the_table():
    with pytest.raises(ValueError):
        gen.mask_bytes([0], 8)
    with pytest.raises(ValueError):
        gen.mask_bytes([9], 8)


# --------------------------------------------------------------------------------------------
# Schemas: the exact shape of the real Replicate 6.3 samples
# --------------------------------------------------------------------------------------------


def reference_text(name: str) -> str:
    path = REFERENCE / name
    if not path.is_file():
        pytest.skip(f"reference sample {path} not available")
    return path.read_text().strip()


SALARIES = [gen.ColumnDef("emp_no", "INT4", pk_position=1), gen.ColumnDef("salary", "INT4", nullable=False),
            gen.ColumnDef("from_date", "DATE", pk_position=2), gen.ColumnDef("to_date", "DATE", nullable=False)]


def test_envelope_schema_is_the_documented_one():
    assert gen.ENVELOPE_SCHEMA == json.loads(reference_text("qlik-docs_MessageEnvelope.avsc"))


def test_data_schema_is_byte_identical_to_the_real_sample():
    expected = reference_text("replicate6.3_DataRecord_employees.salaries.schema.compact.avsc")
    assert json.dumps(gen.data_schema(SALARIES, "6.3"), separators=(",", ":")) == expected


def test_metadata_schema_is_byte_identical_to_the_real_sample():
    expected = reference_text("replicate6.3_MetadataMessage.schema.compact.avsc")
    names = [c.name for c in SALARIES]
    assert json.dumps(gen.metadata_schema(names), separators=(",", ":")) == expected


def test_data_schema_7_0_adds_the_newer_headers():
    headers = gen.data_schema(SALARIES, "7.0")["fields"][2]["type"]["fields"]
    assert [f["name"] for f in headers][7:] == ["transactionEventCounter", "transactionLastEvent", "externalSchemaId"]


# --------------------------------------------------------------------------------------------
# Envelopes and metadata
# --------------------------------------------------------------------------------------------


def test_every_envelope_begins_with_the_magic(zone):
    directories = [zone.schema_topic, *zone.topics.values()]
    landed = [m for d in directories for m in read_topic(d)]
    assert len(landed) == len(zone.messages) + len(zone.metadata)
    for message in landed:
        assert message.raw[:5] == bytes.fromhex("61744D5347")
        envelope = message.envelope
        assert envelope["magic"] == b"atMSG" and envelope["headers"] is None
        assert envelope["type"] in ("MD", "DT")
        assert re.fullmatch(r"[0-9A-F]{32}", envelope["messageSchemaId"])
        if envelope["type"] == "DT":
            assert envelope["messageSchema"] is None


def test_metadata_messages_describe_each_table_version(avro_zone):
    landed = read_topic(avro_zone.schema_topic)
    assert len(landed) == len(avro_zone.metadata) == 3
    field_order_differs = False
    for message, entry in zip(landed, avro_zone.metadata):
        envelope = message.envelope
        assert envelope["type"] == "MD" and envelope["messageSchemaId"] == entry.schema_id
        md = decode(fastavro.parse_schema(json.loads(envelope["messageSchema"])), envelope["message"])
        assert md == entry.md and md["schemaId"] == entry.schema_id
        assert md["dataSchema"] == entry.data_schema_json
        fastavro.parse_schema(json.loads(md["dataSchema"]))
        lineage = md["lineage"]
        assert f"{lineage['schema']}.{lineage['table']}" == entry.table and lineage["tableVersion"] == 1
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", lineage["timestamp"])
        table = next(t for t in avro_zone.tables if t.name == entry.table)
        columns = md["tableStructure"]["tableColumns"]
        by_ordinal = sorted(columns, key=lambda name: columns[name]["ordinal"])
        assert by_ordinal == [c.name for c in table.columns]
        assert sorted(c["ordinal"] for c in columns.values()) == list(range(1, len(table.columns) + 1))
        field_order_differs |= list(columns) != by_ordinal
        data_fields = json.loads(md["dataSchema"])["fields"][0]["type"]["fields"]
        assert [f["name"] for f in data_fields] == by_ordinal
        for column in table.columns:
            described = columns[column.name]
            assert described["type"] == column.source_type
            assert described["primaryKeyPosition"] == column.pk_position
            assert described["nullable"] == column.nullable
    assert field_order_differs, "readers must be made to order columns by ordinal"


def test_metadata_types_are_realistic(avro_zone):
    md = {e.table: e.md["tableStructure"]["tableColumns"] for e in avro_zone.metadata}
    employees = md["HR.EMPLOYEES"]
    assert employees["SALARY"] | {"ordinal": 0} == {"ordinal": 0, "type": "NUMERIC", "length": 0, "precision": 10,
                                                   "scale": 2, "primaryKeyPosition": 0, "nullable": True}
    assert employees["EMP_ID"]["length"] == 10 and not employees["EMP_ID"]["nullable"]
    assert employees["FIRST_NAME"]["length"] == 40
    departments = md["HR.DEPARTMENTS"]
    assert {n: c["primaryKeyPosition"] for n, c in departments.items() if c["primaryKeyPosition"]} == {
        "COMPANY_ID": 1, "DEPT_ID": 2}
    assert len(md["SALES.ORDERS"]) == 20
    assert {c["type"] for c in md["SALES.ORDERS"].values()} >= {"INT8", "REAL8", "REAL4", "INT1", "BYTES"}


# --------------------------------------------------------------------------------------------
# Data messages
# --------------------------------------------------------------------------------------------


def test_data_messages_round_trip(zone):
    assert_round_trip(zone)


def test_offsets_count_from_zero_in_every_partition(zone):
    for topic, directory in zone.topics.items():
        by_partition: dict[int, list[int]] = {}
        for landed in read_topic(directory):
            by_partition.setdefault(landed.partition, []).append(landed.offset)
        assert set(by_partition) == {0, 1}
        for offsets in by_partition.values():
            assert sorted(offsets) == list(range(len(offsets)))


def test_refresh_rows_come_first_with_empty_cdc_headers(avro_zone):
    for table in avro_zone.tables:
        messages = avro_zone.messages_for(table.name)
        operations = [m.operation for m in messages]
        refreshes = operations.count("REFRESH")
        assert operations[:refreshes] == ["REFRESH"] * refreshes
        assert refreshes == round(len(messages) * 0.2)
        for m in messages[:refreshes]:
            assert m.headers == {"operation": "REFRESH", "changeSequence": "", "timestamp": "",
                                 "streamPosition": "", "transactionId": "", "changeMask": None,
                                 "columnMask": None, "transactionEventCounter": None,
                                 "transactionLastEvent": None, "externalSchemaId": None}
            assert m.before is None and None not in [m.data[k.name] for k in table.key_columns]


def cdc(zone):
    return [m for m in zone.messages if m.operation != "REFRESH"]


def test_change_sequence_and_timestamps_look_like_replicate(avro_zone):
    messages = cdc(avro_zone)
    sequences = [m.headers["changeSequence"] for m in messages]
    assert all(re.fullmatch(r"\d{35}", s) for s in sequences)
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    for m in messages:
        timestamp = m.headers["timestamp"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", timestamp)
        assert m.headers["changeSequence"][:20] == re.sub(r"\D", "", timestamp)
        assert m.headers["streamPosition"]
        assert re.fullmatch(r"[0-9A-F]{32}", m.headers["transactionId"])


def test_transactions(avro_zone):
    groups: list[list] = []
    for m in cdc(avro_zone):
        if groups and groups[-1][-1].headers["transactionId"] == m.headers["transactionId"]:
            groups[-1].append(m)
        else:
            groups.append([m])
    assert len({g[0].headers["transactionId"] for g in groups}) == len(groups), "a transaction is contiguous"
    assert {len(g) for g in groups} <= set(range(1, 6)) and max(len(g) for g in groups) > 1
    assert any(len({m.table for m in g}) > 1 for g in groups), "some transactions span tables"
    commit_times = [g[0].headers["timestamp"] for g in groups]
    assert commit_times == sorted(set(commit_times)), "each transaction commits later than the previous"
    for group in groups:
        assert len({m.topic for m in group}) == 1
        assert len({m.headers["timestamp"] for m in group}) == 1
        assert [m.headers["transactionEventCounter"] for m in group] == list(range(1, len(group) + 1))
        assert [m.headers["transactionLastEvent"] for m in group] == [False] * (len(group) - 1) + [True]


def test_row_images_follow_a_consistent_table_model(zone):
    """Replay every table: inserts add new keys, updates and deletes hit live rows, images match."""
    for table in zone.tables:
        names = [c.name for c in table.columns]
        key_names = [c.name for c in table.key_columns]
        key_ordinals = [i for i, c in enumerate(table.columns, 1) if c.pk_position]
        rows: dict[tuple, dict] = {}
        for m in zone.messages_for(table.name):
            key = tuple(m.data[k] for k in key_names)
            changed = gen.mask_ordinals(m.change_mask) if m.change_mask is not None else None
            present = gen.mask_ordinals(m.column_mask) if m.column_mask is not None else None
            if m.operation in ("REFRESH", "INSERT"):
                assert key not in rows and m.before is None
                rows[key] = m.data
                if m.operation == "INSERT":
                    assert changed == [i for i, n in enumerate(names, 1) if m.data[n] is not None]
                    assert present == list(range(1, len(names) + 1))
            elif m.operation == "UPDATE":
                assert m.before == rows[key]
                assert changed == [i for i, n in enumerate(names, 1) if m.before[n] != m.data[n]] != []
                assert present == list(range(1, len(names) + 1))
                rows[key] = m.data
            else:
                assert m.before == rows.pop(key)
                assert all(m.data[n] is None for n in names if n not in key_names)
                assert changed == present == key_ordinals


def test_masks_have_the_right_length_and_sometimes_an_extra_zero_byte(avro_zone):
    extra = 0
    messages = cdc(avro_zone)
    for m in messages:
        width = math.ceil(len(m.data) / 8)
        assert len(m.change_mask) == len(m.column_mask) in (width, width + 1)
        if len(m.change_mask) == width + 1:
            assert m.change_mask[0] == m.column_mask[0] == 0
            extra += 1
    assert 0.03 < extra / len(messages) < 0.2
    orders = [m for m in messages if m.table == "SALES.ORDERS"]
    assert {len(m.column_mask) for m in orders} == {3, 4}


def test_values_are_encoded_as_replicate_sends_them_without_logical_types(avro_zone):
    checks = {
        "INT1": lambda v: type(v) is int and -2**7 <= v < 2**7,
        "INT2": lambda v: type(v) is int and -2**15 <= v < 2**15,
        "INT4": lambda v: type(v) is int and -2**31 <= v < 2**31,
        "INT8": lambda v: type(v) is int,
        "REAL4": lambda v: type(v) is float and struct.unpack("<f", struct.pack("<f", v))[0] == v,
        "REAL8": lambda v: type(v) is float,
        "BOOLEAN": lambda v: type(v) is bool,
        "STRING": lambda v: type(v) is str and v.isascii(),
        "WSTRING": lambda v: type(v) is str,
        "BYTES": lambda v: type(v) is bytes,
        "DATE": lambda v: re.fullmatch(r"\d{4}-\d\d-\d\d", v),
        "DATETIME": lambda v: re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", v),
    }
    for table in avro_zone.tables:
        images = [m.data for m in avro_zone.messages_for(table.name) if m.operation != "DELETE"]
        for column in table.columns:
            values = [image[column.name] for image in images]
            nulls = values.count(None)
            if column.nullable:
                assert 0.02 < nulls / len(values) < 0.25, column.name
            else:
                assert nulls == 0, column.name
            for value in filter(lambda v: v is not None, values):
                if column.source_type == "NUMERIC":
                    whole, scale = column.precision - column.scale, column.scale
                    pattern = rf"-?\d{{1,{whole}}}\.\d{{{scale}}}" if scale else rf"-?\d{{1,{whole}}}"
                    assert re.fullmatch(pattern, value), (column.name, value)
                    assert not (value.startswith("-") and Decimal(value) == 0), (column.name, value)
                else:
                    assert checks[column.source_type](value), (column.name, value)
                if column.source_type in ("STRING", "WSTRING"):
                    assert len(value) <= column.length
    all_text = "".join(str(m.data) for m in avro_zone.messages)
    assert not all_text.isascii(), "WSTRING columns should carry non-ASCII text"


def test_partitions_keep_each_key_in_one_partition(avro_zone):
    for table in avro_zone.tables:
        partitions: dict[bytes, set] = {}
        for m in avro_zone.messages_for(table.name):
            partitions.setdefault(m.key, set()).add(m.partition)
        assert all(len(p) == 1 for p in partitions.values())
        assert {p for ps in partitions.values() for p in ps} == {0, 1}


# --------------------------------------------------------------------------------------------
# Counts, manifest, determinism
# --------------------------------------------------------------------------------------------


def test_counts_and_manifest(avro_zone):
    counts = avro_zone.expected_counts()
    assert sum(sum(ops.values()) for ops in counts.values()) == MESSAGES == len(avro_zone.messages)
    for table, ops in counts.items():
        actual: dict[str, int] = {}
        for m in avro_zone.messages_for(table):
            actual[m.operation] = actual.get(m.operation, 0) + 1
        assert ops == actual
        cdc_total = sum(ops.values()) - ops["REFRESH"]
        assert 0.35 < ops["INSERT"] / cdc_total < 0.65
        assert 0.25 < ops["UPDATE"] / cdc_total < 0.5
        assert 0.03 < ops["DELETE"] / cdc_total < 0.2
    manifest = json.loads((avro_zone.root / "_manifest.json").read_text())
    assert {t: v["counts"] for t, v in manifest["tables"].items()} == counts
    assert manifest["data_messages"] == MESSAGES and manifest["metadata_messages"] == 3
    on_disk = sorted(p.relative_to(avro_zone.root).as_posix() for p in avro_zone.root.rglob("*.*")
                     if p.name != "_manifest.json")
    assert manifest["files"] == on_disk == sorted(p.relative_to(avro_zone.root).as_posix() for p in avro_zone.files)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_same_seed_same_bytes(tmp_path, framing):
    first = gen.generate_landing_zone(tmp_path / "a", messages=400, seed=11, framing=framing)
    second = gen.generate_landing_zone(tmp_path / "b", messages=400, seed=11, framing=framing)
    other = gen.generate_landing_zone(tmp_path / "c", messages=400, seed=12, framing=framing)
    assert snapshot(first.root) == snapshot(second.root)
    assert snapshot(first.root) != snapshot(other.root)
    assert [(m.data, m.headers) for m in first.messages] == [(m.data, m.headers) for m in second.messages]


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------


def test_without_before_images(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=600, before_images=False)
    assert_round_trip(zone)
    assert all(m.before is None for m in zone.messages)
    assert {m.operation for m in zone.messages} == {"REFRESH", "INSERT", "UPDATE", "DELETE"}


def test_headers_version_6_3(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=300, headers_version="6.3")
    assert_round_trip(zone)
    assert all(list(m.headers)[-1] == "columnMask" for m in zone.messages)
    assert all("externalSchemaId" not in e.data_schema_json for e in zone.metadata)


def test_embed_data_schema(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=300, embed_data_schema=True)
    assert_round_trip(zone)
    data_schemas = {e.schema_id: e.data_schema_json for e in zone.metadata}
    for _, envelope, _ in decoded_data_messages(zone).values():
        assert envelope["messageSchema"] == data_schemas[envelope["messageSchemaId"]]


def test_value_schema_bytes_and_deflate(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=300, value_schema="bytes", codec="deflate",
                                     sync_interval=1000)
    for path in zone.topics["sales"].iterdir():
        with path.open("rb") as f:
            reader = fastavro.reader(f)
            assert reader.writer_schema == "bytes" and reader.codec == "deflate"
    assert_round_trip(zone)


def test_record_container_schema(avro_zone):
    with (avro_zone.topics["hr"] / "part-00000.avro").open("rb") as f:
        schema = fastavro.reader(f).writer_schema
    assert [f["name"] for f in schema["fields"]] == ["topic", "partition", "offset", "timestamp", "key", "value"]
    assert schema["fields"][3]["type"] == {"type": "long", "logicalType": "timestamp-millis"}


def test_metadata_also_in_data_topics(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=300, md_in_data_topics=True, framing="length-prefixed")
    assert_round_trip(zone)
    for topic, directory in zone.topics.items():
        tables = {t.name for t in zone.tables if t.topic == topic}
        landed = [m for m in read_topic(directory) if m.partition == 0]
        head = [m.envelope for m in landed[:len(tables)]]
        assert [e["type"] for e in head] == ["MD"] * len(tables)
        expected_ids = {e.schema_id for e in zone.metadata if e.table in tables}
        assert {e["messageSchemaId"] for e in head} == expected_ids
        assert all(m.envelope["type"] == "DT" for m in landed[len(tables):])


def test_wide_table_with_schema_changes(wide_zone):
    assert_round_trip(wide_zone)
    versions = [(e.version, len(e.md["tableStructure"]["tableColumns"])) for e in wide_zone.metadata]
    assert versions == [(1, 71), (2, 72), (3, 73)]
    assert len({e.schema_id for e in wide_zone.metadata}) == 3
    seen_versions = [m.table_version for m in wide_zone.messages]
    assert seen_versions == sorted(seen_versions) and set(seen_versions) == {1, 2, 3}
    for m in cdc(wide_zone):
        width = {1: 9, 2: 9, 3: 10}[m.table_version]
        assert len(m.column_mask) in (width, width + 1) and len(m.data) == 70 + m.table_version
    first_v2 = next(m for m in wide_zone.messages if m.table_version == 2)
    assert first_v2.headers["changeSequence"] > max(m.headers["changeSequence"] for m in cdc(wide_zone)
                                                     if m.table_version == 1)
    updates_of_old_rows = [m for m in wide_zone.messages if m.table_version == 3 and m.before is not None
                           and m.before["ADDED_NOTE"] is None and m.before["ADDED_AMOUNT"] is None]
    assert updates_of_old_rows, "rows from before a DDL carry NULL in the new columns"


def test_keep_messages_false_still_counts(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=200, keep_messages=False)
    assert zone.messages == [] and sum(sum(c.values()) for c in zone.expected_counts().values()) == 200
    assert len(decoded_data_messages(zone)) == 200


def test_refuses_to_write_into_a_foreign_directory(tmp_path):
    (tmp_path / "other.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        gen.generate_landing_zone(tmp_path, messages=10)
    with pytest.raises(FileExistsError):
        gen.generate_landing_zone(tmp_path, messages=10, overwrite=True)
    assert (tmp_path / "other.txt").exists()


def test_overwrite_replaces_a_previous_landing_zone(tmp_path):
    gen.generate_landing_zone(tmp_path, messages=50, framing="message")
    zone = gen.generate_landing_zone(tmp_path, messages=50, framing="avro", overwrite=True)
    assert not list(tmp_path.rglob("*.msg"))
    assert_round_trip(zone)


@pytest.mark.parametrize("options", [{"framing": "json"}, {"headers_version": "8.0"}, {"value_schema": "text"},
                                     {"files_per_topic": 0}, {"messages": -1}])
def test_invalid_options_fail_fast(tmp_path, options):
    with pytest.raises(ValueError):
        gen.generate_landing_zone(tmp_path, **options)


def test_invalid_table_definitions_fail_fast():
    with pytest.raises(ValueError, match="unsupported source type"):
        gen.ColumnDef("X", "INTERVAL")
    with pytest.raises(ValueError, match="NUMERIC"):
        gen.ColumnDef("X", "NUMERIC")
    with pytest.raises(ValueError, match="key column"):
        gen.ColumnDef("X", "INT4", pk_position=1, nullable=True)
    with pytest.raises(ValueError, match="primary key"):
        gen.TableDef("S", "T", "t", [gen.ColumnDef("X", "INT4")])
    with pytest.raises(ValueError, match="Avro name"):
        gen.ColumnDef("Lineage", "INT4")
    table = gen.default_tables()[0]
    with pytest.raises(ValueError):
        gen.generate_landing_zone("/nonexistent-never-written", tables=[table, replace(table)])


# --------------------------------------------------------------------------------------------
# Benchmark-oriented options: operation mix, no full load, long text
# --------------------------------------------------------------------------------------------


def test_operation_mix_without_full_load(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=3000, seed=5, operation_mix=(0.7, 0.25, 0.05),
                                     full_load=False, tables=[gen.default_tables()[2]])
    assert_round_trip(zone)
    ops = zone.expected_counts()["SALES.ORDERS"]
    assert "REFRESH" not in ops and sum(ops.values()) == 3000
    assert 0.66 < ops["INSERT"] / 3000 < 0.74
    assert 0.21 < ops["UPDATE"] / 3000 < 0.29
    assert 0.03 < ops["DELETE"] / 3000 < 0.07
    updates = [m for m in zone.messages if m.operation == "UPDATE"]
    assert updates and all(m.before is not None for m in updates)
    manifest = json.loads((zone.root / "_manifest.json").read_text())
    assert manifest["operation_mix"] == [0.7, 0.25, 0.05] and manifest["full_load"] is False


def test_only_inserts(tmp_path):
    zone = gen.generate_landing_zone(tmp_path, messages=200, operation_mix=(1, 0, 0), full_load=False)
    assert {op for ops in zone.expected_counts().values() for op in ops} == {"INSERT"}


def test_default_mix_and_full_load_are_the_documented_ones(tmp_path):
    implicit = gen.generate_landing_zone(tmp_path / "a", messages=500, seed=9)
    explicit = gen.generate_landing_zone(tmp_path / "b", messages=500, seed=9, operation_mix=(0.5, 0.4, 0.1),
                                         full_load=True)
    assert snapshot(implicit.root) == snapshot(explicit.root)


def test_max_words_makes_long_text(tmp_path):
    long_text = gen.ColumnDef("NOTE", "STRING", 400, max_words=40, nullable=False)
    table = gen.TableDef("S", "T", "t", [gen.ColumnDef("ID", "INT4", pk_position=1), long_text,
                                         gen.ColumnDef("SHORT", "STRING", 400, nullable=False)])
    zone = gen.generate_landing_zone(tmp_path, messages=400, seed=2, tables=[table], full_load=False)
    assert_round_trip(zone)
    notes = [m.data["NOTE"] for m in zone.messages if m.operation != "DELETE"]
    shorts = [m.data["SHORT"] for m in zone.messages if m.operation != "DELETE"]
    assert max(len(n.split(" ")) for n in notes) > 20 and max(len(n) for n in notes) <= 400
    assert max(len(s.split(" ")) for s in shorts) <= 3
    assert sum(map(len, notes)) / len(notes) > 3 * sum(map(len, shorts)) / len(shorts)


@pytest.mark.parametrize("mix", [(0.5, 0.5), (0.5, 0.4, 0.2), (1.2, -0.1, -0.1)])
def test_invalid_operation_mix_fails_fast(tmp_path, mix):
    with pytest.raises(ValueError, match="operation_mix"):
        gen.generate_landing_zone(tmp_path, messages=10, operation_mix=mix)
    with pytest.raises(ValueError, match="max_words"):
        gen.ColumnDef("X", "STRING", max_words=0)


def replayed(zone: gen.LandingZone, table: gen.TableDef) -> tuple[dict, dict]:
    """The table and each key's versions, replayed from the messages as written, in order."""
    keys, names = [c.name for c in table.key_columns], [c.name for c in table.columns]
    state, versions = {}, {}
    for m in zone.messages_for(table.name):
        sequence = m.headers["changeSequence"] or None
        if m.before is not None:
            old = tuple(m.before[k] for k in keys)
            state.pop(old)
            versions[old][-1][2] = sequence
        if m.operation != "DELETE":
            present = {names[o - 1] for o in gen.mask_ordinals(m.column_mask or b"\xff" * 4) if o <= len(names)}
            row = {n: m.data[n] if n in present or m.before is None else m.before[n] for n in names}
            state[tuple(row[k] for k in keys)] = row
            versions.setdefault(tuple(row[k] for k in keys), []).append([row, sequence, None])
    return state, {key: [gen.Version(*v) for v in vs] for key, vs in versions.items()}


@pytest.mark.parametrize("options", [{}, dict(key_changes=0.3, partial_masks=0.5)])
def test_the_truth_is_what_replaying_the_messages_gives(tmp_path, options):
    zone = gen.generate_landing_zone(tmp_path, messages=900, seed=17, **options)
    for table in zone.tables:
        assert replayed(zone, table) == (zone.final_state(table.name), zone.history(table.name))
    updates = [m for m in zone.messages if m.operation == "UPDATE"]
    partial = [m for m in updates if any(v is None for v in m.data.values())
               and len(gen.mask_ordinals(m.column_mask)) < len(m.data)]
    key_columns = {t.name: t.key_columns for t in zone.tables}
    moved = [m for m in updates if any(m.before[c.name] != m.data[c.name] for c in key_columns[m.table])]
    assert bool(partial) == bool(moved) == bool(options)


def test_key_changes_need_before_images(tmp_path):
    with pytest.raises(ValueError, match="key_changes needs before_images"):
        gen.generate_landing_zone(tmp_path, messages=10, key_changes=0.1, before_images=False)
    with pytest.raises(ValueError, match="partial_masks"):
        gen.generate_landing_zone(tmp_path, messages=10, partial_masks=2)


# --------------------------------------------------------------------------------------------
# Encodings, every source type, and schema changes beyond ADD COLUMN
# --------------------------------------------------------------------------------------------

ALL_TYPES = tuple(t for t in gen._AVRO_TYPE)


def every_type_table(name: str = "EVERY_TYPE") -> gen.TableDef:
    """One column of every source type, NUMERIC at several precisions and scales."""
    columns = [gen.ColumnDef("ID", "INT8", pk_position=1)]
    columns += [gen.ColumnDef(f"C_{t}", t, precision=12 if t == "NUMERIC" else 0, scale=3 if t == "NUMERIC" else 0)
                for t in ALL_TYPES]
    columns += [gen.ColumnDef(f"N_{p}_{str(s).replace('-', 'M')}", "NUMERIC", precision=p, scale=s)
                for p, s in ((38, 10), (39, 5), (5, -2), (2, 5), (7, 0))]
    return gen.TableDef("QA", name, "every", columns)


@pytest.mark.parametrize("settings_", [{}, {"logical_types": True}, {"all_text": True}], ids=["text", "logical", "all-text"])
def test_every_source_type_round_trips_in_every_encoding(tmp_path, settings_):
    zone = gen.generate_landing_zone(tmp_path, messages=300, seed=9, tables=[every_type_table()], **settings_)
    assert_round_trip(zone)
    manifest = json.loads((zone.root / "_manifest.json").read_text())
    assert (manifest["logical_types"], manifest["all_text"]) == (bool(settings_.get("logical_types")),
                                                                 bool(settings_.get("all_text")))


def test_the_same_seed_sends_the_same_source_values_in_every_encoding(tmp_path):
    table = every_type_table()
    zones = [gen.generate_landing_zone(tmp_path / name, messages=200, seed=4, tables=[table], **settings_)
             for name, settings_ in (("t", {}), ("l", {"logical_types": True}), ("a", {"all_text": True}))]
    typed = [[{c.name: gen.expected_value(c, m.data[c.name]) for c in table.columns if m.data is not None}
              for m in zone.messages] for zone in zones]
    assert typed[0] == typed[1] == typed[2]
    assert sum(1 for row in typed[0] for v in row.values() if v is not None) > 3000


def data_field_types(encoding: str) -> dict:
    schema = gen.data_schema(every_type_table().columns, encoding=encoding)
    return {f["name"]: f["type"][1] for f in schema["fields"][0]["type"]["fields"]}


def test_logical_types_are_replicates():
    types = data_field_types("logical")
    assert types["C_DATE"] == {"type": "int", "logicalType": "date"}
    assert types["C_TIME"] == {"type": "int", "logicalType": "time-millis"}
    assert types["C_DATETIME"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert types["C_NUMERIC"] == {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}
    assert types["N_39_5"] == {"type": "bytes", "logicalType": "decimal", "precision": 39, "scale": 5}
    assert types["C_UINT8"] == {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0}
    # Scales an Avro decimal cannot have: the unscaled bytes, scaled by the metadata.
    assert types["N_5_M2"] == types["N_2_5"] == {"type": "bytes"}
    assert types["C_INT4"] == {"type": "int"} and types["C_BLOB"] == {"type": "bytes"}
    text = data_field_types("text")
    assert {text[f"C_{t}"]["type"] for t in ("DATE", "TIME", "DATETIME", "NUMERIC", "UINT8", "CLOB")} == {"string"}
    assert (text["C_UINT4"], text["C_BLOB"], text["C_REAL4"]) == ({"type": "long"}, {"type": "bytes"}, {"type": "float"})
    assert {t["type"] for t in data_field_types("all-text").values()} == {"string"}


def test_logical_and_all_text_exclude_each_other(tmp_path):
    with pytest.raises(ValueError, match="exclude"):
        gen.generate_landing_zone(tmp_path, logical_types=True, all_text=True)


def evolving_table() -> gen.TableDef:
    C = gen.ColumnDef
    return gen.TableDef("INV", "STOCK", "stock", (
        C("ID", "INT4", pk_position=1), C("QTY", "INT4"), C("NOTE", "STRING", 20), C("PRICE", "NUMERIC", 0, 9, 2),
    ), changes=(gen.AddColumn(C("COLOR", "WSTRING", 20)), gen.DropColumn("NOTE"),
                gen.AlterColumn(C("QTY", "INT8")), gen.AlterColumn(C("PRICE", "NUMERIC", 0, 12, 2))))


@pytest.mark.parametrize("settings_", [{}, {"logical_types": True}], ids=["text", "logical"])
def test_drop_and_alter_make_new_versions(tmp_path, settings_):
    zone = gen.generate_landing_zone(tmp_path, messages=600, seed=12, tables=[evolving_table()], **settings_)
    assert_round_trip(zone)
    described = [(e.version, {name: (c["ordinal"], c["type"], c["precision"])
                              for name, c in e.md["tableStructure"]["tableColumns"].items()}) for e in zone.metadata]
    assert described == [
        (1, {"ID": (1, "INT4", 0), "QTY": (2, "INT4", 0), "NOTE": (3, "STRING", 0), "PRICE": (4, "NUMERIC", 9)}),
        (2, {"ID": (1, "INT4", 0), "QTY": (2, "INT4", 0), "NOTE": (3, "STRING", 0), "PRICE": (4, "NUMERIC", 9),
             "COLOR": (5, "WSTRING", 0)}),
        (3, {"ID": (1, "INT4", 0), "QTY": (2, "INT4", 0), "PRICE": (3, "NUMERIC", 9), "COLOR": (4, "WSTRING", 0)}),
        (4, {"ID": (1, "INT4", 0), "QTY": (2, "INT8", 0), "PRICE": (3, "NUMERIC", 9), "COLOR": (4, "WSTRING", 0)}),
        (5, {"ID": (1, "INT4", 0), "QTY": (2, "INT8", 0), "PRICE": (3, "NUMERIC", 12), "COLOR": (4, "WSTRING", 0)}),
    ]
    assert len({e.schema_id for e in zone.metadata}) == 5
    for m in zone.messages:
        assert list(m.data) == [c.name for c in evolving_table().version_columns(m.table_version)]
    # A row written before the DROP and updated after it: its before-image has no NOTE either.
    assert any(m.table_version >= 3 and m.before is not None and "NOTE" not in m.before for m in zone.messages)
    qty_types = {json.dumps(t) for e in zone.metadata
                 for t in [next(f["type"] for f in json.loads(e.data_schema_json)["fields"][0]["type"]["fields"]
                                if f["name"] == "QTY")]}
    assert qty_types == {json.dumps([{"type": "null"}, {"type": "int"}]), json.dumps([{"type": "null"}, {"type": "long"}])}


@pytest.mark.parametrize("change, message", [
    (gen.DropColumn("ID"), "non-key"), (gen.DropColumn("MISSING"), "non-key"),
    (gen.AlterColumn(gen.ColumnDef("QTY", "INT2")), "cannot keep"),
    (gen.AlterColumn(gen.ColumnDef("QTY", "UINT4")), "cannot keep"),
    (gen.AlterColumn(gen.ColumnDef("PRICE", "NUMERIC", 0, 12, 3)), "cannot keep"),
    (gen.AddColumn(gen.ColumnDef("NOTE", "STRING")), "duplicate"),
    ("DROP NOTE", "AddColumn, DropColumn or AlterColumn"),
])
def test_invalid_schema_changes_fail_fast(change, message):
    C = gen.ColumnDef
    with pytest.raises(ValueError, match=message):
        gen.TableDef("S", "T", "t", (C("ID", "INT4", pk_position=1), C("QTY", "INT4"), C("NOTE", "STRING"),
                                     C("PRICE", "NUMERIC", 0, 9, 2)), changes=(gen.DropColumn("NOTE"), change))


def test_a_dropped_column_cannot_come_back_under_its_name():
    C = gen.ColumnDef
    with pytest.raises(ValueError, match="duplicate"):
        gen.TableDef("S", "T", "t", (C("ID", "INT4", pk_position=1), C("NOTE", "STRING")),
                     changes=(gen.DropColumn("NOTE"), gen.AddColumn(C("NOTE", "STRING"))))


# The oracle itself, on values worked out by hand.
@pytest.mark.parametrize("column, sent, time_zone, expected", [
    (gen.ColumnDef("X", "DATETIME"), "2024-03-10 02:30:00.000001", "America/New_York",
     datetime(2024, 3, 10, 7, 30, 0, 1, tzinfo=timezone.utc)),
    (gen.ColumnDef("X", "DATETIME"), "2024-11-03 01:30:00.000000", "America/New_York",
     datetime(2024, 11, 3, 5, 30, tzinfo=timezone.utc)),
    (gen.ColumnDef("X", "DATETIME"), datetime(2024, 11, 3, 1, 30, tzinfo=timezone.utc), "America/New_York",
     datetime(2024, 11, 3, 1, 30, tzinfo=timezone.utc)),
    (gen.ColumnDef("X", "TIME"), "07:05:09", "UTC", "07:05:09.000000"),
    (gen.ColumnDef("X", "TIME"), time(7, 5, 9, 120000), "UTC", "07:05:09.120000"),
    (gen.ColumnDef("X", "NUMERIC", 0, 5, -2), "12300", "UTC", Decimal(12300)),
    (gen.ColumnDef("X", "NUMERIC", 0, 5, -2), (123).to_bytes(1, "big"), "UTC", Decimal(12300)),
    (gen.ColumnDef("X", "NUMERIC", 0, 39, 2), "-1.5", "UTC", "-1.50"),
    (gen.ColumnDef("X", "NUMERIC", 0, 38, -1), "10", "UTC", "10"),
    (gen.ColumnDef("X", "NUMERIC", 0, 2, 5), (-7).to_bytes(1, "big", signed=True), "UTC", Decimal("-0.00007")),
    (gen.ColumnDef("X", "UINT8"), "18446744073709551615", "UTC", Decimal(2 ** 64 - 1)),
    (gen.ColumnDef("X", "BOOLEAN"), "false", "UTC", False),
    (gen.ColumnDef("X", "BLOB"), "00FF", "UTC", b"\x00\xff"),
    (gen.ColumnDef("X", "REAL4"), "0.1", "UTC", struct.unpack("<f", struct.pack("<f", 0.1))[0]),
    (gen.ColumnDef("X", "CLOB"), "12", "UTC", "12"),
])
def test_expected_value(column, sent, time_zone, expected):
    actual = gen.expected_value(column, sent, time_zone)
    assert actual == expected and type(actual) is type(expected)


def test_the_generate_command_prints_the_zone_on_stdout_and_progress_on_stderr(tmp_path):
    done = subprocess.run([sys.executable, "-m", "spark_replicate.cli", "generate", str(tmp_path / "zone"),
                           "--messages", "300"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sum(sum(ops.values()) for ops in json.loads(done.stdout)["counts"].values()) == 300
    assert done.stderr.splitlines()[-1] == "spark-replicate generate: 300 of 300 data messages written"
