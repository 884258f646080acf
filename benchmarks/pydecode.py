"""The Python contenders' decoding: fastavro turns landed Replicate messages into the connector's rows.

Used by contender 3 (``mapInArrow`` over ``spark.read.format("avro")``) and contender 4 (a Spark 4
Python Data Source reading the container files itself). Both produce exactly the connector's
output schema (table columns, ``header__*`` columns with expanded masks, the before-image
struct) as Arrow batches, so the harness can compare row counts and checksums.

It is written the way a careful Python engineer would: schemas parsed once per task, filtering
on the schema id before the payload is decoded, mask expansions cached per distinct mask, and
columns built as Arrow arrays in one call each. This module runs in the Python workers: it needs
only fastavro and pyarrow (plus pyspark for the Data Source base classes).
"""

from __future__ import annotations

import io
import json
import os
from typing import Iterable, Iterator

import fastavro
import pyarrow as pa

from spark_replicate.generate import ENVELOPE_SCHEMA

# Reading only `value` from the Kafka-style container records: fastavro skips the other fields.
VALUE_ONLY = {"type": "record", "name": "KafkaRecord", "fields": [{"name": "value", "type": "bytes"}]}
BATCH_ROWS = 10_000

_EMPTY_AS_NULL = ("changeSequence", "streamPosition", "transactionId", "externalSchemaId")


def table_info(schema_dir: str, table: str) -> dict:
    """schema id, table version, data schema (JSON) and column names of ``SCHEMA.TABLE``, read from
    the metadata messages of a landed schema topic. The benchmark tables have one version."""
    envelope = fastavro.parse_schema(ENVELOPE_SCHEMA)
    found = []
    for name in sorted(os.listdir(schema_dir)):
        with open(os.path.join(schema_dir, name), "rb") as f:
            for record in fastavro.reader(f, reader_schema=VALUE_ONLY):
                e = fastavro.schemaless_reader(io.BytesIO(record["value"]), envelope, None)
                if e["type"] != "MD":
                    continue
                md_schema = fastavro.parse_schema(json.loads(e["messageSchema"]))
                md = fastavro.schemaless_reader(io.BytesIO(e["message"]), md_schema, None)
                lineage = md["lineage"]
                if f'{lineage["schema"]}.{lineage["table"]}' == table:
                    columns = sorted(md["tableStructure"]["tableColumns"].items(), key=lambda c: c[1]["ordinal"])
                    found.append({"schema_id": md["schemaId"], "table_version": lineage["tableVersion"],
                                  "data_schema": md["dataSchema"], "columns": [name for name, _ in columns]})
    if len(found) != 1:
        raise ValueError(f"expected one version of {table} in {schema_dir}, found {len(found)}")
    return found[0]


def spark_to_arrow(data_type: dict) -> pa.DataType:
    """Arrow type of a Spark type given as its JSON form (what Spark exchanges with Python workers)."""
    if isinstance(data_type, str):
        simple = {"string": pa.string(), "integer": pa.int32(), "long": pa.int64(), "short": pa.int16(),
                  "byte": pa.int8(), "boolean": pa.bool_(), "double": pa.float64(), "float": pa.float32(),
                  "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC")}
        return simple[data_type]
    if data_type["type"] == "array":
        return pa.list_(spark_to_arrow(data_type["elementType"]))
    if data_type["type"] == "struct":
        return pa.struct([pa.field(f["name"], spark_to_arrow(f["type"]), f.get("nullable", True))
                          for f in data_type["fields"]])
    raise ValueError(f"no Arrow type for {data_type}")


def arrow_schema(spark_schema_json: str) -> pa.Schema:
    return pa.schema([pa.field(f["name"], spark_to_arrow(f["type"]), f.get("nullable", True))
                      for f in json.loads(spark_schema_json)["fields"]])


