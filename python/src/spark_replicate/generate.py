"""Generate a realistic Qlik Replicate landing zone: demo data, test oracle and benchmark input.

Qlik Replicate (6.3+) publishing to Kafka in Avro message format wraps every message in the
"Attunity envelope"; a Kafka Connect sink then lands those bytes as files. This module writes
exactly that, deterministically for a seed, from an in-memory model of each source table, and
keeps a copy of every data message it wrote (values exactly as encoded) so the end-to-end tests
can compare what the Spark reader returns with what was generated, row by row.

Wire format: each message is a ``MessageEnvelope`` (Avro binary: magic ``atMSG``, type ``MD`` or
``DT``, headers, ``messageSchemaId``, ``messageSchema``, ``message`` bytes), as the reader's
``codec/Envelope.scala`` decodes it; the files are landed in the framings of the README's
"Landing formats". All Avro is written by fastavro (``schemaless_writer``
on schemas parsed once per table version, ``Writer`` for container files). For speed, the parts
that repeat are encoded once and reused: the envelope fields before ``message``, each row image
(sent again as the before-image of its next UPDATE or DELETE), and the full-load headers.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
import re
import shutil
import struct
import zlib
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Context, Decimal
from pathlib import Path
from typing import Any, Callable, NamedTuple
from zoneinfo import ZoneInfo

import fastavro
from fastavro.write import Writer

from spark_replicate.kafka_topics import KafkaTopics

__all__ = [
    "AddColumn",
    "AlterColumn",
    "ColumnDef",
    "DropColumn",
    "DataMessage",
    "ENVELOPE_SCHEMA",
    "KAFKA_RECORD_SCHEMA",
    "LandingZone",
    "MAGIC",
    "MetadataEntry",
    "SCHEMA_TOPIC",
    "TableDef",
    "Version",
    "data_schema",
    "default_tables",
    "decimal_type",
    "encode_envelope",
    "expected_value",
    "generate_landing_zone",
    "mask_bytes",
    "mask_ordinals",
    "metadata_schema",
]

MAGIC = b"atMSG"
SCHEMA_TOPIC = "_schema"
OPERATIONS = ("INSERT", "UPDATE", "DELETE", "REFRESH")
FRAMINGS = ("avro", "length-prefixed", "message")
VALUE_SCHEMAS = ("record", "bytes")
HEADERS_VERSIONS = ("6.3", "7.0")

# The envelope exactly as printed in the Qlik Replicate help (reference/qlik-docs_MessageEnvelope.avsc),
# embedded so the installed package never needs the reference directory.
ENVELOPE_SCHEMA: dict = {
    "type": "record",
    "name": "MessageEnvelope",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
        {"name": "type", "type": "string"},
        {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
        {"name": "messageSchemaId", "type": ["null", "string"]},
        {"name": "messageSchema", "type": ["null", "string"]},
        {"name": "message", "type": "bytes"},
    ],
}

# What a Kafka Connect sink that keeps the record coordinates writes as the container schema.
KAFKA_RECORD_SCHEMA: dict = {
    "type": "record",
    "name": "KafkaRecord",
    "fields": [
        {"name": "topic", "type": "string"},
        {"name": "partition", "type": "int"},
        {"name": "offset", "type": "long"},
        {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "key", "type": ["null", "bytes"]},
        {"name": "value", "type": "bytes"},
    ],
}

_PARSED_ENVELOPE = fastavro.parse_schema(ENVELOPE_SCHEMA)
_PARSED_KAFKA_RECORD = fastavro.parse_schema(KAFKA_RECORD_SCHEMA)

# Avro type of each source type as Replicate sends it with "logical data types" OFF: numbers,
# booleans and bytes native, dates, times, timestamps and decimals as their text.
_AVRO_TYPE = {
    "INT1": "int",
    "INT2": "int",
    "INT4": "int",
    "INT8": "long",
    "UINT1": "int",
    "UINT2": "int",
    "UINT4": "long",
    "UINT8": "string",
    "REAL4": "float",
    "REAL8": "double",
    "BOOLEAN": "boolean",
    "STRING": "string",
    "WSTRING": "string",
    "CLOB": "string",
    "NCLOB": "string",
    "BYTES": "bytes",
    "BLOB": "bytes",
    "DATE": "string",
    "TIME": "string",
    "DATETIME": "string",
    "NUMERIC": "string",
}
# What changes with "logical data types" ON (NUMERIC: see ColumnDef.avro_schema).
_LOGICAL_AVRO_TYPE = {
    "DATE": {"type": "int", "logicalType": "date"},
    "TIME": {"type": "int", "logicalType": "time-millis"},
    "DATETIME": {"type": "long", "logicalType": "timestamp-micros"},
    "UINT8": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 0},
}
# How values are encoded: Replicate with logical data types off (the default) or on, or every
# value as its text (what pipelines that re-encode Replicate's JSON messages as Avro send).
ENCODINGS = ("text", "logical", "all-text")
# MD `length` when the column declares none: display width of integers, typical string sizes.
_NATURAL_LENGTH = {"INT1": 3, "INT2": 5, "INT4": 10, "INT8": 19, "UINT1": 3, "UINT2": 5, "UINT4": 10, "UINT8": 20,
                   "STRING": 255, "WSTRING": 255, "BYTES": 2000}
_INTEGER_TYPES = ("INT1", "INT2", "INT4", "INT8", "UINT1", "UINT2", "UINT4")
_INTEGER_RANGE = {"INT1": 101, "INT2": 10_000, "INT4": 1_000_001, "INT8": 10 ** 12 + 1,
                  "UINT1": 256, "UINT2": 65_536, "UINT4": 2 ** 32}
# The values each integer type holds: an ALTER may change one into another that holds them all.
_INTEGER_BOUNDS = {"INT1": (-2 ** 7, 2 ** 7 - 1), "INT2": (-2 ** 15, 2 ** 15 - 1), "INT4": (-2 ** 31, 2 ** 31 - 1),
                   "INT8": (-2 ** 63, 2 ** 63 - 1), "UINT1": (0, 2 ** 8 - 1), "UINT2": (0, 2 ** 16 - 1),
                   "UINT4": (0, 2 ** 32 - 1), "UINT8": (0, 2 ** 64 - 1)}
_STRING_TYPES = ("STRING", "WSTRING")
_TEXT_TYPES = ("STRING", "WSTRING", "CLOB", "NCLOB")
_BINARY_TYPES = ("BYTES", "BLOB")
# Named types of the MD schema: a column record may not reuse these names.
_MD_TYPE_NAMES = {"MetadataMessage", "Lineage", "TableStructure", "TableColumns"}
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NULL_RATE = 0.10
EXTRA_MASK_BYTE_RATE = 0.10
REFRESH_SHARE = 0.20
# Shares of INSERT, UPDATE and DELETE among the CDC changes.
OPERATION_MIX = (0.5, 0.4, 0.1)
MAX_TRANSACTION = 5
_TASK_START_US = 1_714_644_672_345_000  # 2024-05-02 10:11:12.345 UTC
_EPOCH = datetime(1970, 1, 1)
_WIDE_DECIMALS = Context(prec=1000)  # exact arithmetic on decimals of any precision
_SERVER = "replicate-01.example.com"
_TASK = "erp-to-kafka"


# --------------------------------------------------------------------------------------------
# Table definitions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnDef:
    """One source column. Its ordinal is its position in the table (1-based).

    ``length=None`` means the type's natural MD length; ``nullable=None`` means "nullable unless
    it is a key column". ``choices`` makes the generator draw values from a fixed list, to keep
    names, codes and statuses looking real, or to pin edge cases; choices are source values, sent
    in the landing zone's encoding: ``int``, ``float``, ``bool``, ``str``, ``bytes``, ``date``,
    ``time`` (whole milliseconds), naive ``datetime`` (the source's wall clock) and, for NUMERIC,
    the plain decimal text (``"-12.30"``). When values are sent as text, a ``str`` choice of any
    type goes out as it is: that is how a test sends a value that does not parse (``"2023-02-30"``
    as a DATE). ``max_words`` bounds the words of a generated text
    value (1 to ``max_words``, then cut to ``length``): raise it for long text.

    NUMERIC takes any scale: a negative scale holds multiples of 10**-scale (Oracle's NUMBER(5,-2)),
    a scale above the precision values below 10**(precision-scale) (NUMBER(2,5)).
    """

    name: str
    source_type: str
    length: int | None = None
    precision: int = 0
    scale: int = 0
    pk_position: int = 0
    nullable: bool | None = None
    choices: tuple = ()
    max_words: int = 3

    def __post_init__(self) -> None:
        if not _AVRO_NAME.match(self.name) or self.name in _MD_TYPE_NAMES:
            raise ValueError(f"column name {self.name!r} is not usable as an Avro name")
        if self.source_type not in _AVRO_TYPE:
            raise ValueError(f"column {self.name}: unsupported source type {self.source_type!r}; "
                             f"supported: {', '.join(_AVRO_TYPE)}")
        if self.source_type == "NUMERIC" and self.precision <= 0:
            raise ValueError(f"column {self.name}: NUMERIC needs a precision > 0")
        if self.max_words < 1:
            raise ValueError(f"column {self.name}: max_words must be at least 1")
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.length is None:
            object.__setattr__(self, "length", _NATURAL_LENGTH.get(self.source_type, 0))
        if self.nullable is None:
            object.__setattr__(self, "nullable", self.pk_position == 0)
        if self.pk_position and self.nullable:
            raise ValueError(f"column {self.name}: a key column cannot be nullable")

    @property
    def avro_type(self) -> str:
        """The Avro type with Replicate's logical data types off."""
        return _AVRO_TYPE[self.source_type]

    @property
    def has_decimal_type(self) -> bool:
        """Whether NUMERIC(p, s) can be an Avro decimal, which needs 0 <= s <= p."""
        return 0 <= self.scale <= self.precision

    def avro_schema(self, encoding: str = "text"):
        """The Avro type of the column's values in ``encoding`` (see ``ENCODINGS``). With logical
        types on, a NUMERIC whose scale Avro's decimal cannot express is sent as its unscaled
        two's-complement bytes, scaled by the MD's ``scale``."""
        t = self.source_type
        if encoding == "all-text":
            return "string"
        if encoding == "logical":
            if t == "NUMERIC":
                return ({"type": "bytes", "logicalType": "decimal", "precision": self.precision, "scale": self.scale}
                        if self.has_decimal_type else "bytes")
            return _LOGICAL_AVRO_TYPE.get(t, _AVRO_TYPE[t])
        return _AVRO_TYPE[t]


@dataclass(frozen=True)
class AddColumn:
    """``ALTER TABLE ADD``: a nullable non-key column after the others."""

    column: ColumnDef


@dataclass(frozen=True)
class DropColumn:
    """``ALTER TABLE DROP COLUMN``: the columns after it move one ordinal down."""

    name: str


@dataclass(frozen=True)
class AlterColumn:
    """``ALTER TABLE ALTER COLUMN``: ``column`` replaces the same-named column at its ordinal.
    Live rows keep their values, so the new type must hold them: a wider integer type, REAL4 to
    REAL8, NUMERIC with a larger precision and the same scale, or an integer or text type to
    STRING/WSTRING (integers become their decimal text)."""

    column: ColumnDef


def _alterable(old: ColumnDef, new: ColumnDef) -> bool:
    a, b = old.source_type, new.source_type
    if a in _INTEGER_BOUNDS and b in _INTEGER_BOUNDS and b != "UINT8":
        return _INTEGER_BOUNDS[b][0] <= _INTEGER_BOUNDS[a][0] and _INTEGER_BOUNDS[a][1] <= _INTEGER_BOUNDS[b][1]
    if b in _STRING_TYPES:
        return a in _INTEGER_TYPES or a in _TEXT_TYPES
    if a == b == "NUMERIC":
        return new.precision >= old.precision and new.scale == old.scale
    return (a, b) == ("REAL4", "REAL8")


@dataclass(frozen=True)
class TableDef:
    """A source table published to ``topic``.

    Each change of ``added_columns`` (an ``ALTER TABLE ADD`` per column), then of ``changes``
    (``AddColumn``, ``DropColumn``, ``AlterColumn``), happens part-way through the CDC stream,
    spread evenly: the table gets one more version (new schemaId, tableVersion + 1) per change.
    Key columns can be neither dropped nor altered.
    """

    schema: str
    table: str
    topic: str
    columns: tuple[ColumnDef, ...]
    added_columns: tuple[ColumnDef, ...] = ()
    changes: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "added_columns", tuple(self.added_columns))
        object.__setattr__(self, "changes", tuple(self.changes))
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate column names")
        positions = sorted(c.pk_position for c in self.columns if c.pk_position)
        if positions != list(range(1, len(positions) + 1)) or not positions:
            raise ValueError(f"{self.name}: needs a primary key with positions 1..n")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", self.topic):
            raise ValueError(f"{self.name}: topic {self.topic!r} is not a valid directory name")
        self.version_columns(len(self.ddl) + 1)  # replays the changes, which checks them

    @property
    def name(self) -> str:
        """``SCHEMA.TABLE``, the name the reader's ``table`` option takes."""
        return f"{self.schema}.{self.table}"

    @property
    def key_columns(self) -> list[ColumnDef]:
        """Key columns in primary-key order (not necessarily ordinal order)."""
        return sorted((c for c in self.columns if c.pk_position), key=lambda c: c.pk_position)

    @property
    def ddl(self) -> tuple:
        """Every schema change in order: version n is the table after the first n - 1."""
        return tuple(AddColumn(c) for c in self.added_columns) + self.changes

    def version_columns(self, version: int) -> tuple[ColumnDef, ...]:
        """The columns of table version ``version`` (1-based), in ordinal order."""
        columns = self.columns
        seen = {c.name for c in columns}
        for change in self.ddl[:version - 1]:
            columns = _apply_change(self.name, columns, change, seen)
        return columns


def _apply_change(table: str, columns: tuple[ColumnDef, ...], change, seen: set) -> tuple[ColumnDef, ...]:
    """The columns after one DDL; ``seen`` (every name the table ever had) keeps names unique."""
    by_name = {c.name: c for c in columns}
    if isinstance(change, AddColumn):
        column = change.column
        if column.name in seen:
            raise ValueError(f"{table}: duplicate column names ({column.name} is added again)")
        if column.pk_position or not column.nullable:
            raise ValueError(f"{table}: added columns must be nullable non-key columns")
        seen.add(column.name)
        return columns + (column,)
    if isinstance(change, DropColumn):
        name = change.name
    elif isinstance(change, AlterColumn):
        name = change.column.name
    else:
        raise ValueError(f"{table}: {change!r} is not an AddColumn, DropColumn or AlterColumn")
    old = by_name.get(name)
    if old is None or old.pk_position:
        raise ValueError(f"{table}: {change!r} names no non-key column of the table")
    if isinstance(change, DropColumn):
        return tuple(c for c in columns if c.name != name)
    if not change.column.nullable or change.column.pk_position or not _alterable(old, change.column):
        raise ValueError(f"{table}: {change!r} cannot keep the values of {old.source_type} column {name} "
                         "(see AlterColumn for the changes allowed)")
    return tuple(change.column if c.name == name else c for c in columns)


_FIRST_NAMES = ("Ana", "Bjorn", "Chloe", "Dmitri", "Emile", "Fatima", "Giulia", "Hiroshi", "Ines",
                "Jose", "Kwame", "Lena", "Mei", "Noor", "Olga", "Priya", "Rafael", "Sven", "Tomas", "Yuki")
_LAST_NAMES = ("Andersen", "Brown", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad",
               "Ivanova", "Jensen", "Kim", "Lopez", "Muller", "Nakamura", "Okafor", "Patel", "Rossi")
_EMAILS = ("ana.costa@example.com", "b.eriksen@example.org", "chloé.dubois@exemple.fr",
           "dmitri.ivanov@example.ru", "fatima.haddad@example.com", "hiroshi.nakamura@例え.jp",
           "jose.garcia@example.es", "mei.kim@example.com", "noor.patel@example.in", "sven.muller@beispiel.de")
_ASCII_WORDS = ("north", "river", "alpha", "stone", "maple", "harbor", "silver", "delta", "summit",
                "cedar", "orbit", "lumen", "quartz", "willow", "ember", "falcon")
_WIDE_WORDS = _ASCII_WORDS + ("Zürich", "São Paulo", "München", "Kraków", "東京", "Москва", "Ålesund",
                              "Øresund", "Besançon", "İzmir", "서울", "naïve", "crème brûlée")


def default_tables() -> list[TableDef]:
    """The demo tables: ``hr`` holds HR.EMPLOYEES and HR.DEPARTMENTS, ``sales`` SALES.ORDERS.

    DEPARTMENTS has a composite key whose key order differs from its ordinal order; ORDERS has
    20 columns so its masks span 3 bytes.
    """
    C = ColumnDef
    employees = TableDef("HR", "EMPLOYEES", "hr", (
        C("EMP_ID", "INT4", pk_position=1),
        C("FIRST_NAME", "STRING", 40, nullable=False, choices=_FIRST_NAMES),
        C("LAST_NAME", "STRING", 40, nullable=False, choices=_LAST_NAMES),
        C("EMAIL", "WSTRING", 100, choices=_EMAILS),
        C("HIRE_DATE", "DATE", nullable=False),
        C("SALARY", "NUMERIC", 0, 10, 2),
        C("DEPT_ID", "INT2"),
        C("IS_ACTIVE", "BOOLEAN", nullable=False),
        C("PHOTO", "BYTES", 4000),
        C("UPDATED_AT", "DATETIME", 0, 26, 6),
    ))
    departments = TableDef("HR", "DEPARTMENTS", "hr", (
        C("DEPT_ID", "INT4", pk_position=2),
        C("DEPT_NAME", "WSTRING", 60, nullable=False),
        C("COMPANY_ID", "INT2", pk_position=1),
        C("MANAGER_ID", "INT4"),
    ))
    orders = TableDef("SALES", "ORDERS", "sales", (
        C("ORDER_ID", "INT8", pk_position=1),
        C("CUSTOMER_ID", "INT4", nullable=False),
        C("ORDER_DATE", "DATE", nullable=False),
        C("ORDER_TS", "DATETIME", 0, 26, 6, nullable=False),
        C("STATUS", "STRING", 12, nullable=False, choices=("NEW", "PAID", "SHIPPED", "DELIVERED", "CANCELLED")),
        C("CHANNEL", "STRING", 10, choices=("WEB", "STORE", "PHONE", "PARTNER")),
        C("CURRENCY", "STRING", 3, nullable=False, choices=("EUR", "USD", "GBP", "JPY", "CHF")),
        C("AMOUNT", "NUMERIC", 0, 12, 2, nullable=False),
        C("TAX", "NUMERIC", 0, 10, 2),
        C("DISCOUNT_PCT", "REAL4"),
        C("WEIGHT_KG", "REAL8"),
        C("QUANTITY", "INT2", nullable=False),
        C("PRIORITY", "INT1"),
        C("IS_GIFT", "BOOLEAN", nullable=False),
        C("GIFT_MESSAGE", "WSTRING", 200),
        C("SHIP_CITY", "WSTRING", 60),
        C("SHIP_COUNTRY", "STRING", 2, choices=("DE", "FR", "US", "JP", "BR", "NO", "PL")),
        C("TRACKING_NO", "STRING", 30),
        C("SIGNATURE", "BYTES", 256),
        C("LAST_MODIFIED", "DATETIME", 0, 26, 6, nullable=False),
    ))
    return [employees, departments, orders]


# --------------------------------------------------------------------------------------------
# Masks and schemas
# --------------------------------------------------------------------------------------------


def mask_bytes(ordinals, ncols: int, extra_leading_zero: bool = False, stray_bit: bool = False) -> bytes:
    """Encode column ordinals as a Replicate mask: one big-endian unsigned integer whose bit i
    (0 = least significant) is the column with ordinal i+1, over ceil(ncols/8) bytes; Replicate
    sometimes sends one more, leading, zero byte. ``stray_bit`` also sets the bit of ordinal
    ncols + 1, past the last column, as Replicate does on some UPDATEs of Oracle sources (a
    26-column table's change mask ``04000000``)."""
    value = 0
    for ordinal in ordinals:
        if not 1 <= ordinal <= ncols:
            raise ValueError(f"ordinal {ordinal} outside 1..{ncols}")
        value |= 1 << (ordinal - 1)
    if stray_bit:
        value |= 1 << ncols
    return value.to_bytes((ncols + stray_bit + 7) // 8 + extra_leading_zero, "big")


def mask_ordinals(mask: bytes) -> list[int]:
    """The ordinals (ascending) a mask marks; the inverse of :func:`mask_bytes`."""
    value = int.from_bytes(mask, "big")
    return [i + 1 for i in range(value.bit_length()) if value >> i & 1]


def _nullable(avro_type) -> list:
    return [{"type": "null"}, avro_type if isinstance(avro_type, dict) else {"type": avro_type}]


def data_schema(columns, headers_version: str = "7.0", encoding: str = "text") -> dict:
    """The DataRecord schema Replicate sends in an MD's ``dataSchema``, shaped like the real
    sample: no namespace, every column ``[null, T]`` in ordinal order, ``T`` as ``encoding``
    (see ``ENCODINGS``) has it."""
    headers = [
        {"name": "operation", "type": {"type": "enum", "name": "operation", "symbols": list(OPERATIONS)}},
        {"name": "changeSequence", "type": {"type": "string"}},
        {"name": "timestamp", "type": {"type": "string"}},
        {"name": "streamPosition", "type": {"type": "string"}},
        {"name": "transactionId", "type": {"type": "string"}},
        {"name": "changeMask", "type": _nullable("bytes")},
        {"name": "columnMask", "type": _nullable("bytes")},
    ]
    if headers_version == "7.0":
        headers += [
            {"name": "transactionEventCounter", "type": _nullable("long")},
            {"name": "transactionLastEvent", "type": _nullable("boolean")},
            {"name": "externalSchemaId", "type": _nullable("string")},
        ]
    return {"type": "record", "name": "DataRecord", "fields": [
        {"name": "data", "type": {"type": "record", "name": "Data", "fields": [
            {"name": c.name, "type": _nullable(c.avro_schema(encoding))} for c in columns]}},
        {"name": "beforeData", "type": [{"type": "null"}, "Data"]},
        {"name": "headers", "type": {"type": "record", "name": "Headers", "fields": headers}},
    ]}


def metadata_schema(column_names) -> dict:
    """The MetadataMessage schema of one table version: ``tableColumns`` has one record field per
    column, in the given order (readers must order columns by ``ordinal``, not by field)."""
    column_fields = [{"name": name, "type": {"type": "record", "name": name, "fields": [
        {"name": "ordinal", "type": {"type": "int"}},
        {"name": "type", "type": {"type": "string"}},
        {"name": "length", "type": {"type": "int"}},
        {"name": "precision", "type": {"type": "int"}},
        {"name": "scale", "type": {"type": "int"}},
        {"name": "primaryKeyPosition", "type": {"type": "int"}},
        {"name": "nullable", "type": {"type": "boolean"}},
    ]}} for name in column_names]
    lineage = [{"name": n, "type": {"type": "string"}} for n in ("server", "task", "schema", "table")]
    lineage += [{"name": "tableVersion", "type": {"type": "long"}}, {"name": "timestamp", "type": {"type": "string"}}]
    return {"type": "record", "name": "MetadataMessage", "fields": [
        {"name": "schemaId", "type": {"type": "string"}},
        {"name": "lineage", "type": {"type": "record", "name": "Lineage", "fields": lineage}},
        {"name": "tableStructure", "type": {"type": "record", "name": "TableStructure", "fields": [
            {"name": "tableColumns", "type": {"type": "record", "name": "TableColumns", "fields": column_fields}}]}},
        {"name": "dataSchema", "type": {"type": "string"}},
    ]}


def _compact_json(schema: dict) -> str:
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def _avro_bytes(parsed_schema, record) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed_schema, record)
    return buffer.getvalue()


def _plain_types(schema):
    """The same schema with ``{"type": "int"}`` written ``"int"``. Replicate spells primitives the
    long way; the encoding is identical, but fastavro writes unions of plain names much faster."""
    if isinstance(schema, list):
        return [_plain_types(s) for s in schema]
    if isinstance(schema, dict):
        if schema.keys() == {"type"} and isinstance(schema["type"], str):
            return schema["type"]
        return {k: _plain_types(v) for k, v in schema.items()}
    return schema


def encode_envelope(kind: str, message: bytes, schema_id: str | None = None,
                    schema_json: str | None = None, headers: dict | None = None) -> bytes:
    """One Attunity envelope (Avro binary, no container) around an encoded payload."""
    return _avro_bytes(_PARSED_ENVELOPE, {"magic": MAGIC, "type": kind, "headers": headers,
                                          "messageSchemaId": schema_id, "messageSchema": schema_json,
                                          "message": message})


def _varint(n: int) -> bytes:
    """An Avro ``long`` (zig-zag, base-128), for non-negative ``n``."""
    n <<= 1
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _EnvelopeWriter:
    """Envelopes of one table version. ``message`` is the envelope's last field and every other
    field is fixed per version, so they are encoded (by fastavro) once; each message then costs
    only its length and bytes."""

    def __init__(self, kind: str, schema_id: str, schema_json: str | None):
        self._prefix = encode_envelope(kind, b"", schema_id, schema_json)[:-1]  # drop len(b"") = 0

    def __call__(self, message: bytes) -> bytes:
        return b"".join((self._prefix, _varint(len(message)), message))


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def _float32(value: float) -> float:
    """The value an Avro ``float`` round trips to, so expectations equal what a reader decodes."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _text_generator(column: ColumnDef, rng: random.Random) -> Callable[[], str]:
    """One to ``max_words`` (default three) words, cut to the column length; WSTRING and NCLOB
    words include non-ASCII text."""
    words = _WIDE_WORDS if column.source_type in ("WSTRING", "NCLOB") else _ASCII_WORDS
    rand, n, limit, most = rng.random, len(words), column.length or None, column.max_words

    def text() -> str:
        picked = [words[int(rand() * n)] for _ in range(1 + int(rand() * most))]
        return " ".join(picked)[:limit]
    return text


def _plain_decimal(unscaled: int, scale: int) -> str:
    """The plain text of ``unscaled * 10**-scale`` with exactly ``max(scale, 0)`` fraction digits."""
    sign, digits = ("-" if unscaled < 0 else ""), abs(unscaled)
    if scale <= 0:
        return f"{sign}{digits * 10 ** -scale}"
    whole, fraction = divmod(digits, 10 ** scale)
    return f"{sign}{whole}.{fraction:0{scale}d}"


def _numeric_generator(column: ColumnDef, rng: random.Random) -> Callable[[], str]:
    """NUMERIC(p,s) as Replicate's string form, e.g. "12345.67"; a few negatives."""
    precision, scale, rand, randrange = column.precision, column.scale, rng.random, rng.randrange

    def numeric() -> str:
        unscaled = randrange(10 ** (1 + int(rand() * precision)))
        return _plain_decimal(-unscaled if rand() < 0.05 else unscaled, scale)
    return numeric


def _source_generator(column: ColumnDef, rng: random.Random) -> Callable[[], Any]:
    """A generator of non-null source values of ``column`` (see ``ColumnDef.choices`` for their
    Python types). Draws use ``random()`` arithmetic rather than ``randint``/``choice``: several
    times faster."""
    t, rand = column.source_type, rng.random
    if column.choices:
        choices, n = column.choices, len(column.choices)
        return lambda: choices[int(rand() * n)]
    if t in _INTEGER_TYPES:
        size = _INTEGER_RANGE[t]
        return lambda: int(rand() * size)
    if t == "UINT8":
        return lambda: rng.getrandbits(64)
    if t == "REAL4":
        return lambda: rand() * 100
    if t == "REAL8":
        return lambda: rand() * 10_000
    if t == "BOOLEAN":
        return lambda: rand() < 0.5
    if t in _TEXT_TYPES:
        return _text_generator(column, rng)
    if t in _BINARY_TYPES:
        sizes = min(column.length or 64, 64) + 1
        return lambda: rng.randbytes(int(rand() * sizes))
    if t == "DATE":
        first, days = date(1990, 1, 1).toordinal(), 35 * 365
        return lambda: date.fromordinal(first + int(rand() * days))
    if t == "TIME":
        # Whole milliseconds, the precision of Avro's time-millis.
        return lambda: (datetime.min + timedelta(milliseconds=int(rand() * 86_400_000))).time()
    if t == "DATETIME":
        start, span_us = datetime(2000, 1, 1), 25 * 365 * 86_400 * 10 ** 6
        return lambda: start + timedelta(microseconds=int(rand() * span_us))
    return _numeric_generator(column, rng)


def _unscaled_bytes(text: str, scale: int) -> bytes:
    """A decimal's unscaled value at ``scale`` as Avro decimals carry it: two's complement, big-endian."""
    scaled = Decimal(text).scaleb(scale, _WIDE_DECIMALS)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{text} has more fraction digits than the scale {scale}")
    unscaled = int(scaled)
    return unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)


