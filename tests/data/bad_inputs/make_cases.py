#!/usr/bin/env python3
"""Writes the bad-input corpus of ``tests/test_bad_inputs.py``: tiny landed files that each mix
good messages with one bad message (or carry one file-level fault), the small schema topic they
need, and ``cases.json``, the table of cases with the outcome expected under FAILFAST, PERMISSIVE
and DROPMALFORMED.

The expected outcomes are derived here, from what was written (which messages are good, which one
is bad and why, where each one sits in its file), never from the reader. Everything is
deterministic, so the committed files can be regenerated at any time::

    python tests/data/bad_inputs/make_cases.py           # rewrite the corpus in place
    python tests/data/bad_inputs/make_cases.py OUT_DIR   # write it elsewhere (to compare)

Each bad message is built from the encoding of a good one, field by field (every field's bytes
come from fastavro, and their concatenation is checked against fastavro's encoding of the whole
record), then cut, replaced or extended at a named field: the cases say exactly which byte is
wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import fastavro

from spark_replicate.generate import (ENVELOPE_SCHEMA, KAFKA_RECORD_SCHEMA, ColumnDef, TableDef, data_schema,
                                      encode_envelope, mask_bytes, metadata_schema)

HERE = Path(__file__).resolve().parent
MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
FRAMINGS = ("length-prefixed", "avro", "message")
EXTENSIONS = {"length-prefixed": "lp", "avro": "avro"}
SYNC_MARKER = hashlib.md5(b"spark-replicate bad inputs").digest()
COUNTERS = ("messagesRead", "rowsReturned", "metadataMessages", "filteredOut", "malformed", "dropped",
            "filesSkipped", "maskBitsIgnored")

TRUNCATED = "REPLICATE_TRUNCATED"
BAD_PAYLOAD = "REPLICATE_BAD_PAYLOAD"
BAD_FRAME = "REPLICATE_BAD_FRAME"
INVALID_UTF8 = "REPLICATE_INVALID_UTF8"
BAD_EMBEDDED_SCHEMA = "REPLICATE_BAD_EMBEDDED_SCHEMA"
CORRUPT_FILE = "REPLICATE_CORRUPT_FILE"


# --------------------------------------------------------------------------------------------
# Avro pieces
# --------------------------------------------------------------------------------------------


def avro(schema, value) -> bytes:
    """The Avro binary encoding of one value, by fastavro."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), value)
    return buffer.getvalue()


def avro_long(n: int) -> bytes:
    return avro("long", n)


def avro_raw_string(raw: bytes) -> bytes:
    """A string field holding any bytes, valid UTF-8 or not."""
    return avro_long(len(raw)) + raw


def compact_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


Fields = list[tuple[str, bytes]]


def joined(fields: Fields) -> bytes:
    return b"".join(b for _, b in fields)


def field_bytes(fields: Fields, name: str) -> bytes:
    return dict(fields)[name]


def cut_before(fields: Fields, name: str) -> bytes:
    """The encoding up to (not including) the field ``name``."""
    names = [n for n, _ in fields]
    return joined(fields[:names.index(name)])


