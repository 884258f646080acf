"""The five ways to read the same landed files, and the checksum that proves they agree.

Contenders 1 to 4 return a DataFrame with exactly the connector's output columns (the table's
columns, the ``header__*`` columns with ``changed``/``present`` masks expanded, the before-image
struct); each is timed writing to Spark's ``noop`` sink. Contender 5, the floor, only reads the
container records and sums ``length(value)``: what reading the bytes costs with no decoding.

The compared contenders return the Avro types, which is what the Python contenders decode: the
connector runs with ``sourceTypes=false``. The connector's default, columns typed by the metadata
(decimals, timestamps, dates from their text), is timed as a diagnostic beside from_avro with the
same types by ``CAST``; and Spark's vectorized Parquet reader on the connector's output, already
decoded, shows what Spark's own columnar path costs for the same rows.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

import pydecode
from profiles import Dataset


@dataclass
class Contender:
    key: str
    label: str
    build: Callable[[], DataFrame]
    is_floor: bool = False

    def run(self) -> None:
        df = self.build()
        if self.is_floor:
            df.collect()
        else:
            df.write.format("noop").mode("overwrite").save()


def connector(spark: SparkSession, ds: Dataset, expand_masks: bool = True, source_types: bool = False) -> DataFrame:
    return (spark.read.format("replicate")
            .option("schemaTopic", str(ds.schema_dir))
            .option("table", ds.profile.table_name)
            .option("expandMasks", str(expand_masks).lower())
            .option("sourceTypes", str(source_types).lower())
            .load(str(ds.data_dir)))


def cast_to(df: DataFrame, schema) -> DataFrame:
    """``df`` with the columns whose type differs cast to ``schema``'s (structs field by field)."""
    current = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    return df.select(*[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name)
                       if current[f.name] != f.dataType.simpleString() else F.col(f"`{f.name}`")
                       for f in schema.fields])