def _text_encoder(column: ColumnDef) -> Callable[[Any], Any] | None:
    """Source value → wire value with logical data types off; None: sent as it is."""
    t = column.source_type
    if t == "REAL4":
        return _float32
    if t == "DATE":
        return date.isoformat
    if t == "TIME":
        return time.isoformat
    if t == "DATETIME":
        return lambda value: value.isoformat(" ", "microseconds")
    if t == "UINT8":
        return str
    return None


def _logical_encoder(column: ColumnDef) -> Callable[[Any], Any] | None:
    """Source value → wire value with logical data types on (as fastavro takes them)."""
    t = column.source_type
    if t == "REAL4":
        return _float32
    if t == "DATETIME":  # the source's wall clock, sent as if it were UTC
        return lambda value: value.replace(tzinfo=timezone.utc)
    if t == "UINT8":
        return Decimal
    if t == "NUMERIC":
        scale = column.scale
        return Decimal if column.has_decimal_type else lambda value: _unscaled_bytes(value, scale)
    return None


def _all_text_encoder(column: ColumnDef) -> Callable[[Any], Any] | None:
    """Source value → its text: numbers in decimal, booleans ``true``/``false``, bytes in hex."""
    t = column.source_type
    if t in _INTEGER_TYPES or t == "REAL8":
        return repr
    if t == "REAL4":
        return lambda value: repr(_float32(value))
    if t == "BOOLEAN":
        return lambda value: "true" if value else "false"
    if t in _BINARY_TYPES:
        return lambda value: value.hex().upper()
    return _text_encoder(column)