def cut_inside(fields: Fields, name: str) -> bytes:
    """The encoding up to the middle of the field ``name``: at least one of its bytes, not all."""
    own = field_bytes(fields, name)
    assert len(own) >= 2, f"field {name} is too short to be cut inside"
    return cut_before(fields, name) + own[:len(own) // 2]


def with_field(fields: Fields, name: str, value: bytes) -> Fields:
    assert name in dict(fields), name
    return [(n, value if n == name else b) for n, b in fields]


# --------------------------------------------------------------------------------------------
# The two tables of the corpus and their messages
# --------------------------------------------------------------------------------------------


class Table:
    """One table version: its data schema, schema id and metadata (MD) message."""

    def __init__(self, definition: TableDef):
        self.name = definition.name
        self.columns = [c.name for c in definition.columns]
        self.definition = definition
        self.schema = data_schema(definition.columns)
        self.schema_json = compact_json(self.schema)
        self.schema_id = hashlib.md5(f"bad-inputs/{self.name}/1".encode()).hexdigest().upper()
        data, _, headers = self.schema["fields"]
        self.column_schemas = {f["name"]: f["type"] for f in data["type"]["fields"]}
        self.header_schemas = [(f["name"], f["type"]) for f in headers["type"]["fields"]]
        self.md_schema = metadata_schema(self.columns)
        self.md_schema_json = compact_json(self.md_schema)

    def md_message(self, table_version: int = 1) -> bytes:
        columns = self.definition.columns
        md = {
            "schemaId": self.schema_id,
            "lineage": {"server": "replicate-01.example.com", "task": "bad-inputs", "schema": self.definition.schema,
                        "table": self.definition.table, "tableVersion": table_version,
                        "timestamp": "2024-05-02T10:11:00.000"},
            "tableStructure": {"tableColumns": {c.name: {
                "ordinal": ordinal, "type": c.source_type, "length": c.length, "precision": c.precision,
                "scale": c.scale, "primaryKeyPosition": c.pk_position, "nullable": c.nullable}
                for ordinal, c in enumerate(columns, 1)}},
            "dataSchema": self.schema_json,
        }
        return encode_envelope("MD", avro(self.md_schema, md), self.schema_id, self.md_schema_json)


ITEMS = Table(TableDef("BAD", "ITEMS", "bad", (
    ColumnDef("ID", "INT4", pk_position=1),
    ColumnDef("NAME", "STRING", 20),
    ColumnDef("NOTE", "WSTRING", 50),
)))
OTHER = Table(TableDef("BAD", "OTHER", "bad", (
    ColumnDef("K", "INT4", pk_position=1),
    ColumnDef("V", "STRING", 20),
)))
UNKNOWN_SCHEMA_ID = "0123456789ABCDEF0123456789ABCDEF"


def envelope_fields(kind: str, payload: bytes, schema_id: str | None = None, schema_json: str | None = None,
                    headers: dict | None = None, magic: bytes = b"atMSG") -> Fields:
    """The envelope field by field; ``message`` is split into its length and its bytes."""
    types = {f["name"]: f["type"] for f in ENVELOPE_SCHEMA["fields"]}
    fields = [("magic", magic), ("type", avro(types["type"], kind)), ("headers", avro(types["headers"], headers)),
              ("messageSchemaId", avro(types["messageSchemaId"], schema_id)),
              ("messageSchema", avro(types["messageSchema"], schema_json)),
              ("message length", avro_long(len(payload))), ("message", payload)]
    if magic == b"atMSG":
        assert joined(fields) == encode_envelope(kind, payload, schema_id, schema_json, headers)
    return fields


@dataclass(frozen=True)
class Change:
    """One DT message of a table: a row change and its Replicate headers."""

    key: str
    table: Table
    operation: str
    data: dict
    before: dict | None
    seq: int
    changed: tuple | None
    present: tuple | None = (1, 2, 3)
    change_mask: bytes | None = None  # when given, sent instead of the mask of ``changed``
    column_mask: bytes | None = None  # when given, sent instead of the mask of ``present``

    @property
    def masks(self) -> tuple[bytes | None, bytes | None]:
        n = len(self.table.columns)
        change = self.change_mask if self.change_mask is not None else (
            None if self.changed is None else mask_bytes(self.changed, n))
        column = self.column_mask if self.column_mask is not None else (
            None if self.present is None else mask_bytes(self.present, n))
        return change, column

    @property
    def sets_bits_past_last_column(self) -> bool:
        """Counted in ``maskBitsIgnored``: the bits name no column and are ignored."""
        return any(mask is not None and int.from_bytes(mask, "big") >> len(self.table.columns)
                   for mask in self.masks)

    @property
    def timestamp(self) -> datetime:
        return datetime(2024, 5, 2, 10, 11, 12, self.seq, tzinfo=timezone.utc)

    @property
    def headers(self) -> dict:
        change_mask, column_mask = self.masks
        return {"operation": self.operation, "changeSequence": f"20240502101112{self.seq:021d}",
                "timestamp": self.timestamp.strftime("%Y-%m-%d %H:%M:%S.%f"),
                "streamPosition": f"0000002A:{self.seq:08X}:0001", "transactionId": f"{self.seq:032X}",
                "changeMask": change_mask, "columnMask": column_mask, "transactionEventCounter": self.seq,
                "transactionLastEvent": True, "externalSchemaId": None}

    def payload_fields(self) -> Fields:
        """``data`` column by column, ``beforeData`` whole, ``headers`` field by field."""
        columns = self.table.column_schemas
        image = [(f"data.{name}", avro(schema, self.data[name])) for name, schema in columns.items()]
        before = b"\x00" if self.before is None else b"\x02" + b"".join(
            avro(schema, self.before[name]) for name, schema in columns.items())
        headers = [(f"headers.{name}", avro(schema, self.headers[name])) for name, schema in self.table.header_schemas]
        fields = image + [("beforeData", before)] + headers
        whole = avro(self.table.schema, {"data": self.data, "beforeData": self.before, "headers": self.headers})
        assert joined(fields) == whole, f"{self.key}: field-by-field encoding differs from fastavro's"
        return fields

    def envelope_fields(self, payload: bytes | None = None, *, by_id: bool = True, embedded: str | None = None,
                        schema_id: str | None = None, headers: dict | None = None) -> Fields:
        return envelope_fields("DT", joined(self.payload_fields()) if payload is None else payload,
                               schema_id or (self.table.schema_id if by_id else None), embedded, headers)

    def message(self, **kwargs) -> bytes:
        return joined(self.envelope_fields(**kwargs))

    def expected_row(self) -> dict:
        """The reader's output row, values as cases.json stores them (bytes as hex, timestamps ISO)."""
        change_mask, column_mask = self.masks
        names = self.table.columns

        def named(mask):
            return None if mask is None else [names[i] for i in range(len(names))
                                              if int.from_bytes(mask, "big") >> i & 1]
        return {**self.data,
                "header__schema_id": self.table.schema_id, "header__table_version": 1,
                "header__operation": self.operation, "header__change_seq": self.headers["changeSequence"],
                "header__timestamp": self.timestamp.isoformat(),
                "header__stream_position": self.headers["streamPosition"],
                "header__transaction_id": self.headers["transactionId"],
                "header__transaction_event_counter": self.seq, "header__transaction_last_event": True,
                "header__external_schema_id": None,
                "header__change_mask": None if change_mask is None else change_mask.hex(),
                "header__column_mask": None if column_mask is None else column_mask.hex(),
                "header__changed_columns": named(change_mask), "header__present_columns": named(column_mask),
                "header__before_image": self.before}


ROW_CHANGES = [
    Change("insert-1", ITEMS, "INSERT", {"ID": 1, "NAME": "anvil", "NOTE": "heavy"}, None, 1, (1, 2, 3)),
    Change("update-1", ITEMS, "UPDATE", {"ID": 1, "NAME": "anvil", "NOTE": "very heavy"},
           {"ID": 1, "NAME": "anvil", "NOTE": "heavy"}, 2, (3,)),
    Change("insert-2", ITEMS, "INSERT", {"ID": 2, "NAME": "bolt", "NOTE": "Zürich ✓"}, None, 3, (1, 2, 3)),
    Change("update-2-without-change-mask", ITEMS, "UPDATE", {"ID": 2, "NAME": "bolt", "NOTE": None},
           {"ID": 2, "NAME": "bolt", "NOTE": "Zürich ✓"}, 4, None),
    Change("update-2-mask-with-leading-zero-bytes", ITEMS, "UPDATE", {"ID": 2, "NAME": "nut", "NOTE": None},
           {"ID": 2, "NAME": "bolt", "NOTE": None}, 5, (2,), change_mask=b"\x00\x00\x02"),
    Change("other-10", OTHER, "INSERT", {"K": 10, "V": "ten"}, None, 6, (1, 2), present=(1, 2)),
    # Bits past the last column, as real Replicate output sends them: ignored, the row kept.
    Change("update-1-change-mask-only-past-last-column", ITEMS, "UPDATE",
           {"ID": 1, "NAME": "anvil", "NOTE": "very heavy"}, {"ID": 1, "NAME": "anvil", "NOTE": "very heavy"}, 7,
           (), change_mask=b"\x08"),
    Change("update-1-change-mask-01-07", ITEMS, "UPDATE", {"ID": 1, "NAME": "hammer", "NOTE": "light"},
           {"ID": 1, "NAME": "anvil", "NOTE": "very heavy"}, 8, (2, 3), change_mask=b"\x01\x07"),
    Change("update-1-column-mask-17", ITEMS, "UPDATE", {"ID": 1, "NAME": "hammer", "NOTE": None},
           {"ID": 1, "NAME": "hammer", "NOTE": "light"}, 9, (3,), column_mask=b"\x17"),
]
ROWS = {change.key: change for change in ROW_CHANGES}
# The message every malformed case breaks: an UPDATE with a before-image, so every part of the
# payload is present.
BROKEN = Change("broken", ITEMS, "UPDATE", {"ID": 7, "NAME": "gear", "NOTE": "oiled"},
                {"ID": 7, "NAME": "gear", "NOTE": "dry"}, 90, (3,))


# --------------------------------------------------------------------------------------------
# Landed messages, files and cases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Landed:
    """One landed message, or (kind ``unframed``) bytes the framing cannot cut into a message.

    ``table`` is the table the reader can tell from the envelope, None when it cannot (then a
    malformed message can be no other table's and must never be filtered away).
    """

    kind: str  # "row" | "metadata" | "malformed" | "unframed" | "oversized"
    raw: bytes
    table: str | None = None
    key: str | None = None
    reason: str | None = None


def row(key: str) -> Landed:
    change = ROWS[key]
    return Landed("row", change.message(), change.table.name, key=key)


def metadata(table: Table = ITEMS) -> Landed:
    return Landed("metadata", table.md_message(), table.name)


def malformed(raw: bytes, reason: str, table: Table | None = None) -> Landed:
    return Landed("malformed", raw, None if table is None else table.name, reason=reason)


def unframed(raw: bytes) -> Landed:
    """Written verbatim where a length prefix (or a whole-file message) should be."""
    return Landed("unframed", raw, reason=BAD_FRAME)


def oversized(raw: bytes) -> Landed:
    """An intact frame over ``maxMessageBytes``: malformed and skipped unread; reading goes on."""
    return Landed("oversized", raw, reason=BAD_FRAME)


def around(bad: Landed) -> list[Landed]:
    """The usual file: metadata, good rows of the table, a row of the other table, the bad message
    in the middle and more good rows after it."""
    return [metadata(), row("insert-1"), row("other-10"), bad, row("update-1"), row("insert-2")]


@dataclass(frozen=True)
class FileFault:
    """Damage done to a written file, and what reading it does: ``error`` (with ``contains``)
    after the first ``readable`` messages."""

    error: str
    contains: tuple[str, ...]
    readable: int


# Damages a written file (if need be) and says what reading it must do; ``contains`` need not
# name the file, which every such error names.
Damage = Callable[[Path], FileFault]


@dataclass
class LandedFile:
    name: str
    framing: str
    entries: list[Landed]
    sync_interval: int = 16000
    damage: Damage | None = None
    raw_content: bytes | None = None  # written as is, instead of framing ``entries``


def land(framing: str, entries: list[Landed], stem: str = "part-0", **kwargs) -> list[LandedFile]:
    """The entries as files of one framing: one file, or one file per message."""
    if framing == "message":
        return [LandedFile(f"{stem}-{i:02d}.msg", framing, [entry], **kwargs) for i, entry in enumerate(entries)]
    return [LandedFile(f"{stem}.{EXTENSIONS[framing]}", framing, entries, **kwargs)]


@dataclass
class Case:
    id: str
    description: str
    framing: str  # the reader's `framing` option
    files: list[LandedFile]
    options: dict = field(default_factory=dict)
    extra_schema_files: list[LandedFile] = field(default_factory=list)  # beside the shared schema topic
    planning_error: tuple[str, tuple[str, ...]] | None = None  # (id, fragments of its message)

    @property
    def ignores_corrupt_files(self) -> bool:
        return self.options.get("ignoreCorruptFiles") == "true"


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write_file(path: Path, file: LandedFile) -> list[str]:
    """Writes one landed file; returns the position, as the reader describes it, of each entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if file.raw_content is not None:
        path.write_bytes(file.raw_content)
        return []
    if file.framing == "message":
        (entry,) = file.entries
        path.write_bytes(entry.raw)
        return ["whole-file message"]
    if file.framing == "length-prefixed":
        positions, content = [], bytearray()
        for entry in file.entries:
            positions.append(f"frame at byte {len(content)}")
            if entry.kind != "unframed":
                content += len(entry.raw).to_bytes(4, "big")
            content += entry.raw
        path.write_bytes(bytes(content))
        return positions
    records = [{"topic": "bad", "partition": 0, "offset": i, "timestamp": 1_714_644_672_000 + i, "key": None,
                "value": entry.raw} for i, entry in enumerate(file.entries)]
    with open(path, "wb") as stream:
        fastavro.writer(stream, fastavro.parse_schema(KAFKA_RECORD_SCHEMA), records, sync_interval=file.sync_interval,
                        sync_marker=SYNC_MARKER)
    return [f"container block at byte {block}, record {index}" for block, index in container_records(path)]


def container_records(path: Path) -> list[tuple[int, int]]:
    """(block start, index in block) of every record of a container file, read by fastavro."""
    with open(path, "rb") as stream:
        return [(block.offset, i) for block in fastavro.block_reader(stream) for i in range(block.num_records)]


def container_blocks(path: Path) -> list[int]:
    return sorted({block for block, _ in container_records(path)})


@dataclass
class Written:
    """A file of a case after writing: where it is, its entries' positions, its fault."""

    relpath: str
    file: LandedFile
    positions: list[str]
    fault: FileFault | None


def case_file(case_id: str, name: str) -> str:
    """Where a case's file is, relative to the corpus directory."""
    return f"cases/{case_id}/{name}"


def write_case(root: Path, case: Case) -> tuple[list[Written], list[str]]:
    written = []
    for file in case.files:
        relpath = case_file(case.id, file.name)
        positions = write_file(root / relpath, file)
        fault = None
        if file.damage is not None:
            fault = file.damage(root / relpath)
            fault = replace(fault, contains=(relpath,) + fault.contains)
        written.append(Written(relpath, file, positions, fault))
    extra = []
    for file in case.extra_schema_files:
        relpath = case_file(case.id, file.name)
        write_file(root / relpath, file)
        extra.append(relpath)
    return written, extra


def schema_topics(root: Path) -> dict[str, str]:
    """The shared schema topic, landed in each framing (both tables' MD messages)."""
    topics = {}
    for framing in FRAMINGS:
        directory = f"_schema/{framing}"
        for file in land(framing, [metadata(ITEMS), metadata(OTHER)]):
            write_file(root / directory / file.name, file)
        topics[framing] = directory
    topics["auto"] = topics["length-prefixed"]
    return topics


# --------------------------------------------------------------------------------------------
# Expected outcomes
# --------------------------------------------------------------------------------------------


def digest(raw: bytes) -> dict:
    """How cases.json pins the exact raw bytes of a corrupt record without spelling them out."""
    return {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def error(error_id: str, contains, stage: str = "read") -> dict:
    return {"error": {"id": error_id, "stage": stage, "contains": list(contains)}}


def expected_outcome(case: Case, written: list[Written], mode: str, table: Table) -> dict:
    """What reading the case's files as ``table`` under ``mode`` must give, message by message."""
    if case.planning_error is not None:
        error_id, fragments = case.planning_error
        return error(error_id, fragments, stage="planning")
    counts = dict.fromkeys(COUNTERS, 0)
    rows, corrupt = [], []
    for file in written:
        readable = len(file.file.entries) if file.fault is None else file.fault.readable
        for entry, position in list(zip(file.file.entries, file.positions))[:readable]:
            counts["messagesRead"] += 1
            if entry.kind == "metadata":
                counts["metadataMessages"] += 1
            elif entry.kind == "row" or entry.table not in (None, table.name):
                if entry.table == table.name:
                    counts["rowsReturned"] += 1
                    counts["maskBitsIgnored"] += ROWS[entry.key].sets_bits_past_last_column
                    rows.append(entry.key)
                else:
                    counts["filteredOut"] += 1
            else:
                counts["malformed"] += 1
                reason_counter = f"malformed_{entry.reason}"
                counts[reason_counter] = counts.get(reason_counter, 0) + 1
                where = [file.relpath, position]
                if mode == "FAILFAST":
                    return error(entry.reason, where)
                if mode == "PERMISSIVE":
                    counts["rowsReturned"] += 1
                    corrupt.append({"reason": entry.reason, "contains": where,
                                    "bytes": None if entry.kind in ("unframed", "oversized") else digest(entry.raw)})
                else:
                    counts["dropped"] += 1
            if entry.kind == "unframed" and file.file.framing == "length-prefixed":
                break  # nothing after a broken frame can be framed
        if file.fault is not None:
            if not case.ignores_corrupt_files:
                return error(file.fault.error, file.fault.contains)
            counts["filesSkipped"] += 1
    outcome = {"rows": rows, "counts": counts}
    if mode == "PERMISSIVE":
        outcome["corrupt"] = corrupt
    return outcome


def has_malformed_message(case: Case) -> bool:
    return any(e.kind in ("malformed", "unframed", "oversized") for f in case.files for e in f.entries)


def case_entry(case: Case, written: list[Written], extra_schema: list[str], topics: dict[str, str]) -> dict:
    entry = {
        "id": case.id,
        "description": case.description,
        "framing": case.framing,
        "files": [w.relpath for w in written],
        "schema_topic": [topics[case.framing]] + extra_schema,
        "options": case.options,
        "expected": {mode: expected_outcome(case, written, mode, ITEMS) for mode in MODES},
    }
    if has_malformed_message(case) and case.planning_error is None:
        entry["expected_reading_other_table"] = {
            mode: expected_outcome(case, written, mode, OTHER) for mode in ("PERMISSIVE", "DROPMALFORMED")}
    return entry


# --------------------------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------------------------


def cycle_framings(specs: list) -> list[tuple[str, object]]:
    """Spreads a family of cases over the three framings, so every position format is checked."""
    return [(FRAMINGS[i % len(FRAMINGS)], spec) for i, spec in enumerate(specs)]


def message_case(case_id: str, description: str, bad: Landed, framing: str = "length-prefixed", **kwargs) -> Case:
    return Case(case_id, description, framing, land(framing, around(bad)), **kwargs)


def envelope_truncations() -> list[Case]:
    plain = BROKEN.envelope_fields(headers={"origin": "sink-1"})
    embedded = BROKEN.envelope_fields(by_id=False, embedded=ITEMS.schema_json)
    cuts = [
        ("inside_magic", "inside the 5-byte magic", cut_inside(plain, "magic")),
        ("after_magic", "right after the magic", cut_before(plain, "type")),
        ("inside_type", "inside the type string", cut_inside(plain, "type")),
        ("before_headers_branch", "before the headers union branch", cut_before(plain, "headers")),
        ("inside_headers", "inside the headers map", cut_inside(plain, "headers")),
        ("before_schema_id", "before messageSchemaId", cut_before(plain, "messageSchemaId")),
        ("inside_schema_id", "inside messageSchemaId", cut_inside(plain, "messageSchemaId")),
        ("inside_embedded_schema", "inside messageSchema (a self-describing message)",
         cut_inside(embedded, "messageSchema")),
        ("before_message_length", "before the message length", cut_before(plain, "message length")),
        ("inside_message_length", "inside the 2-byte message length varint", cut_inside(plain, "message length")),
        ("after_message_length", "right after the message length: no payload byte",
         cut_before(plain, "message")),
        ("inside_message", "inside the message bytes", cut_inside(plain, "message")),
    ]
    return [message_case(f"envelope_truncated_{name}", f"an envelope that ends {where}",
                         malformed(raw, TRUNCATED), framing)
            for framing, (name, where, raw) in cycle_framings(cuts)]


def payload_truncations() -> list[Case]:
    """The envelope is whole (its message length matches); the payload inside it is cut."""
    payload = BROKEN.payload_fields()
    cuts = [
        ("inside_data", "inside a column of `data`", cut_inside(payload, "data.NAME")),
        ("before_before_data", "between `data` and the `beforeData` branch", cut_before(payload, "beforeData")),
        ("inside_before_data", "inside `beforeData`", cut_inside(payload, "beforeData")),
        ("before_headers", "between `beforeData` and `headers`", cut_before(payload, "headers.operation")),
        ("inside_headers", "inside the changeSequence header", cut_inside(payload, "headers.changeSequence")),
        ("before_last_header", "before the last header field", cut_before(payload, "headers.externalSchemaId")),
    ]
    return [message_case(f"payload_truncated_{name}", f"a payload that ends {where}",
                         malformed(BROKEN.message(payload=raw), TRUNCATED, ITEMS), framing)
            for framing, (name, where, raw) in cycle_framings(cuts)]


def broken_envelope(name: str, value: bytes) -> bytes:
    return joined(with_field(BROKEN.envelope_fields(), name, value))


def broken_payload(name: str, value: bytes) -> bytes:
    return BROKEN.message(payload=joined(with_field(BROKEN.payload_fields(), name, value)))


def self_describing(schema_json: str, schema_id: str | None = None) -> bytes:
    return BROKEN.message(by_id=False, embedded=schema_json, schema_id=schema_id)


def with_schema_changes(**changes) -> str:
    """The table's data schema with top-level properties added (``doc``, custom ones)."""
    return compact_json({**ITEMS.schema, **changes})


def nested_lists(depth: int):
    return [] if depth == 1 else [nested_lists(depth - 1)]


def json_depth(value) -> int:
    """Nesting of JSON objects and arrays: ``{}`` is 1, ``{"a": []}`` is 2."""
    if isinstance(value, dict):
        return 1 + max(map(json_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(json_depth, value), default=0)
    return 0


def limit_between(option: str, limit: int, admitted: list[str], refused: str) -> dict:
    """Reader options setting an embedded-schema limit that the metadata's schemas (every
    embedded schema is capped, MD messages' too) stay within and the bad message's exceeds."""
    measure = (lambda text: json_depth(json.loads(text))) if option == "maxSchemaDepth" else len
    assert all(measure(text) <= limit for text in admitted) and measure(refused) > limit, option
    return {option: str(limit) if option == "maxSchemaDepth" else f"{limit // 1024}k"}


def md_schemas() -> list[str]:
    return [table.md_schema_json for table in (ITEMS, OTHER)]


def recursive_schema() -> str:
    schema = json.loads(ITEMS.schema_json)
    schema["fields"][0]["type"]["fields"].append({"name": "next", "type": ["null", "Data"], "default": None})
    return compact_json(schema)


def incompatible_schema() -> str:
    """NAME as an int: parses, but cannot be read as the table's string column."""
    schema = json.loads(ITEMS.schema_json)
    for column in schema["fields"][0]["type"]["fields"]:
        if column["name"] == "NAME":
            column["type"] = [{"type": "null"}, {"type": "int"}]
    return compact_json(schema)


def envelope_cases() -> list[Case]:
    return [
        message_case("bad_magic", "a message starting with `atMSX` instead of the magic `atMSG`",
                     malformed(joined(with_field(BROKEN.envelope_fields(), "magic", b"atMSX")),
                               "REPLICATE_BAD_MAGIC")),
        message_case("unknown_envelope_type", "an envelope of type `XX` (neither `MD` nor `DT`)",
                     malformed(joined(envelope_fields("XX", joined(BROKEN.payload_fields()), ITEMS.schema_id)),
                               "REPLICATE_UNKNOWN_MESSAGE_TYPE"), "avro"),
        message_case("envelope_headers_bad_union_branch", "the envelope's headers union has branch 2 of [null, map]",
                     malformed(broken_envelope("headers", avro_long(2)), BAD_PAYLOAD)),
        message_case("envelope_type_negative_length", "the type string has the length -3",
                     malformed(broken_envelope("type", avro_long(-3)), BAD_PAYLOAD), "message"),
        message_case("envelope_type_invalid_utf8", "the type string is the bytes ff fe",
                     malformed(broken_envelope("type", avro_raw_string(b"\xff\xfe")), INVALID_UTF8)),
        message_case("trailing_bytes_after_envelope", "three bytes follow the envelope's message field",
                     malformed(BROKEN.message() + b"\x00\x01\x02", "REPLICATE_TRAILING_BYTES"), "avro"),
        message_case("trailing_bytes_after_payload", "the payload inside the envelope has one byte too many",
                     malformed(BROKEN.message(payload=joined(BROKEN.payload_fields()) + b"\x00"),
                               "REPLICATE_TRAILING_BYTES", ITEMS), "message"),
        message_case("zero_length_message", "a length-prefixed frame of length 0",
                     malformed(b"", TRUNCATED)),
        message_case("unknown_schema_id", "a data message whose schema id no metadata announces",
                     malformed(BROKEN.message(schema_id=UNKNOWN_SCHEMA_ID), "REPLICATE_UNKNOWN_SCHEMA_ID"),
                     "message"),
        message_case("neither_schema_id_nor_schema", "a data message with neither messageSchemaId nor messageSchema",
                     malformed(BROKEN.message(by_id=False), "REPLICATE_UNKNOWN_SCHEMA_ID"), "avro"),
    ]


def payload_cases() -> list[Case]:
    name_bytes = field_bytes(BROKEN.payload_fields(), "data.NAME")[1:]  # the string after the union branch
    return [
        message_case("invalid_utf8_in_column", "the NAME column holds the bytes c3 28 41 (not UTF-8)",
                     malformed(broken_payload("data.NAME", b"\x02" + avro_raw_string(b"\xc3\x28\x41")),
                               INVALID_UTF8, ITEMS), "avro"),
        message_case("invalid_utf8_in_before_image", "the before-image's NOTE holds a lone continuation byte",
                     malformed(broken_payload("beforeData", b"\x02" + avro(ITEMS.column_schemas["ID"], 7)
                                              + b"\x02" + name_bytes + b"\x02" + avro_raw_string(b"dr\x80y")),
                               INVALID_UTF8, ITEMS), "message"),
        message_case("invalid_utf8_in_header", "the changeSequence header holds the bytes ed a0 80 (a surrogate)",
                     malformed(broken_payload("headers.changeSequence", avro_raw_string(b"2024\xed\xa0\x80")),
                               INVALID_UTF8, ITEMS)),
        message_case("bad_union_branch", "the NAME column's [null, string] union has branch 2",
                     malformed(broken_payload("data.NAME", avro_long(2) + name_bytes), BAD_PAYLOAD, ITEMS)),
        message_case("bad_operation_enum_index", "the operation enum has index 7 of 4 symbols",
                     malformed(broken_payload("headers.operation", avro_long(7)), BAD_PAYLOAD, ITEMS), "message"),
        message_case("overlong_varint", "the ID column's int is an 11-byte varint",
                     malformed(broken_payload("data.ID", b"\x02" + b"\x80" * 10 + b"\x00"), BAD_PAYLOAD, ITEMS),
                     "avro"),
        message_case("int_out_of_range", "the ID column's int varint holds 2^40",
                     malformed(broken_payload("data.ID", b"\x02" + avro_long(2 ** 40)), BAD_PAYLOAD, ITEMS)),
        message_case("unparseable_header_timestamp", "the timestamp header is `2024-13-45 25:61:61.000000`",
                     malformed(broken_payload("headers.timestamp", avro("string", "2024-13-45 25:61:61.000000")),
                               "REPLICATE_BAD_VALUE", ITEMS), "avro"),
    ]


def embedded_schema_cases() -> list[Case]:
    deeper = with_schema_changes(nesting=nested_lists(30))
    larger = with_schema_changes(doc="x" * 5000)
    return [
        message_case("embedded_schema_too_deep", "messageSchema nests JSON 80 levels deep (limit 64)",
                     malformed(self_describing(with_schema_changes(nesting=nested_lists(80))), BAD_EMBEDDED_SCHEMA)),
        message_case("embedded_schema_deeper_than_max_schema_depth",
                     "messageSchema nests JSON 31 levels deep, read with maxSchemaDepth 20",
                     malformed(self_describing(deeper), BAD_EMBEDDED_SCHEMA), "avro",
                     options=limit_between("maxSchemaDepth", 20, md_schemas(), deeper)),
        message_case("embedded_schema_too_large", "a 5 KB messageSchema read with maxEmbeddedSchemaBytes 4k",
                     malformed(self_describing(larger), BAD_EMBEDDED_SCHEMA), "message",
                     options=limit_between("maxEmbeddedSchemaBytes", 4096, md_schemas(), larger)),
        message_case("embedded_schema_recursive", "messageSchema whose Data record contains itself",
                     malformed(self_describing(recursive_schema()), BAD_EMBEDDED_SCHEMA)),
        message_case("embedded_schema_unparseable", "messageSchema is not JSON",
                     malformed(self_describing('{"type": "record", "name": '), BAD_EMBEDDED_SCHEMA), "avro"),
        message_case("embedded_schema_incompatible_with_table",
                     "messageSchema (with the table's schema id) types NAME as int, the table has a string",
                     malformed(self_describing(incompatible_schema(), ITEMS.schema_id), BAD_EMBEDDED_SCHEMA, ITEMS),
                     "message"),
    ]


def good_cases() -> list[Case]:
    other_broken = replace(BROKEN, table=OTHER, data={"K": 11, "V": "eleven"}, before=None, changed=(2,),
                           present=(1, 2))
    other_invalid = other_broken.message(payload=joined(with_field(
        other_broken.payload_fields(), "data.V", b"\x02" + avro_raw_string(b"\xff"))))
    return [
        Case("null_change_mask_on_update", "an UPDATE whose changeMask is null: accepted, changed columns null",
             "length-prefixed", land("length-prefixed", [metadata(), row("insert-2"), row("other-10"),
                                                         row("update-2-without-change-mask")])),
        Case("change_mask_with_leading_zero_bytes", "changeMask 00 00 02 over 3 columns: extra zero bytes are fine",
             "avro", land("avro", [metadata(), row("insert-2"), row("update-2-mask-with-leading-zero-bytes")])),
        Case("change_mask_bit_past_last_column", "UPDATEs whose changeMask is 08 (only the bit of column 4) and "
             "01 07 (columns 1 to 3 and 9) over 3 columns, as Replicate sends on Oracle sources: the bits past "
             "the last column are ignored and counted, the rows kept", "length-prefixed",
             land("length-prefixed", [metadata(), row("insert-1"), row("update-1"),
                                      row("update-1-change-mask-only-past-last-column"), row("other-10"),
                                      row("update-1-change-mask-01-07")])),
        Case("column_mask_bit_past_last_column", "an UPDATE whose columnMask 17 over 3 columns also sets the bit "
             "of column 5: ignored and counted, the row kept", "avro",
             land("avro", [metadata(), row("insert-1"), row("update-1-column-mask-17"), row("insert-2")])),
        Case("malformed_payload_of_another_table", "a message of the other table whose payload is not valid "
             "UTF-8: filtered out by its schema id, never decoded", "length-prefixed",
             land("length-prefixed", [metadata(), row("insert-1"), malformed(other_invalid, INVALID_UTF8, OTHER),
                                      row("update-1")])),
        Case("empty_file", "a file of 0 bytes, framing auto: no message", "auto",
             [LandedFile("part-0.lp", "length-prefixed", [], raw_content=b"")]),
        Case("container_without_records", "an Avro container file with a header and no block", "avro",
             land("avro", [])),
    ]


def frame_cases() -> list[Case]:
    """Damage to the framing itself: no message can be cut out, and (length-prefixed) nothing after it."""
    update = row("update-1")
    big = replace(BROKEN, data={**BROKEN.data, "NOTE": "x" * 6000}).message()

    def after_first_file(case_id, description, broken_frame, framing="length-prefixed", **kwargs):
        entries = [metadata(), row("insert-1"), row("other-10"), broken_frame, update]
        return Case(case_id, description, framing, land(framing, entries) + land(framing, [row("insert-2")], "part-1"),
                    **kwargs)
    return [
        after_first_file("negative_length_prefix", "a length prefix of -10 (ff ff ff f6); part-1 is intact",
                         unframed((-10).to_bytes(4, "big", signed=True))),
        after_first_file("length_prefix_2gb", "a length prefix of 2 GiB - 1 (7f ff ff ff) in a small file",
                         unframed(0x7FFFFFFF.to_bytes(4, "big"))),
        after_first_file("frame_over_max_message_bytes",
                         "an intact 6 KB frame read with maxMessageBytes 4k: skipped, the frames after it read",
                         oversized(big), options={"maxMessageBytes": "4k"}),
        Case("partial_length_prefix_at_end", "the file ends with 2 bytes: too few for a length prefix",
             "length-prefixed", land("length-prefixed", [metadata(), row("insert-1"), row("other-10"), update,
                                                         unframed(b"\x00\x00")])),
        after_first_file("whole_file_message_over_max_message_bytes",
                         "one whole-file message of 6 KB read with maxMessageBytes 4k", unframed(big), "message",
                         options={"maxMessageBytes": "4k"}),
    ]


def flip_sync_marker_after(block_number: int) -> Damage:
    def damage(path: Path) -> FileFault:
        blocks = container_blocks(path)
        content = bytearray(path.read_bytes())
        marker_end = blocks[block_number + 1] if block_number + 1 < len(blocks) else len(content)
        for i in range(marker_end - 16, marker_end):
            content[i] ^= 0xFF
        path.write_bytes(bytes(content))
        return FileFault(CORRUPT_FILE, (f"block at byte {blocks[block_number]}", "sync marker"), block_number)
    return damage


def truncate_inside(block_number: int) -> Damage:
    def damage(path: Path) -> FileFault:
        blocks = container_blocks(path)
        content = path.read_bytes()
        start = blocks[block_number]
        end = blocks[block_number + 1] if block_number + 1 < len(blocks) else len(content)
        path.write_bytes(content[:(start + end) // 2])
        return FileFault(CORRUPT_FILE, (f"block at byte {start}", "truncated"), block_number)
    return damage


def unknown_framing(path: Path) -> FileFault:
    return FileFault("REPLICATE_UNKNOWN_FRAMING", (), 0)


def file_cases() -> list[Case]:
    """A whole file that cannot be read: an error in every mode, unless ignoreCorruptFiles."""
    entries = [metadata(), row("insert-1"), row("other-10"), row("update-1"), row("insert-2")]
    damaged = [
        ("container_sync_marker_flipped", "the sync marker after block 3 of 5 (one record each) has every bit "
         "flipped", "avro", lambda: land("avro", entries, sync_interval=1, damage=flip_sync_marker_after(3))),
        ("container_truncated_mid_block", "a container file cut in the middle of block 3 of 5", "avro",
         lambda: land("avro", entries, sync_interval=1, damage=truncate_inside(3))),
        ("garbage_file", "a text file among length-prefixed files, framing auto", "auto",
         lambda: [LandedFile("part-0.lp", "length-prefixed", [], raw_content=b"this is not a landed Replicate topic\n",
                             damage=unknown_framing)]),
    ]
    cases = []
    for case_id, description, framing, files in damaged:
        intact = land("avro" if framing == "avro" else "length-prefixed", [row("insert-2"), row("other-10")], "part-1")
        cases.append(Case(case_id, description, framing, files() + intact))
        cases.append(Case(f"{case_id}_ignored", description + ", read with ignoreCorruptFiles: skipped and "
                          "counted, the messages before the damage kept", framing, files() + intact,
                          options={"ignoreCorruptFiles": "true"}))
    return cases


def schema_topic_cases() -> list[Case]:
    usual = land("length-prefixed", [metadata(), row("insert-1"), row("other-10"), row("update-1")])
    conflicting = ITEMS.md_message(table_version=2)
    truncated_md = ITEMS.md_message()[:200]
    shared = "_schema/length-prefixed/part-0.lp"
    return [
        Case("duplicate_identical_metadata", "the schema topic holds the table's MD message twice, in two files",
             "length-prefixed", usual,
             extra_schema_files=land("length-prefixed", [metadata()], "schema-again")),
        Case("conflicting_metadata", "a second MD message with the same schema id but table version 2",
             "length-prefixed", usual,
             extra_schema_files=land("length-prefixed", [Landed("metadata", conflicting, ITEMS.name)],
                                     "schema-conflict"),
             planning_error=("REPLICATE_CONFLICTING_METADATA",
                             (shared, case_file("conflicting_metadata", "schema-conflict.lp"), ITEMS.schema_id))),
        Case("unreadable_metadata_in_schema_topic", "the schema topic holds an MD message cut after 200 bytes",
             "length-prefixed", usual,
             extra_schema_files=land("length-prefixed", [Landed("metadata", truncated_md, ITEMS.name)],
                                     "schema-truncated"),
             planning_error=("REPLICATE_BAD_METADATA", (case_file("unreadable_metadata_in_schema_topic",
                                                                  "schema-truncated.lp"), "frame at byte 0", TRUNCATED))),
    ]


def all_cases() -> list[Case]:
    cases = (envelope_cases() + envelope_truncations() + payload_truncations() + payload_cases()
             + embedded_schema_cases() + frame_cases() + good_cases() + file_cases() + schema_topic_cases())
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    return cases


# --------------------------------------------------------------------------------------------


def build(root: Path) -> None:
    """Writes the corpus under ``root`` (its ``_schema`` and ``cases`` are replaced)."""
    root.mkdir(parents=True, exist_ok=True)
    for generated in ("_schema", "cases"):
        shutil.rmtree(root / generated, ignore_errors=True)
    topics = schema_topics(root)
    entries = []
    for case in all_cases():
        written, extra_schema = write_case(root, case)
        entries.append(case_entry(case, written, extra_schema, topics))
    catalogue = {
        "about": "Generated by make_cases.py (do not edit by hand). Paths are relative to this directory; "
                 "`rows` are the expected output rows of the good messages, by key; each case's `expected` "
                 "gives, per mode, either the error (id, stage, fragments of its message) or the rows, the "
                 "corrupt records (PERMISSIVE; raw bytes as length and SHA-256, null when the framing could "
                 "not cut a message out) and the exact scan counts when reading table BAD.ITEMS; "
                 "`expected_reading_other_table` the same when reading BAD.OTHER.",
        "table": ITEMS.name,
        "other_table": OTHER.name,
        "rows": {key: change.expected_row() for key, change in ROWS.items()},
        "cases": entries,
    }
    (root / "cases.json").write_text(json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