def _mask_chunks(mask: str, prefix: str, columns: list[str]) -> list[str]:
    """SQL for a Replicate mask (one big-endian unsigned integer) as longs of 60 bits each, lowest
    first: its hex digits cut from the right, 15 at a time."""
    return [f"coalesce(CAST(conv(substr(hex({mask}), {-15 * (j + 1)}, 15), 16, 10) AS BIGINT), 0) AS {prefix}{j}"
            for j in range((len(columns) + 59) // 60)]


def _mask_names(mask: str, prefix: str, columns: list[str]) -> str:
    """SQL for the names of the columns a mask marks (bit i is ordinal i + 1), null for a null mask,
    from the chunks of :func:`_mask_chunks`; ``array_except`` drops the nulls of unmarked columns
    (names are unique, so nothing else). Every part has generated code."""
    picks = [f"IF((shiftright({prefix}{i // 60}, {i % 60}) & 1) = 1, '{name}', NULL)" for i, name in enumerate(columns)]
    return f"IF({mask} IS NULL, NULL, array_except(array({', '.join(picks)}), array(CAST(NULL AS STRING))))"


def from_avro_twice(spark: SparkSession, ds: Dataset, info: dict, expand_masks: bool = True) -> DataFrame:
    """spark-avro's ``from_avro``: the envelope, a filter on the schema id, then the payload.

    The mask chunks are computed in a projection of their own so that Spark evaluates them once
    per row (inlined into the conditional expressions below, they would not be shared)."""
    return decode_from_avro(spark.read.format("avro").load(str(ds.data_dir)), info, expand_masks)


def decode_from_avro(raw: DataFrame, info: dict, expand_masks: bool = True) -> DataFrame:
    """:func:`from_avro_twice` on any DataFrame of messages in a ``value`` column (landed, or Kafka)."""
    from pyspark.sql.avro.functions import from_avro

    envelope_json = json.dumps(pydecode.ENVELOPE_SCHEMA)
    columns = info["columns"]
    envelopes = (raw.select(from_avro(F.col("value"), envelope_json).alias("e"))
                 .where((F.col("e.type") == "DT") & (F.col("e.messageSchemaId") == info["schema_id"])))
    records = (envelopes.select(from_avro(F.col("e.message"), info["data_schema"]).alias("r"))
               .selectExpr("IF(r.data IS NULL, r.beforeData, r.data) AS img", "r.headers AS h", "r.beforeData AS b"))
    if expand_masks:
        records = records.selectExpr("img", "h", "b", *_mask_chunks("h.changeMask", "__cm", columns),
                                     *_mask_chunks("h.columnMask", "__pm", columns))
    exprs = [f"img.`{c}` AS `{c}`" for c in columns] + [
        f"'{info['schema_id']}' AS header__schema_id",
        f"CAST({info['table_version']} AS BIGINT) AS header__table_version",
        "CAST(h.operation AS STRING) AS header__operation",
        "nullif(h.changeSequence, '') AS header__change_seq",
        "CAST(nullif(h.timestamp, '') AS TIMESTAMP) AS header__timestamp",
        "nullif(h.streamPosition, '') AS header__stream_position",
        "nullif(h.transactionId, '') AS header__transaction_id",
        "h.transactionEventCounter AS header__transaction_event_counter",
        "h.transactionLastEvent AS header__transaction_last_event",
        "nullif(h.externalSchemaId, '') AS header__external_schema_id",
        "h.changeMask AS header__change_mask",
        "h.columnMask AS header__column_mask",
    ]
    if expand_masks:
        exprs += [f"{_mask_names('h.changeMask', '__cm', columns)} AS header__changed_columns",
                  f"{_mask_names('h.columnMask', '__pm', columns)} AS header__present_columns"]
    exprs.append("b AS header__before_image")
    return records.selectExpr(*exprs)


def fastavro_map_in_arrow(spark: SparkSession, ds: Dataset, info: dict, schema) -> DataFrame:
    raw = spark.read.format("avro").load(str(ds.data_dir)).select("value")
    return raw.mapInArrow(pydecode.map_in_arrow(info, schema.json()), schema)


def python_data_source(spark: SparkSession, ds: Dataset, info: dict, schema) -> DataFrame:
    return (spark.read.format(pydecode.FastavroReplicateSource.name()).schema(schema)
            .option("info", json.dumps(info)).load(str(ds.data_dir)))


def floor(spark: SparkSession, ds: Dataset) -> DataFrame:
    return (spark.read.format("avro").load(str(ds.data_dir))
            .agg(F.count(F.lit(1)).alias("messages"), F.sum(F.length("value")).alias("bytes")))


def contenders(spark: SparkSession, ds: Dataset, info: dict, schema) -> list[Contender]:
    return [
        Contender("connector", 'connector: format("replicate"), sourceTypes=false', lambda: connector(spark, ds)),
        Contender("from_avro", "spark-avro from_avro twice", lambda: from_avro_twice(spark, ds, info)),
        Contender("fastavro_mapinarrow", "fastavro in mapInArrow",
                  lambda: fastavro_map_in_arrow(spark, ds, info, schema)),
        Contender("python_datasource", "Python Data Source + fastavro",
                  lambda: python_data_source(spark, ds, info, schema)),
        Contender("floor", 'floor: format("avro"), sum(length(value))', lambda: floor(spark, ds), is_floor=True),
    ]


def diagnostics(spark: SparkSession, ds: Dataset, info: dict) -> list[tuple[Contender, ...]]:
    """Not compared with the others, in groups whose members must agree with each other (a group of
    one, with the connector): the connector and from_avro without the expanded masks (the
    `header__changed_columns` / `header__present_columns` arrays), to show what those cost; both
    with the columns typed by the metadata; and Spark's own columnar Parquet reader on the
    connector's output, already decoded, beside the connector selecting the same columns."""
    typed_schema = connector(spark, ds, source_types=True).schema
    same_rows, top_level, top_level_columns = decoded_parquet(spark, ds)
    return [
        (Contender("connector_no_masks", 'connector, expandMasks=false', lambda: connector(spark, ds, expand_masks=False)),
         Contender("from_avro_no_masks", "from_avro twice, no mask expansion",
                   lambda: from_avro_twice(spark, ds, info, expand_masks=False))),
        (Contender("connector_typed", "connector, sourceTypes=true (the default)",
                   lambda: connector(spark, ds, source_types=True)),
         Contender("from_avro_typed", "from_avro twice, then CAST to the same types",
                   lambda: cast_to(from_avro_twice(spark, ds, info), typed_schema))),
        (Contender("parquet_same_rows", "Parquet reader: the connector's rows, already decoded",
                   lambda: spark.read.parquet(same_rows)),),
        (Contender("connector_top_level", "connector, top-level columns only (no masks, no before-image)",
                   lambda: connector(spark, ds).select(*top_level_columns)),
         Contender("parquet_top_level", "Parquet reader: the same top-level columns, already decoded",
                   lambda: spark.read.parquet(top_level))),
    ]


def decoded_dir(ds: Dataset) -> Path:
    """Where the diagnostics keep the connector's output as Parquet, beside the landing zone."""
    return ds.root / "_decoded"


def decoded_parquet(spark: SparkSession, ds: Dataset) -> tuple[str, str, list[str]]:
    """The connector's output written as uncompressed Parquet, afresh in every run so that it is
    this code's output: all columns, and the columns that are neither arrays nor structs (which
    Spark's vectorized reader handles best), whose quoted names come third."""
    root = decoded_dir(ds)
    shutil.rmtree(root, ignore_errors=True)
    same_rows, top_level = str(root / "same_rows"), str(root / "top_level")
    writer = lambda df, path: df.write.option("compression", "uncompressed").parquet(path)  # noqa: E731
    writer(connector(spark, ds), same_rows)
    decoded = spark.read.parquet(same_rows)
    top_level_columns = [f"`{f.name}`" for f in decoded.schema.fields
                         if not isinstance(f.dataType, (ArrayType, StructType, MapType))]
    writer(decoded.select(*top_level_columns), top_level)
    return same_rows, top_level, top_level_columns


def checksum(df: DataFrame) -> dict:
    """Row count and order-independent checksums: the sum of a 64-bit hash of every row (all
    output columns), and the same per column, so a mismatch names the columns that differ."""
    columns = df.columns
    hashes = [F.xxhash64(*[F.col(f"`{c}`") for c in columns]).alias("__row")]
    hashes += [F.xxhash64(F.col(f"`{c}`")).alias(f"__h{i}") for i, c in enumerate(columns)]
    total = lambda name: F.sum(F.col(name).cast("decimal(38,0)")).cast("string")  # noqa: E731
    aggregated = df.select(*hashes).agg(F.count(F.lit(1)).alias("rows"), total("__row").alias("row"),
                                        *[total(f"__h{i}").alias(f"__h{i}") for i in range(len(columns))]).first()
    return {"rows": aggregated["rows"], "checksum": aggregated["row"],
            "columns": {c: aggregated[f"__h{i}"] for i, c in enumerate(columns)}}


def same_types(a, b) -> bool:
    """Schema equality ignoring nullability (which Arrow round trips and from_avro may change)."""
    def strip(t):
        if isinstance(t, dict):
            return {k: strip(v) for k, v in t.items() if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
        if isinstance(t, list):
            return [strip(x) for x in t]
        return t
    return strip(json.loads(a.json())) == strip(json.loads(b.json()))