_ENCODERS = {"text": _text_encoder, "logical": _logical_encoder, "all-text": _all_text_encoder}


def _base_generator(column: ColumnDef, rng: random.Random, encoding: str = "text") -> Callable[[], Any]:
    """A generator of non-null values of ``column``, as encoded on the wire."""
    source, encode = _source_generator(column, rng), _ENCODERS[encoding](column)
    if encode is not None and encoding != "logical" and any(isinstance(c, str) for c in column.choices):
        typed = encode
        encode = lambda value: value if isinstance(value, str) else typed(value)  # noqa: E731
    return source if encode is None else lambda: encode(source())


def _value_generator(column: ColumnDef, rng: random.Random, encoding: str = "text") -> Callable[[], Any]:
    """Values of ``column``, null about NULL_RATE of the time when the column is nullable."""
    base = _base_generator(column, rng, encoding)
    if not column.nullable:
        return base
    rand = rng.random
    return lambda: None if rand() < NULL_RATE else base()


def _key_generator(table: TableDef, rng: random.Random, encoding: str = "text") -> Callable[[], tuple]:
    """Key tuples in primary-key order. The last integer or string key column carries a per-table
    sequence, which keeps keys unique; the other key columns are drawn at random."""
    key_columns = table.key_columns
    sequenced = [c for c in key_columns if c.source_type in _INTEGER_TYPES + _STRING_TYPES][-1:]
    counter = iter(range(1, 1 << 62))
    gens = []
    for column in key_columns:
        if column in sequenced and column.source_type in _INTEGER_TYPES:
            encode = _ENCODERS[encoding](column)
            gens.append((lambda: next(counter)) if encode is None else lambda: encode(next(counter)))
        elif column in sequenced:
            gens.append(lambda: str(next(counter)))
        else:
            gens.append(_base_generator(column, rng, encoding))
    return lambda: tuple(gen() for gen in gens)


