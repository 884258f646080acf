"""What a landing zone holds: ``spark-replicate inspect`` and :func:`inspect`.

Everything is read through the DataFrame API (the connector, and Spark's ``binaryFile`` source
for file sizes), so it runs on a classic session and over Spark Connect alike. The report is a
plain dict with these keys (stable: scripts may rely on them; ``--json`` prints it):

- ``paths``, ``schema_topic``: what was read (``schema_topic`` is None when the metadata came
  from the data paths);
- ``files``: one entry per given path, ``{"path", "role": "data" | "schema", "files", "bytes"}``;
- ``tables``: one entry per ``SCHEMA.TABLE`` of the metadata, sorted by name:

  - ``versions``: ``[{"version", "schema_id", "columns", "added", "dropped", "retyped"}]`` in
    version order, one per distinct metadata message; ``added`` / ``dropped`` name the columns
    the version gained or lost since the previous one, ``retyped`` is ``[{"column", "from",
    "to"}]`` with Replicate's source types (``NUMERIC(9,2)``, ``STRING(20)``);
  - ``rows``: its data messages; ``operations``: ``{"INSERT": n, ...}``, only those that occur;
  - ``first_timestamp`` / ``last_timestamp`` (``header__timestamp``, UTC,
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``) and ``first_change_seq`` / ``last_change_seq``, or None
    when no message carries one (full-load rows carry neither);
  - ``mask_bits_ignored``: messages whose ``changeMask`` or ``columnMask`` sets a bit past the
    last column of their table version, computed from the raw masks;

- ``malformed``: ``{"REPLICATE_<REASON>": n}`` over the data read in PERMISSIVE mode;
- ``schema_topic_malformed``: the same for the schema topic's own messages (empty without one).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import reduce
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession, functions as F

from spark_replicate.session import Paths, _option_name, _path_list, read

OPERATIONS = ("REFRESH", "INSERT", "UPDATE", "DELETE")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SIZED_TYPES = {"STRING", "WSTRING", "BYTES"}
_RESERVED = {"schematopic", "messages", "layout", "mode", "expandmasks"}


def inspect(spark: SparkSession, path: Paths, schema_topic: Paths | None = None,
            log: Callable[[str], None] = lambda line: None, **options: object) -> dict:
    """Reads a landing zone once and reports its tables, versions, changes and problems (see the
    module's doc for the keys). ``options`` are the reader's (``framing``, ``table``, ...);
    ``log`` receives a line as each step starts."""
    named = {_option_name(name): value for name, value in options.items()}
    if any(name.lower() in _RESERVED for name in named):
        raise TypeError("inspect chooses `schemaTopic`, `messages`, `layout`, `mode` and `expandMasks` itself; "
                        "pass the schema topic as schema_topic=")
    paths = _path_list(path)
    schema_paths = None if schema_topic is None else _path_list(schema_topic)
    log(f"files of {', '.join(paths + (schema_paths or []))}")
    files = _file_totals(spark, [(p, "data") for p in paths] + [(p, "schema") for p in schema_paths or []])
    log(f"metadata of {', '.join(schema_paths or paths)}")
    versions, schema_malformed = _versions(spark, schema_paths or paths, schema_paths is not None, named)
    tables = {name: {"table": name, "versions": _with_changes(entries), **_no_changes()}
              for name, entries in sorted(versions.items())}
    malformed: dict[str, int] = {}
    if tables:
        log(f"data messages of {', '.join(paths)}")
        changes = read(spark, paths, schema_topic=schema_paths, layout="generic", mode="PERMISSIVE",
                       expand_masks=False, **named)
        stats, malformed = _change_stats(spark, changes, versions)
        for name, table_stats in stats.items():
            tables[name].update(table_stats)
    return {"paths": paths, "schema_topic": schema_paths, "files": files, "tables": list(tables.values()),
            "malformed": malformed, "schema_topic_malformed": schema_malformed}


def _file_totals(spark: SparkSession, paths: list[tuple[str, str]]) -> list[dict]:
    """Files and bytes below each (path, role), in one job; like the connector, ``binaryFile``
    skips ``_`` and ``.`` names."""
    listed = reduce(lambda one, other: one.unionByName(other), [
        spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(path)
        .select(F.lit(index).alias("index"), "length") for index, (path, _) in enumerate(paths)])
    totals = {row["index"]: row for row in listed.groupBy("index")
              .agg(F.count(F.lit(1)).alias("files"), F.sum("length").alias("bytes")).collect()}
    return [{"path": path, "role": role, "files": totals[i]["files"] if i in totals else 0,
             "bytes": totals[i]["bytes"] if i in totals else 0} for i, (path, role) in enumerate(paths)]


def _versions(spark: SparkSession, paths: list[str], schema_topic: bool,
              options: dict) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """{table: [version entries]} from the metadata view, and its malformed messages by reason
    (reported for a schema topic only: in data paths the data read counts them)."""
    if schema_topic:
        # `framing` describes the data paths; the schema topic's framing is always detected.
        options = {name: value for name, value in options.items() if name.lower() != "framing"}
    view = read(spark, paths, messages="metadata", mode="PERMISSIVE", **options)
    rows = (view.where("schema_id IS NOT NULL")
            .select("schema_name", "table_name", "table_version", "schema_id", "columns").distinct().collect())
    versions: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r.table_version, r.schema_id)):
        versions.setdefault(f"{row.schema_name}.{row.table_name}", []).append(
            {"version": row.table_version, "schema_id": row.schema_id,
             "types": {c.name: _source_type(c) for c in sorted(row.columns, key=lambda c: c.ordinal)}})
    return versions, _malformed(view) if schema_topic else {}


def _source_type(column) -> str:
    """Replicate's type as DDL spells it; other types' lengths and precisions are their natural ones."""
    if column.type == "NUMERIC":
        return f"NUMERIC({column.precision},{column.scale})"
    return f"{column.type}({column.length})" if column.type in _SIZED_TYPES else column.type


def _with_changes(entries: list[dict]) -> list[dict]:
    """Each version with what changed since the one before it (the first adds nothing)."""
    result, previous = [], None
    for entry in entries:
        types = entry["types"]
        before = types if previous is None else previous
        result.append({"version": entry["version"], "schema_id": entry["schema_id"], "columns": len(types),
                       "added": [c for c in types if c not in before],
                       "dropped": [c for c in before if c not in types],
                       "retyped": [{"column": c, "from": before[c], "to": t}
                                   for c, t in types.items() if c in before and before[c] != t]})
        previous = types
    return result


def _no_changes() -> dict:
    return {"rows": 0, "operations": {}, "first_timestamp": None, "last_timestamp": None,
            "first_change_seq": None, "last_change_seq": None, "mask_bits_ignored": 0}


def _malformed(df: DataFrame) -> dict[str, int]:
    rows = df.where("_corrupt_record IS NOT NULL").groupBy("_corrupt_record.reason").count().collect()
    return {row["reason"]: row["count"] for row in sorted(rows, key=lambda r: r["reason"])}


def _mask_bits(mask: Column) -> Column:
    """The position of the highest set bit of a big-endian mask, plus one (0 for no bit or null):
    a bit past the last column is set exactly when this exceeds the version's column count."""
    digits = F.ltrim(F.hex(mask), F.lit("0"))
    first = F.conv(F.substring(digits, 1, 1), 16, 10).cast("int")
    unused_in_first = F.when(first >= 8, 0).when(first >= 4, 1).when(first >= 2, 2).otherwise(3)
    return F.when(F.coalesce(F.length(digits), F.lit(0)) == 0, 0).otherwise(F.length(digits) * 4 - unused_in_first)


def _change_stats(spark: SparkSession, changes: DataFrame,
                  versions: dict[str, list[dict]]) -> tuple[dict[str, dict], dict[str, int]]:
    """Per table: rows per operation, first and last change, and messages with mask bits past
    the last column of their version; and the malformed messages by reason. One aggregation over
    the data read: corrupt records (null headers) group by their reason alone."""
    widths = spark.createDataFrame(
        [(name.split(".", 1)[0], name.split(".", 1)[1], v["version"], len(v["types"]))
         for name, entries in versions.items() for v in entries],
        "header__schema_name string, header__table_name string, header__table_version long, width int")
    table = ["header__schema_name", "header__table_name"]
    masks_past = F.greatest(_mask_bits(F.col("header__change_mask")),
                            _mask_bits(F.col("header__column_mask"))) > F.col("width")
    stats = (changes.join(F.broadcast(widths), table + ["header__table_version"], "left")
             .groupBy(*table, "header__operation", F.col("_corrupt_record.reason").alias("reason"))
             .agg(F.count(F.lit(1)).alias("rows"),
                  F.min(F.unix_micros("header__timestamp")).alias("first_timestamp"),
                  F.max(F.unix_micros("header__timestamp")).alias("last_timestamp"),
                  F.min("header__change_seq").alias("first_change_seq"),
                  F.max("header__change_seq").alias("last_change_seq"),
                  F.count(F.when(masks_past, True)).alias("mask_bits_ignored"))
             .collect())
    result: dict[str, dict] = {}
    malformed: dict[str, int] = {}
    for row in sorted(stats, key=lambda r: r.reason or ""):
        if row.reason is not None:
            malformed[row.reason] = malformed.get(row.reason, 0) + row.rows
            continue
        name = f"{row.header__schema_name}.{row.header__table_name}"
        table_stats = result.setdefault(name, _no_changes())
        table_stats["rows"] += row.rows
        table_stats["mask_bits_ignored"] += row.mask_bits_ignored
        table_stats["operations"][row.header__operation] = row.rows
        for key, pick in (("first_timestamp", min), ("last_timestamp", max),
                          ("first_change_seq", min), ("last_change_seq", max)):
            table_stats[key] = _pick(pick, table_stats[key], row[key])
    for table_stats in result.values():
        table_stats["operations"] = dict(sorted(table_stats["operations"].items(), key=lambda op: _op_order(op[0])))
        for key in ("first_timestamp", "last_timestamp"):
            if table_stats[key] is not None:
                table_stats[key] = f"{_EPOCH + timedelta(microseconds=table_stats[key]):%Y-%m-%dT%H:%M:%S.%fZ}"
    return result, malformed


def _pick(choose, current, new):
    return new if current is None else current if new is None else choose(current, new)


def _op_order(operation: str) -> int:
    return OPERATIONS.index(operation) if operation in OPERATIONS else len(OPERATIONS)


def render(report: dict) -> str:
    """The report as aligned plain text, one section per question a newcomer asks."""
    sections = [
        ("Files", ["path", "role", "files", "bytes"],
         [[f["path"], f["role"], f["files"], f["bytes"]] for f in report["files"]]),
        ("Tables and versions", ["table", "version", "schema id", "columns", "changes since the previous version"],
         [[t["table"] if i == 0 else "", v["version"], v["schema_id"], v["columns"], _describe_changes(v)]
          for t in report["tables"] for i, v in enumerate(t["versions"])]),
        ("Rows per operation", ["table", *OPERATIONS, "total", "mask bits ignored"],
         [[t["table"], *(t["operations"].get(op, 0) for op in OPERATIONS), t["rows"], t["mask_bits_ignored"]]
          for t in report["tables"]]),
        ("First and last change", ["table", "first timestamp", "last timestamp", "first change seq",
                                   "last change seq"],
         [[t["table"], *(t[key] or "-" for key in ("first_timestamp", "last_timestamp", "first_change_seq",
                                                   "last_change_seq"))] for t in report["tables"]]),
        ("Malformed messages", ["where", "reason", "messages"],
         [[where, reason, n] for where, key in (("data", "malformed"), ("schema topic", "schema_topic_malformed"))
          for reason, n in report[key].items()]),
    ]
    out = []
    for title, headers, rows in sections:
        out.append(title)
        out.extend("  " + line for line in (_aligned(headers, rows) if rows else ["none"]))
        out.append("")
    if not report["tables"]:
        out.append(f"No metadata (MD) message was found in {', '.join(report['schema_topic'] or report['paths'])}: "
                   "pass --schema-topic with the landed topic that holds Replicate's metadata messages.")
    return "\n".join(out).rstrip() + "\n"


def _describe_changes(version: dict) -> str:
    parts = [f"added {', '.join(version['added'])}" if version["added"] else "",
             f"dropped {', '.join(version['dropped'])}" if version["dropped"] else "",
             "retyped " + ", ".join(f"{r['column']} {r['from']} -> {r['to']}" for r in version["retyped"])
             if version["retyped"] else ""]
    return "; ".join(part for part in parts if part)


def _aligned(headers: list[str], rows: list[list]) -> list[str]:
    """Columns padded to their widest cell; counts to the right (with thousands separators), text
    to the left."""
    right = [all(isinstance(row[i], int) or row[i] == "" for row in rows) for i in range(len(headers))]
    cells = [headers] + [[f"{value:,}" if isinstance(value, int) else str(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right)).rstrip()
            for row in cells]
