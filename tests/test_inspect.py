"""``spark_replicate.inspect`` and ``spark-replicate inspect`` (README "Inspect").

Every expectation comes from what the generator wrote (its record of the messages, the files it
landed, the table definitions), or from the bad messages the test appends itself, never from the
reader."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import fastavro
import pytest

import spark_replicate
from _cluster import short_jvm_env
from spark_replicate.generate import (AlterColumn, ColumnDef as C, DropColumn, TableDef, data_schema, default_tables,
                                      encode_envelope, generate_landing_zone)
from spark_replicate.inspection import _mask_bits, render

EVOLVING = TableDef("INV", "ITEMS", "inventory", (
    C("ITEM_ID", "INT8", pk_position=1),
    C("SKU", "STRING", 20, nullable=False),
    C("QTY", "INT4"),
    C("PRICE", "NUMERIC", 0, 9, 2),
    C("WEIGHT", "REAL4"),
), added_columns=(C("COLOR", "WSTRING", 30),),
    changes=(DropColumn("WEIGHT"), AlterColumn(C("QTY", "INT8")), AlterColumn(C("PRICE", "NUMERIC", 0, 12, 2))))
EMPLOYEES = default_tables()[0]

#: What each version of INV.ITEMS changed, as the table definition above says.
EXPECTED_VERSIONS = [
    (1, 5, [], [], []),
    (2, 6, ["COLOR"], [], []),
    (3, 5, [], ["WEIGHT"], []),
    (4, 5, [], [], [{"column": "QTY", "from": "INT4", "to": "INT8"}]),
    (5, 5, [], [], [{"column": "PRICE", "from": "NUMERIC(9,2)", "to": "NUMERIC(12,2)"}]),
]


def frame(message: bytes) -> bytes:
    return struct.pack(">i", len(message)) + message


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    """Two topics with metadata in the schema topic and in the data topics; the inventory file ends
    with two malformed messages: one that is not an envelope, one of an unknown schema id."""
    zone = generate_landing_zone(tmp_path_factory.mktemp("inspect") / "landing", messages=600, seed=2020,
                                 framing="length-prefixed", tables=[EVOLVING, EMPLOYEES], files_per_topic=2,
                                 md_in_data_topics=True)
    victim = sorted(zone.topics["inventory"].glob("*"))[0]
    with victim.open("ab") as out:
        out.write(frame(b"not a Replicate message"))
        out.write(frame(encode_envelope("DT", b"\x00", schema_id="0" * 32)))
    return zone


def landed_files(path: Path) -> list[Path]:
    """The files the reader lists: walked recursively, ``_`` and ``.`` names skipped."""
    return [p for p in path.rglob("*") if p.is_file()
            and not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts)]


def utc_text(header: str) -> str:
    return datetime.strptime(header, "%Y-%m-%d %H:%M:%S.%f").strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def expected_changes(zone, table: str) -> dict:
    messages = zone.messages_for(table)
    stamps = [m.headers["timestamp"] for m in messages if m.headers["timestamp"]]
    seqs = [m.headers["changeSequence"] for m in messages if m.headers["changeSequence"]]
    return {"rows": len(messages), "operations": zone.expected_counts()[table],
            "first_timestamp": utc_text(min(stamps)), "last_timestamp": utc_text(max(stamps)),
            "first_change_seq": min(seqs), "last_change_seq": max(seqs), "mask_bits_ignored": 0}


@pytest.fixture(scope="module")
def report(spark, zone):
    return spark_replicate.inspect(spark, [str(zone.root / "inventory"), str(zone.root / "hr")],
                                   schema_topic=str(zone.schema_topic), framing="length-prefixed")


def test_versions_and_what_changed_between_them(report, zone):
    items = next(t for t in report["tables"] if t["table"] == "INV.ITEMS")
    ids = {entry.version: entry.schema_id for entry in zone.metadata if entry.table == "INV.ITEMS"}
    assert items["versions"] == [
        {"version": v, "schema_id": ids[v], "columns": n, "added": added, "dropped": dropped, "retyped": retyped}
        for v, n, added, dropped, retyped in EXPECTED_VERSIONS]
    assert [t["table"] for t in report["tables"]] == ["HR.EMPLOYEES", "INV.ITEMS"]


@pytest.mark.smoke
def test_rows_per_operation_and_first_and_last_change(report, zone):
    for table in report["tables"]:
        assert {k: table[k] for k in expected_changes(zone, table["table"])} == \
            expected_changes(zone, table["table"]), table["table"]


def test_malformed_by_reason_and_files(report, zone):
    assert report["malformed"] == {"REPLICATE_BAD_MAGIC": 1, "REPLICATE_UNKNOWN_SCHEMA_ID": 1}
    assert report["schema_topic_malformed"] == {}
    expected = [{"path": str(path), "role": role, "files": len(landed_files(path)),
                 "bytes": sum(p.stat().st_size for p in landed_files(path))}
                for path, role in ((zone.root / "inventory", "data"), (zone.root / "hr", "data"),
                                   (zone.schema_topic, "schema"))]
    assert report["files"] == expected


def test_metadata_from_the_data_topics_gives_the_same_tables(spark, zone, report):
    alone = spark_replicate.inspect(spark, [str(zone.root / "inventory"), str(zone.root / "hr")],
                                    framing="length-prefixed")
    assert alone["schema_topic"] is None and alone["schema_topic_malformed"] == {}
    assert alone["tables"] == report["tables"]
    assert alone["malformed"] == report["malformed"]


def test_the_table_option_keeps_one_table(spark, zone):
    one = spark_replicate.inspect(spark, str(zone.root / "hr"), schema_topic=str(zone.schema_topic),
                                  table="HR.EMPLOYEES")
    assert [t["table"] for t in one["tables"]] == ["HR.EMPLOYEES"]
    assert one["tables"][0]["rows"] == len(zone.messages_for("HR.EMPLOYEES"))


def test_no_metadata_is_reported_not_raised(spark, tmp_path):
    zone = generate_landing_zone(tmp_path / "landing", messages=40, seed=21, tables=[EMPLOYEES], files_per_topic=1)
    bare = spark_replicate.inspect(spark, str(zone.topics["hr"]))
    assert bare["tables"] == [] and bare["malformed"] == {}
    assert bare["files"][0]["files"] == 1
    assert "No metadata (MD) message was found" in render(bare)


@pytest.mark.parametrize("mask,bits", [
    (None, 0), ("", 0), ("00", 0), ("000002", 2), ("008080", 16), ("05", 3), ("0B", 4),
    ("04000000", 27), ("2000000000", 38), ("1F903C3000003FFFFFFFFFFFFFFFFF", 117),
])
def test_mask_bits_is_the_highest_set_ordinal(spark, mask, bits):
    df = spark.createDataFrame([(None if mask is None else bytes.fromhex(mask),)], "mask binary")
    assert df.select(_mask_bits(df["mask"]).alias("bits")).first()["bits"] == bits


def test_the_text_report_is_aligned(report):
    lines = render(report).splitlines()
    table = lines.index("Rows per operation")
    header, *rows = lines[table + 1:table + 4]
    assert header.split() == ["table", "REFRESH", "INSERT", "UPDATE", "DELETE", "total", "mask", "bits", "ignored"]
    assert len({len(row) for row in rows}) == 1 and all(row.startswith("  ") for row in rows)
    versions = lines[lines.index("Tables and versions") + 3:][:5]
    assert versions[0].startswith("  INV.ITEMS ") and all(line.startswith("   " + " " * 9) for line in versions[1:])
    assert "retyped QTY INT4 -> INT8" in render(report)


def test_mask_bits_past_the_last_column_are_counted(spark, tmp_path):
    zone = generate_landing_zone(tmp_path / "landing", messages=40, seed=22, framing="length-prefixed",
                                 tables=[EMPLOYEES], files_per_topic=1)
    update = next(m for m in zone.messages if m.operation == "UPDATE")
    columns = EMPLOYEES.version_columns(update.table_version)
    schema = fastavro.parse_schema(data_schema(columns))
    payload = io.BytesIO()
    # The bit of ordinal 12 on a 10-column table, beside a real change of ordinal 2.
    fastavro.schemaless_writer(payload, schema, {"data": update.data, "beforeData": update.before, "headers": {
        **update.headers, "changeMask": bytes.fromhex("0802"), "columnMask": bytes.fromhex("03FF")}})
    (data_file,) = landed_files(zone.topics["hr"])
    with data_file.open("ab") as out:
        out.write(frame(encode_envelope("DT", payload.getvalue(), schema_id=update.schema_id)))
    report = spark_replicate.inspect(spark, str(zone.topics["hr"]), schema_topic=str(zone.schema_topic))
    (table,) = report["tables"]
    assert report["malformed"] == {}
    assert table["mask_bits_ignored"] == 1
    assert table["rows"] == len(zone.messages) + 1


def test_cli_prints_json_on_stdout_and_progress_on_stderr(zone):
    done = subprocess.run([sys.executable, "-m", "spark_replicate.cli", "inspect", str(zone.root / "hr"),
                           "--schema-topic", str(zone.schema_topic), "--json", "--master", "local[1]",
                           "--option", "framing=length-prefixed", "--option", "table=HR.EMPLOYEES"],
                          capture_output=True, text=True, timeout=300, env=short_jvm_env())
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [t["table"] for t in report["tables"]] == ["HR.EMPLOYEES"]
    assert report["tables"][0]["operations"] == zone.expected_counts()["HR.EMPLOYEES"]
    assert "spark-replicate inspect: data messages of" in done.stderr