def _altered_value(old: ColumnDef, new: ColumnDef) -> Callable[[Any], Any]:
    """What a live row's value becomes when ``AlterColumn`` turns ``old`` into ``new``."""
    if new.source_type in _STRING_TYPES and old.source_type not in _TEXT_TYPES:
        return lambda value: None if value is None else str(value)
    return lambda value: value


# --------------------------------------------------------------------------------------------
# The oracle: what a reader must return for a value
# --------------------------------------------------------------------------------------------


def decimal_type(column: ColumnDef) -> tuple[int, int] | None:
    """(precision, scale) of the Spark decimal that holds every value of a NUMERIC or UINT8
    column, or None when no decimal of at most 38 digits does (the reader returns text then)."""
    if column.source_type == "UINT8":
        return 20, 0
    p, s = column.precision, column.scale
    precision, scale = (p - s, 0) if s < 0 else (max(p, s), s)
    return (precision, scale) if 0 < precision <= 38 else None


def expected_value(column: ColumnDef, value: Any, time_zone: str = "UTC") -> Any:
    """The value the reader returns for ``value`` as the generator encoded it (any encoding),
    as PySpark collects it: int, float, bool, str, bytes, ``date``, ``Decimal``, an aware UTC
    ``datetime``. TIME is the text ``HH:MM:SS.ffffff``; NUMERIC beyond 38 digits its exact plain
    text at the column's scale. DATETIME text is a wall clock in ``time_zone``; in a DST gap or
    overlap it resolves as ``zoneinfo`` does with ``fold=0``. Avro timestamps are instants."""
    if value is None:
        return None
    t = column.source_type
    if isinstance(value, str) and t not in _TEXT_TYPES:
        value = _parse_text(t, value, time_zone)
    if t == "TIME":
        return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
    if t == "DATETIME":
        return value.astimezone(timezone.utc)
    if t == "REAL4":
        return _float32(value)
    if t in ("NUMERIC", "UINT8"):
        if isinstance(value, bytes):
            value = Decimal(f"{int.from_bytes(value, 'big', signed=True)}E{-column.scale}")
        exact = Decimal(value).quantize(Decimal(f"1E{-max(column.scale, 0)}"), context=_WIDE_DECIMALS)
        return exact if decimal_type(column) else format(exact, "f")
    return value