class ChangeDecoder:
    """Decodes envelopes of one table version into Arrow batches of the connector's schema."""

    def __init__(self, info: dict, spark_schema_json: str):
        self.schema_id = info["schema_id"]
        self.table_version = info["table_version"]
        self.columns = info["columns"]
        self._envelope = fastavro.parse_schema(ENVELOPE_SCHEMA)
        self._data = fastavro.parse_schema(json.loads(info["data_schema"]))
        self.schema = arrow_schema(spark_schema_json)
        self._column_types = [self.schema.field(name).type for name in self.columns]
        self._before_type = self.schema.field("header__before_image").type
        self._masks: dict[bytes, list[str]] = {}

    def _expand(self, mask: bytes | None) -> list[str] | None:
        """Column names of the set bits: bit i of the big-endian mask is ordinal i + 1."""
        if mask is None:
            return None
        names = self._masks.get(mask)
        if names is None:
            value = int.from_bytes(mask, "big")
            names = self._masks[mask] = [c for i, c in enumerate(self.columns) if value >> i & 1]
        return names

    def decode(self, values: Iterable[bytes]) -> pa.RecordBatch:
        read, buffer = fastavro.schemaless_reader, io.BytesIO
        envelope_schema, data_schema, schema_id = self._envelope, self._data, self.schema_id
        images, befores, headers = [], [], []
        for value in values:
            envelope = read(buffer(value), envelope_schema, None)
            if envelope["type"] != "DT" or envelope["messageSchemaId"] != schema_id:
                continue  # metadata, or another table: its payload is never decoded
            record = read(buffer(envelope["message"]), data_schema, None)
            data, before = record["data"], record["beforeData"]
            images.append(data if data is not None else before)
            befores.append(before)
            headers.append(record["headers"])
        n = len(images)
        arrays = [pa.array([image[name] for image in images], t) for name, t in zip(self.columns, self._column_types)]
        expand = self._expand
        timestamps = pa.array([h["timestamp"] or None for h in headers], pa.string())
        arrays += [
            pa.array([schema_id] * n, pa.string()),
            pa.array([self.table_version] * n, pa.int64()),
            pa.array([h["operation"] for h in headers], pa.string()),
            pa.array([h["changeSequence"] or None for h in headers], pa.string()),
            timestamps.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
            pa.array([h["streamPosition"] or None for h in headers], pa.string()),
            pa.array([h["transactionId"] or None for h in headers], pa.string()),
            pa.array([h.get("transactionEventCounter") for h in headers], pa.int64()),
            pa.array([h.get("transactionLastEvent") for h in headers], pa.bool_()),
            pa.array([h.get("externalSchemaId") or None for h in headers], pa.string()),
            pa.array([h["changeMask"] for h in headers], pa.binary()),
            pa.array([h["columnMask"] for h in headers], pa.binary()),
            pa.array([expand(h["changeMask"]) for h in headers], pa.list_(pa.string())),
            pa.array([expand(h["columnMask"]) for h in headers], pa.list_(pa.string())),
            pa.array(befores, self._before_type),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def map_in_arrow(info: dict, spark_schema_json: str):
    """The function for ``DataFrame.mapInArrow`` over the container records' ``value`` column."""

    def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = ChangeDecoder(info, spark_schema_json)
        for batch in batches:
            yield decoder.decode(batch.column(0).to_pylist())

    return decode_batches


# --------------------------------------------------------------------------------------------
# Contender 4: a Python Data Source (Spark 4 `pyspark.sql.datasource`)
# --------------------------------------------------------------------------------------------

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402


class _FilePartition(InputPartition):
    def __init__(self, path: str):
        self.path = path


class FastavroReplicateReader(DataSourceReader):
    def __init__(self, options: dict, spark_schema_json: str):
        self.path = options["path"]
        self.info = json.loads(options["info"])
        self.spark_schema_json = spark_schema_json

    def partitions(self):
        """One partition per landed file, like one Kafka partition each."""
        return [_FilePartition(os.path.join(self.path, name)) for name in sorted(os.listdir(self.path))
                if not name.startswith((".", "_"))]

    def read(self, partition: _FilePartition):
        decoder = ChangeDecoder(self.info, self.spark_schema_json)
        with open(partition.path, "rb") as f:
            chunk = []
            for record in fastavro.reader(f, reader_schema=VALUE_ONLY):
                chunk.append(record["value"])
                if len(chunk) == BATCH_ROWS:
                    yield decoder.decode(chunk)
                    chunk = []
            if chunk:
                yield decoder.decode(chunk)


class FastavroReplicateSource(DataSource):
    """``spark.read.format("replicate_fastavro").schema(s).option("info", ...).load(dir)``."""

    @classmethod
    def name(cls) -> str:
        return "replicate_fastavro"

    def schema(self):
        raise ValueError("give the output schema with .schema(...)")

    def reader(self, schema):
        return FastavroReplicateReader(self.options, schema.json())