def _parse_text(source_type: str, text: str, time_zone: str) -> Any:
    if source_type in _INTEGER_TYPES:
        return int(text)
    if source_type in ("REAL4", "REAL8"):
        return float(text)
    if source_type == "BOOLEAN":
        return text.lower() in ("true", "1")
    if source_type in _BINARY_TYPES:
        return bytes.fromhex(text)
    if source_type == "DATE":
        return date.fromisoformat(text)
    if source_type == "TIME":
        return time.fromisoformat(text)
    if source_type == "DATETIME":
        return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(time_zone), fold=0)
    return text  # NUMERIC and UINT8: exact from their text


# --------------------------------------------------------------------------------------------
# What the generator returns
# --------------------------------------------------------------------------------------------


@dataclass
class DataMessage:
    """One DT message as written: payload values exactly as encoded (raw empty strings kept).

    ``data``/``before`` map column names to values in ordinal order; ``key`` and ``timestamp_ms``
    are the Kafka record key and timestamp (also in the ``avro`` framing's container records).
    Messages may share dicts with each other: treat them as read-only.
    """

    table: str
    schema_id: str
    table_version: int
    topic: str
    partition: int
    offset: int
    file: Path
    operation: str
    data: dict
    before: dict | None
    headers: dict
    change_mask: bytes | None
    column_mask: bytes | None
    key: bytes
    timestamp_ms: int


class Version(NamedTuple):
    """One version of a key's row (SCD type 2): the source row and the change sequences that
    opened and closed it. ``start_at`` is None for a full-load (REFRESH) row, the baseline before
    every change; ``end_at`` is None for the current version, the delete's for a deleted key."""

    row: dict
    start_at: str | None
    end_at: str | None


class MetadataEntry(NamedTuple):
    """One table version as announced by its MD message."""

    schema_id: str
    table: str
    version: int
    md: dict
    data_schema_json: str


@dataclass
class LandingZone:
    """A generated landing zone and its expected content."""

    root: Path
    schema_topic: Path
    topics: dict[str, Path]
    tables: list[TableDef]
    messages: list[DataMessage]
    metadata: list[MetadataEntry]
    files: list[Path]
    counts: dict[str, dict[str, int]]
    states: dict[str, dict[tuple, dict]] | None = None
    histories: dict[str, dict[tuple, list[list]]] | None = None

    def expected_counts(self) -> dict[str, dict[str, int]]:
        """{table: {operation: n}}, only operations that occur (as a groupBy would return)."""
        return {table: dict(ops) for table, ops in self.counts.items()}

    def messages_for(self, table: str) -> list[DataMessage]:
        """The DT messages of one ``SCHEMA.TABLE``, in generation (commit) order."""
        return [m for m in self.messages if m.table == table]

    def final_state(self, table: str) -> dict[tuple, dict]:
        """The source table after its last change, as the simulation holds it: key tuple (in
        primary-key order) -> row (column -> value as encoded); deleted keys are absent."""
        return self.states[table]

    def history(self, table: str) -> dict[tuple, list[Version]]:
        """Each key's versions in order, as the simulation made them (needs ``keep_messages``).
        A schema change opens no version: rows keep the columns of the version they were written in."""
        if self.histories is None:
            raise ValueError("the history is kept only with keep_messages=True")
        return {key: [Version(*v) for v in versions] for key, versions in self.histories[table].items()}


# --------------------------------------------------------------------------------------------
# Framings: one sink per Kafka partition
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    """How topics are landed."""

    framing: str
    codec: str
    sync_interval: int
    value_schema: str
    seed: int


class _AvroSink:
    """An Avro object container file, as a Kafka Connect sink lands one partition."""

    def __init__(self, directory: Path, topic: str, partition: int, settings: _Settings):
        self.path = directory / f"part-{partition:05d}.avro"
        self.paths = [self.path]
        self._topic, self._partition = topic, partition
        self._as_record = settings.value_schema == "record"
        marker = hashlib.md5(f"{settings.seed}/{topic}/{partition}".encode()).digest()
        self._file = open(self.path, "wb")
        self._writer = Writer(self._file, _PARSED_KAFKA_RECORD if self._as_record else "bytes",
                              codec=settings.codec, sync_interval=settings.sync_interval, sync_marker=marker)

    def append(self, offset: int, envelope: bytes, key: bytes | None, timestamp_ms: int) -> Path:
        if self._as_record:
            self._writer.write({"topic": self._topic, "partition": self._partition, "offset": offset,
                                "timestamp": timestamp_ms, "key": key, "value": envelope})
        else:
            self._writer.write(envelope)
        return self.path

    def close(self) -> None:
        self._writer.flush()
        self._file.close()


class _LengthPrefixedSink:
    """Repeated 4-byte big-endian length + envelope."""

    def __init__(self, directory: Path, topic: str, partition: int, settings: _Settings):
        self.path = directory / f"part-{partition:05d}.bin"
        self.paths = [self.path]
        self._file = open(self.path, "wb")

    def append(self, offset: int, envelope: bytes, key: bytes | None, timestamp_ms: int) -> Path:
        self._file.write(len(envelope).to_bytes(4, "big"))
        self._file.write(envelope)
        return self.path

    def close(self) -> None:
        self._file.close()


class _MessageSink:
    """One file per message; the whole file is the envelope."""

    def __init__(self, directory: Path, topic: str, partition: int, settings: _Settings):
        self._directory, self._partition = directory, partition
        self.paths: list[Path] = []

    def append(self, offset: int, envelope: bytes, key: bytes | None, timestamp_ms: int) -> Path:
        path = self._directory / f"part-{self._partition:05d}-{offset:010d}.msg"
        path.write_bytes(envelope)
        self.paths.append(path)
        return path

    def close(self) -> None:
        pass


_SINKS = {"avro": _AvroSink, "length-prefixed": _LengthPrefixedSink, "message": _MessageSink}


class _Topic:
    """A Kafka topic landed as a directory: one sink per partition, offsets from 0 in each; with
    ``kafka``, also published to a Kafka topic of the same partitions, offsets and keys."""

    def __init__(self, name: str, directory: Path, partitions: int, settings: _Settings,
                 kafka: KafkaTopics | None = None):
        directory.mkdir(parents=True)
        self._name, self._kafka = name, kafka
        self._sinks = [_SINKS[settings.framing](directory, name, p, settings) for p in range(partitions)]
        self._next_offset = [0] * partitions
        if kafka is not None:
            kafka.create(name, partitions)

    def append(self, partition: int, envelope: bytes, key: bytes | None, timestamp_ms: int) -> tuple[Path, int]:
        offset = self._next_offset[partition]
        self._next_offset[partition] = offset + 1
        if self._kafka is not None:
            self._kafka.publish(self._name, partition, offset, envelope, key, timestamp_ms)
        return self._sinks[partition].append(offset, envelope, key, timestamp_ms), offset

    def close(self) -> list[Path]:
        """Close every partition; returns the files written."""
        for sink in self._sinks:
            sink.close()
        return [path for sink in self._sinks for path in sink.paths]


# --------------------------------------------------------------------------------------------
# The source tables
# --------------------------------------------------------------------------------------------


class _Change(NamedTuple):
    """One row change: its images, as dicts and as encoded Avro ``Data``, and its mask ordinals."""

    data: dict
    data_avro: bytes
    before: dict | None
    before_avro: bytes | None
    changed: list[int]
    present: list[int]


class _TableVersion:
    """Everything needed to describe and encode one version of a table, built once."""

    def __init__(self, table: TableDef, columns: tuple[ColumnDef, ...], number: int, headers_version: str,
                 embed_data_schema: bool, encoding: str):
        self.table, self.columns, self.number = table, columns, number
        schema = data_schema(columns, headers_version, encoding)
        self.data_schema_json = _compact_json(schema)
        self.schema_id = hashlib.md5(f"{table.name}/{number}/{self.data_schema_json}".encode()).hexdigest().upper()
        self.column_order = _shuffled_column_order(table, columns)
        md_schema = metadata_schema(self.column_order)
        self.md_schema_json = _compact_json(md_schema)
        self._md_writer = fastavro.parse_schema(_plain_types(md_schema))
        data_record, _, headers_record = (f["type"] for f in _plain_types(schema)["fields"])
        self._image_writer = fastavro.parse_schema(data_record)
        self._headers_writer = fastavro.parse_schema(headers_record)
        self.dt_envelope = _EnvelopeWriter("DT", self.schema_id, self.data_schema_json if embed_data_schema else None)
        self.refresh_headers = _refresh_headers(headers_version)
        self.refresh_headers_avro = self.encode_headers(self.refresh_headers)
        self.names = [c.name for c in columns]
        self.non_key_names = [c.name for c in columns if not c.pk_position]
        self.key_ordinals = [i for i, c in enumerate(columns, 1) if c.pk_position]
        self.all_ordinals = list(range(1, len(columns) + 1))

    @property
    def ncols(self) -> int:
        return len(self.columns)

    def encode_image(self, row: dict) -> bytes:
        return _avro_bytes(self._image_writer, row)

    def encode_headers(self, headers: dict) -> bytes:
        return _avro_bytes(self._headers_writer, headers)

    def encode_payload(self, change: _Change, with_before: bool, headers_avro: bytes) -> bytes:
        """A DataRecord is its fields' encodings in a row: the Data image, the beforeData union
        (branch index 0 for null, written 0x00; branch 1, written 0x02, then the image) and the
        Headers. Composing it lets a row image be encoded once, though UPDATE and DELETE send it
        again as their before-image."""
        before = b"\x02" + change.before_avro if with_before and change.before_avro is not None else b"\x00"
        return b"".join((change.data_avro, before, headers_avro))

    def md_message(self, timestamp: str) -> tuple[dict, bytes]:
        """The MD payload announcing this version, and its envelope."""
        described = {c.name: {"ordinal": ordinal, "type": c.source_type, "length": c.length,
                              "precision": c.precision, "scale": c.scale, "primaryKeyPosition": c.pk_position,
                              "nullable": c.nullable} for ordinal, c in enumerate(self.columns, 1)}
        md = {
            "schemaId": self.schema_id,
            "lineage": {"server": _SERVER, "task": _TASK, "schema": self.table.schema, "table": self.table.table,
                        "tableVersion": self.number, "timestamp": timestamp},
            "tableStructure": {"tableColumns": {name: described[name] for name in self.column_order}},
            "dataSchema": self.data_schema_json,
        }
        return md, encode_envelope("MD", _avro_bytes(self._md_writer, md), self.schema_id, self.md_schema_json)


def _refresh_headers(headers_version: str) -> dict:
    """Full-load headers: Replicate leaves the CDC-only strings empty and the rest null."""
    headers = {"operation": "REFRESH", "changeSequence": "", "timestamp": "", "streamPosition": "",
               "transactionId": "", "changeMask": None, "columnMask": None}
    if headers_version == "7.0":
        headers.update(transactionEventCounter=None, transactionLastEvent=None, externalSchemaId=None)
    return headers


def _shuffled_column_order(table: TableDef, columns: tuple[ColumnDef, ...]) -> list[str]:
    """A per-table deterministic shuffle of the column names that is never ordinal order, so a
    reader that trusts MD field order instead of ``ordinal`` fails the tests."""
    names = [c.name for c in columns]
    shuffled = names[:]
    random.Random(table.name).shuffle(shuffled)
    if shuffled == names:
        shuffled = shuffled[1:] + shuffled[:1]
    return shuffled


class _TableState:
    """The in-memory model of one source table: live rows (and their encoded images), versions,
    message quotas. Row dicts are replaced, never mutated, because messages share them."""

    def __init__(self, table: TableDef, rng: random.Random, quota: int, headers_version: str,
                 embed_data_schema: bool, refresh_share: float = REFRESH_SHARE, encoding: str = "text"):
        self.table = table
        self._rng, self._rand, self._encoding = rng, rng.random, encoding
        self._schema_options = (headers_version, embed_data_schema, encoding)
        self.versions = [_TableVersion(table, table.columns, 1, *self._schema_options)]
        self.rows: dict[tuple, dict] = {}
        self._images: dict[tuple, bytes] = {}
        self._keys: list[tuple] = []
        self._key_index: dict[tuple, int] = {}
        self._new_key = _key_generator(table, rng, encoding)
        self._gens = {c.name: _value_generator(c, rng, encoding) for c in table.columns}
        self.key_names = [c.name for c in table.key_columns]
        self.refresh_quota = round(quota * refresh_share)
        self.cdc_left = quota - self.refresh_quota
        self.cdc_done = 0
        changes = len(table.ddl)
        step = self.cdc_left / (changes + 1)
        self._ddl_points = [round(step * (i + 1)) for i in range(changes)]

    @property
    def version(self) -> _TableVersion:
        return self.versions[-1]

    def ddl_due(self) -> bool:
        return bool(self._ddl_points) and self.cdc_done >= self._ddl_points[0]

    def next_version(self) -> _TableVersion:
        """The table's next DDL: a new version. Live rows follow it: NULL in an added column, a
        dropped column gone, an altered column's values kept in its new type."""
        self._ddl_points.pop(0)
        previous = {c.name: c for c in self.version.columns}
        number = len(self.versions) + 1
        self.versions.append(_TableVersion(self.table, self.table.version_columns(number), number,
                                           *self._schema_options))
        moves = []
        for column in self.version.columns:
            old = previous.get(column.name)
            if old != column:
                self._gens[column.name] = _value_generator(column, self._rng, self._encoding)
            moves.append((column.name, (lambda value: None) if old is None else _altered_value(old, column)))
        self.rows = {key: {name: move(row.get(name)) for name, move in moves} for key, row in self.rows.items()}
        self._images.clear()
        return self.version

    def can_update(self) -> bool:
        return bool(self.rows and self.version.non_key_names)

    def insert(self) -> _Change:
        """A new row under a fresh key; every non-null column counts as changed."""
        version, gens = self.version, self._gens
        key = self._fresh_key()
        keyed = dict(zip(self.key_names, key))
        row = {name: keyed[name] if name in keyed else gens[name]() for name in version.names}
        image = version.encode_image(row)
        self._store(key, row, image)
        changed = [i for i, name in enumerate(version.names, 1) if row[name] is not None]
        return _Change(row, image, None, None, changed, version.all_ordinals)

    def update(self, new_key: bool = False, partial_mask: bool = False) -> _Change | None:
        """Change one to three non-key columns of a random live row; None if no value changed.
        ``new_key`` also moves the row to a fresh key. ``partial_mask`` leaves about half of the
        unchanged non-key columns out of ``columnMask`` and sends them as null, as Oracle does
        without full supplemental logging."""
        version, rand = self.version, self._rand
        key = self._random_key()
        before = self.rows[key]
        after = dict(before)
        candidates = version.non_key_names
        for _ in range(1 + int(rand() * 3)):
            name = candidates[int(rand() * len(candidates))]
            after[name] = self._gens[name]()
        moved_to = self._fresh_key() if new_key else key
        after.update(zip(self.key_names, moved_to))
        changed = [i for i, name in enumerate(version.names, 1) if after[name] != before[name]]
        if not changed:
            return None
        before_avro, image = self._image(key), version.encode_image(after)
        if moved_to != key:
            self._forget(key)
            self._store(moved_to, after, image)
        else:
            self.rows[key], self._images[key] = after, image
        data, data_avro, present = after, image, version.all_ordinals
        if partial_mask:
            absent = {n for n in version.non_key_names if after[n] == before[n] and rand() < 0.5}
            data = {n: None if n in absent else v for n, v in after.items()}
            data_avro = version.encode_image(data)
            present = [i for i, n in enumerate(version.names, 1) if n not in absent]
        return _Change(data, data_avro, before, before_avro, changed, present)

    def delete(self) -> _Change:
        """Remove a random live row; the message carries its key columns only."""
        version = self.version
        key = self._random_key()
        before, before_avro = self.rows[key], self._image(key)
        self._forget(key)
        keys = set(self.key_names)
        data = {name: before[name] if name in keys else None for name in version.names}
        return _Change(data, version.encode_image(data), before, before_avro,
                       version.key_ordinals, version.key_ordinals)

    def key_of(self, row: dict) -> tuple:
        return tuple(row[name] for name in self.key_names)

    def _image(self, key: tuple) -> bytes:
        """The encoded current image of a live row (re-encoded lazily after a DDL)."""
        image = self._images.get(key)
        if image is None:
            image = self._images[key] = self.version.encode_image(self.rows[key])
        return image

    def _fresh_key(self) -> tuple:
        """A key no live row has; only tables without a sequenced key column can collide."""
        for _ in range(1000):
            key = self._new_key()
            if key not in self._key_index:
                return key
        raise ValueError(f"{self.table.name}: cannot find a fresh primary key value")

    def _random_key(self) -> tuple:
        return self._keys[int(self._rand() * len(self._keys))]

    def _store(self, key: tuple, row: dict, image: bytes) -> None:
        self._key_index[key] = len(self._keys)
        self._keys.append(key)
        self.rows[key], self._images[key] = row, image

    def _forget(self, key: tuple) -> None:
        """Remove a key in O(1) by moving the last key into its slot."""
        index = self._key_index.pop(key)
        last = self._keys.pop()
        if last != key:
            self._keys[index] = last
            self._key_index[last] = index
        del self.rows[key]
        self._images.pop(key, None)


# --------------------------------------------------------------------------------------------
# The Replicate task
# --------------------------------------------------------------------------------------------


def _at(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class _Task:
    """Plays a Replicate task: metadata, full load (REFRESH), then CDC transactions."""

    def __init__(self, root: Path, tables: list[TableDef], messages: int, settings: _Settings,
                 files_per_topic: int, before_images: bool, headers_version: str,
                 embed_data_schema: bool, md_in_data_topics: bool, keep_messages: bool,
                 operation_mix: tuple[float, float, float] = OPERATION_MIX, refresh_share: float = REFRESH_SHARE,
                 encoding: str = "text", stray_mask_bits: float = 0.0, key_changes: float = 0.0,
                 partial_masks: float = 0.0, progress: Callable[[str], None] | None = None,
                 kafka: KafkaTopics | None = None):
        self._rng = random.Random(settings.seed)
        self._kafka = kafka
        self._stray_mask_bits, self._key_changes, self._partial_masks = stray_mask_bits, key_changes, partial_masks
        insert_share, update_share, _ = operation_mix
        self._update_from, self._delete_from = insert_share, insert_share + update_share
        self._partitions = files_per_topic
        self._before_images, self._v7 = before_images, headers_version == "7.0"
        self._md_in_data, self._keep = md_in_data_topics, keep_messages
        quotas = [messages // len(tables) + (i < messages % len(tables)) for i in range(len(tables))]
        self._states = [_TableState(t, self._rng, q, headers_version, embed_data_schema, refresh_share, encoding)
                        for t, q in zip(tables, quotas)]
        self._by_topic: dict[str, list[_TableState]] = {}
        for state in self._states:
            self._by_topic.setdefault(state.table.topic, []).append(state)
        self._schema_topic = _Topic(SCHEMA_TOPIC, root / SCHEMA_TOPIC, 1, settings, kafka)
        self._topics = {name: _Topic(name, root / name, files_per_topic, settings, kafka) for name in self._by_topic}
        self._clock_us = _TASK_START_US
        self._sequence = 0
        self._lsn = 0x2A_0000_0000
        self.messages: list[DataMessage] = []
        self.metadata: list[MetadataEntry] = []
        self.counts: dict[str, dict[str, int]] = {s.table.name: {} for s in self._states}
        # Each key's versions, [row, opened by, closed by], recorded as the simulation changes rows.
        self.histories: dict[str, dict[tuple, list[list]]] | None = (
            {s.table.name: {} for s in self._states} if keep_messages else None)
        self._progress, self._messages, self._published = progress, messages, 0
        self._progress_every = max(1, messages // 10)

    def run(self) -> list[Path]:
        """Generate everything; returns the files written."""
        for state in self._states:
            self._announce(state, state.version)
        self._full_load()
        self._change_data_capture()
        files = self._schema_topic.close()
        for topic in self._topics.values():
            files += topic.close()
        if self._kafka is not None:
            self._kafka.close()
        return files

    def final_states(self) -> dict[str, dict[tuple, dict]]:
        return {state.table.name: state.rows for state in self._states}

    # -- metadata

    def _announce(self, state: _TableState, version: _TableVersion) -> None:
        """Publish an MD message to the schema topic (and, if asked, to the data topic)."""
        md, envelope = version.md_message(_at(self._clock_us).isoformat(timespec="milliseconds"))
        key, millis = state.table.name.encode(), self._clock_us // 1000
        self._schema_topic.append(0, envelope, key, millis)
        if self._md_in_data:
            self._topics[state.table.topic].append(0, envelope, key, millis)
        self.metadata.append(MetadataEntry(version.schema_id, state.table.name, version.number, md,
                                           version.data_schema_json))

    # -- full load

    def _full_load(self) -> None:
        """REFRESH rows first, table by table (their headers are the same for every row)."""
        self._clock_us += 5_000_000
        for state in self._states:
            version = state.version
            for _ in range(state.refresh_quota):
                self._clock_us += 40
                self._publish(state, "REFRESH", state.insert(), version.refresh_headers,
                              version.refresh_headers_avro)

    # -- change data capture

    def _change_data_capture(self) -> None:
        self._clock_us += 60_000_000
        while any(state.cdc_left for state in self._states):
            plan = self._plan_transaction()
            for state in dict.fromkeys(plan):
                while state.ddl_due():
                    self._announce(state, state.next_version())
            self._run_transaction(plan)

    def _plan_transaction(self) -> list[_TableState]:
        """1..MAX_TRANSACTION changes on tables of one topic, chosen by their remaining quota."""
        first = self._rng.choices(self._states, weights=[s.cdc_left for s in self._states])[0]
        candidates = self._by_topic[first.table.topic]
        plan = [first]
        first.cdc_left -= 1
        for _ in range(self._rng.randint(1, MAX_TRANSACTION) - 1):
            weights = [s.cdc_left for s in candidates]
            if not any(weights):
                break
            state = self._rng.choices(candidates, weights=weights)[0]
            state.cdc_left -= 1
            plan.append(state)
        return plan

    def _run_transaction(self, plan: list[_TableState]) -> None:
        self._clock_us += self._rng.randint(200, 1_500_000)
        commit = _at(self._clock_us)
        sequence_prefix = commit.strftime("%Y%m%d%H%M%S%f")
        timestamp = commit.isoformat(sep=" ", timespec="microseconds")
        transaction_id = f"{self._rng.getrandbits(128):032X}"
        self._lsn += self._rng.randint(1, 4_000)
        for event, state in enumerate(plan, 1):
            operation, change = self._change(state)
            state.cdc_done += 1
            self._sequence += 1
            extra_byte = self._rng.random() < EXTRA_MASK_BYTE_RATE
            stray_bit = operation == "UPDATE" and self._stray_mask_bits > 0 and self._rng.random() < self._stray_mask_bits
            ncols = state.version.ncols
            headers = {"operation": operation, "changeSequence": f"{sequence_prefix}{self._sequence:015d}",
                       "timestamp": timestamp,
                       "streamPosition": f"{self._lsn >> 20:08X}:{self._lsn & 0xFFFFF:08X}:{event:04X}",
                       "transactionId": transaction_id,
                       "changeMask": mask_bytes(change.changed, ncols, extra_byte, stray_bit),
                       "columnMask": mask_bytes(change.present, ncols, extra_byte)}
            if self._v7:
                headers.update(transactionEventCounter=event, transactionLastEvent=event == len(plan),
                               externalSchemaId=None)
            self._publish(state, operation, change, headers, state.version.encode_headers(headers))

    def _change(self, state: _TableState) -> tuple[str, _Change]:
        """INSERT, UPDATE or DELETE in the shares of ``operation_mix`` (default about 50%, 40%,
        10%); INSERT when the table is empty, or when an UPDATE happens to change nothing."""
        draw = self._rng.random()
        if self._update_from <= draw < self._delete_from and state.can_update():
            # Drawn only when asked for, so that other landing zones stay as they were.
            new_key = self._key_changes > 0 and self._rng.random() < self._key_changes
            partial = self._partial_masks > 0 and self._rng.random() < self._partial_masks
            change = state.update(new_key, partial)
            if change is not None:
                return "UPDATE", change
        elif draw >= self._delete_from and state.rows:
            return "DELETE", state.delete()
        return "INSERT", state.insert()

    # -- encoding

    def _publish(self, state: _TableState, operation: str, change: _Change, headers: dict,
                 headers_avro: bytes) -> None:
        """Encode one DT message, append it to the partition its key hashes to, and record it."""
        version, data = state.version, change.data
        envelope = version.dt_envelope(version.encode_payload(change, self._before_images, headers_avro))
        key = "|".join(str(data[name]) for name in state.key_names).encode()
        partition = zlib.crc32(state.table.name.encode() + b"/" + key) % self._partitions
        millis = self._clock_us // 1000
        path, offset = self._topics[state.table.topic].append(partition, envelope, key, millis)
        ops = self.counts[state.table.name]
        ops[operation] = ops.get(operation, 0) + 1
        if self.histories is not None:
            self._record_version(state, operation, change, headers["changeSequence"] or None)
        self._published += 1
        if self._progress is not None and self._published % self._progress_every == 0:
            self._progress(f"{self._published:,} of {self._messages:,} data messages written")
        if self._keep:
            self.messages.append(DataMessage(
                state.table.name, version.schema_id, version.number, state.table.topic, partition, offset,
                path, operation, data, change.before if self._before_images else None, headers,
                headers["changeMask"], headers["columnMask"], key, millis))

    def _record_version(self, state: _TableState, operation: str, change: _Change, sequence: str | None) -> None:
        """Close the version the change ends (its before-image's key) and open the one it makes."""
        history = self.histories[state.table.name]
        if change.before is not None:
            history[state.key_of(change.before)][-1][2] = sequence
        if operation != "DELETE":
            key = state.key_of(change.data)
            history.setdefault(key, []).append([state.rows[key], sequence, None])


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def _prepare_root(out_dir: Path, overwrite: bool) -> None:
    """Refuse to mix with existing files; with ``overwrite`` only a previous landing zone (one
    that has our manifest) is removed."""
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (overwrite and (out_dir / "_manifest.json").is_file()):
            raise FileExistsError(f"{out_dir} is not empty (overwrite=True replaces a previous landing zone)")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)


def _check_choice(name: str, value: str, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r}; expected one of {', '.join(allowed)}")


def _write_manifest(zone: LandingZone, settings: _Settings, options: dict) -> None:
    by_table: dict[str, list] = {}
    for entry in zone.metadata:
        by_table.setdefault(entry.table, []).append({"version": entry.version, "schema_id": entry.schema_id})
    manifest = {
        "generator": "spark_replicate.generate",
        "seed": settings.seed, "framing": settings.framing, "codec": settings.codec,
        "value_schema": settings.value_schema, **options,
        "schema_topic": SCHEMA_TOPIC,
        "topics": {name: path.name for name, path in zone.topics.items()},
        "data_messages": sum(sum(ops.values()) for ops in zone.counts.values()),
        "metadata_messages": len(zone.metadata),
        "tables": {t.name: {"topic": t.topic, "versions": by_table[t.name], "counts": zone.counts[t.name]}
                   for t in zone.tables},
        "files": sorted(path.relative_to(zone.root).as_posix() for path in zone.files),
    }
    (zone.root / "_manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


def generate_landing_zone(out_dir, *, messages: int = 2000, seed: int = 42, framing: str = "avro",
                          tables: list[TableDef] | None = None, files_per_topic: int = 2, codec: str = "null",
                          sync_interval: int = 16000, before_images: bool = True, headers_version: str = "7.0",
                          embed_data_schema: bool = False, value_schema: str = "record",
                          md_in_data_topics: bool = False, keep_messages: bool = True,
                          overwrite: bool = False, operation_mix: tuple[float, float, float] = OPERATION_MIX,
                          full_load: bool = True, logical_types: bool = False, all_text: bool = False,
                          stray_mask_bits: float = 0.0, key_changes: float = 0.0, partial_masks: float = 0.0,
                          progress: Callable[[str], None] | None = None, kafka: str | None = None,
                          kafka_topic_prefix: str = "") -> LandingZone:
    """Write a Replicate landing zone under ``out_dir`` and return what it contains.

    ``messages`` DT messages are split evenly among ``tables`` (default :func:`default_tables`);
    MD messages come on top. Layout: ``_schema/`` holds every MD message (one partition), each
    data topic is a directory with ``files_per_topic`` partitions, and ``_manifest.json`` sums it
    up. ``keep_messages=False`` drops the per-message expectations to save memory in benchmarks.

    ``operation_mix`` gives the shares of INSERT, UPDATE and DELETE among the CDC changes (three
    non-negative numbers summing to 1); ``full_load=False`` skips the full load, so every data
    message is a CDC change (by default about 20% of each table's messages are REFRESH rows).

    Values are encoded as Replicate sends them with its "logical data types" off (numbers,
    booleans and bytes native; DATE, TIME, DATETIME, NUMERIC and UINT8 as text), or on with
    ``logical_types`` (DATE int/date, TIME int/time-millis, DATETIME long/timestamp-micros, NUMERIC
    bytes/decimal(p,s), UINT8 bytes/decimal(20,0)); ``all_text`` sends every value as its text
    (bytes in hex). :func:`expected_value` says what a reader returns for each encoded value.

    ``stray_mask_bits`` is the share of CDC UPDATEs whose ``changeMask`` also sets the bit past
    the table's last column, as real Replicate output does on Oracle sources (see :func:`mask_bytes`).
    ``key_changes`` is the share of CDC UPDATEs that move their row to a new key (the old key in
    the before-image; needs ``before_images``), ``partial_masks`` the share whose ``columnMask``
    leaves out some unchanged non-key columns, sent as null (Oracle without full supplemental
    logging). ``progress``, when given, receives a line after each tenth of the data messages.

    ``kafka`` (bootstrap servers) also publishes every topic to Apache Kafka, as Replicate's Kafka
    target does: new topics named ``kafka_topic_prefix`` + the landed topic's name, the same
    partitions, and each message at its landed offset with its key and commit time (see
    :mod:`spark_replicate.kafka_topics`).

    The zone also holds the truth the simulation computed: :meth:`LandingZone.final_state` and,
    with ``keep_messages``, :meth:`LandingZone.history`.
    """
    _check_choice("framing", framing, FRAMINGS)
    _check_choice("value_schema", value_schema, VALUE_SCHEMAS)
    _check_choice("headers_version", headers_version, HEADERS_VERSIONS)
    if logical_types and all_text:
        raise ValueError("logical_types and all_text exclude each other")
    encoding = "logical" if logical_types else "all-text" if all_text else "text"
    for name, share in (("stray_mask_bits", stray_mask_bits), ("key_changes", key_changes),
                        ("partial_masks", partial_masks)):
        if not 0 <= share <= 1:
            raise ValueError(f"{name}={share!r}; expected a share between 0 and 1")
    if key_changes and not before_images:
        raise ValueError("key_changes needs before_images: the old key of a moved row is in the before-image")
    if messages < 0 or files_per_topic < 1:
        raise ValueError("messages must be >= 0 and files_per_topic >= 1")
    operation_mix = tuple(float(share) for share in operation_mix)
    if len(operation_mix) != 3 or min(operation_mix) < 0 or not math.isclose(sum(operation_mix), 1.0):
        raise ValueError(f"operation_mix={operation_mix!r}; expected three non-negative shares "
                         "(INSERT, UPDATE, DELETE) summing to 1")
    tables = list(default_tables() if tables is None else tables)
    if not tables or len({t.name for t in tables}) != len(tables) or any(t.topic == SCHEMA_TOPIC for t in tables):
        raise ValueError(f"tables must be non-empty, uniquely named and not use the topic {SCHEMA_TOPIC}")
    root = Path(out_dir)
    _prepare_root(root, overwrite)
    settings = _Settings(framing, codec, sync_interval, value_schema, seed)
    task = _Task(root, tables, messages, settings, files_per_topic, before_images, headers_version,
                 embed_data_schema, md_in_data_topics, keep_messages, operation_mix,
                 REFRESH_SHARE if full_load else 0.0, encoding, stray_mask_bits, key_changes, partial_masks,
                 progress, None if kafka is None else KafkaTopics(kafka, kafka_topic_prefix))
    files = task.run()
    zone = LandingZone(root, root / SCHEMA_TOPIC, {t.topic: root / t.topic for t in tables}, tables,
                       task.messages, task.metadata, files, task.counts, task.final_states(), task.histories)
    _write_manifest(zone, settings, {"files_per_topic": files_per_topic, "before_images": before_images,
                                     "headers_version": headers_version, "embed_data_schema": embed_data_schema,
                                     "md_in_data_topics": md_in_data_topics, "operation_mix": list(operation_mix),
                                     "full_load": full_load, "logical_types": logical_types,
                                     "all_text": all_text, "stray_mask_bits": stray_mask_bits,
                                     "key_changes": key_changes, "partial_masks": partial_masks,
                                     "kafka_topic_prefix": None if kafka is None else kafka_topic_prefix})
    return zone
