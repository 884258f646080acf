"""``spark_replicate.read_tables`` and the ``spark-replicate export`` command (one streaming query
per table, README "Every table") on a landing zone of five tables (one with three versions),
landed one message per file so that files can be held back and "land" later."""

from __future__ import annotations

import functools
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import spark_replicate
from _cluster import python_group
from _streams import Landing, checkpoint_batches, kill_when
from conftest import (LogWatch, assert_same_rows, collect_plain, error_text, evolving_tables, expected_rows,
                      run_python)
from spark_replicate.export import ExportError, export
from spark_replicate.generate import ColumnDef, TableDef, default_tables, generate_landing_zone

HELD_BACK_FROM = 12  # messages at this offset and later (per partition file) land later


def five_tables() -> list[TableDef]:
    C = ColumnDef
    customers = TableDef("CRM", "CUSTOMERS", "crm", (
        C("CUSTOMER_ID", "INT4", pk_position=1),
        C("NAME", "WSTRING", 60, nullable=False),
        C("SINCE", "DATE"),
        C("CREDIT", "NUMERIC", 0, 12, 2),
    ))
    return default_tables() + evolving_tables() + [customers]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The zone as generated; tests work on copies. Metadata is also in the data topics."""
    return generate_landing_zone(tmp_path_factory.mktemp("export-zone") / "landing", framing="message",
                                 tables=five_tables(), md_in_data_topics=True, messages=200, seed=11)


@pytest.fixture
def zone(pristine, tmp_path):
    root = tmp_path / "landing"
    shutil.copytree(pristine.root, root)
    return root


TABLES = sorted(t.name for t in five_tables())


def offset_of(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def hold_back(root: Path, later: Path) -> list[Path]:
    """Moves the data files at HELD_BACK_FROM and later out of the zone; returns their places."""
    moved = []
    for path in sorted(p for topic in root.iterdir() if topic.is_dir() and not topic.name.startswith("_")
                       for p in topic.iterdir()):
        if offset_of(path) >= HELD_BACK_FROM:
            target = later / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
            moved.append(path)
    return moved


def land(later: Path, places: list[Path]) -> None:
    for place in places:
        (later / place.parent.name / place.name).rename(place)


def exported(spark, output: Path, table: str, columns: list[str]):
    """A table's export as documented: its folder read with mergeSchema (older files lack later columns)."""
    return spark.read.option("mergeSchema", "true").parquet(str(output / table)).select(*columns)


def assert_exports_equal_full_reads(spark, root: Path, output: Path, schema_topic: Path) -> None:
    """Every table's Parquet holds exactly the connector's flat read of the whole zone, each row once."""
    assert sorted(p.name for p in output.iterdir() if not p.name.startswith("_")) == TABLES
    for table in TABLES:
        full = spark_replicate.read(spark, str(root), schema_topic=str(schema_topic), table=table)
        assert_same_rows(collect_plain(exported(spark, output, table, full.columns)), collect_plain(full))


def parquet_files(output: Path) -> set[str]:
    return {str(p.relative_to(output)) for p in output.rglob("*.parquet")}


def data_files(root: Path) -> int:
    return sum(1 for topic in root.iterdir() if not topic.name.startswith("_") and topic.is_dir()
               for _ in topic.iterdir())


def test_read_tables_returns_every_table_typed_with_snake_case_options(spark, pristine):
    tables = spark_replicate.read_tables(spark, str(pristine.root), schema_topic=str(pristine.schema_topic),
                                         expand_masks=False)
    assert sorted(tables) == TABLES
    for name, df in tables.items():
        assert "header__changed_columns" not in df.columns
        assert_same_rows(collect_plain(df), expected_rows(pristine, name, expand_masks=False))
    # Without a schema topic: the metadata messages of the data topics list the tables.
    assert sorted(spark_replicate.read_tables(spark, str(pristine.root))) == TABLES
    with pytest.raises(TypeError, match="`table`"):
        spark_replicate.read_tables(spark, str(pristine.root), table="HR.EMPLOYEES")
    with pytest.raises(ValueError, match="no metadata"):
        spark_replicate.read_tables(spark, str(pristine.topics["hr"] / "part-00001-0000000000.msg"))


def test_a_rerun_without_new_files_writes_nothing(spark, zone, tmp_path):
    output, lines = tmp_path / "out", []
    first = export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"), log=lines.append)
    assert [r.table for r in first] == TABLES and all(r.files == data_files(zone) for r in first)
    assert_exports_equal_full_reads(spark, zone, output, zone / "_schema")
    assert lines == [f"{r.table}: {r.rows} row(s) written from {r.files} new input file(s)" for r in first]
    before = parquet_files(output)
    second = export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"), log=lines.append)
    assert all(r.files == r.rows == 0 for r in second) and lines[-1].endswith("nothing written")
    assert parquet_files(output) == before


def test_new_files_are_exported_once_with_metadata_from_the_input(spark, zone, tmp_path):
    """No schema topic: each table's stream finds the metadata among the data files."""
    output, later = tmp_path / "out", tmp_path / "later"
    places = hold_back(zone, later)
    first = export(spark, str(zone), str(output))
    land(later, places)
    second = export(spark, str(zone), str(output))
    assert all(r.files == len(places) for r in second)
    for before, after in zip(first, second):
        assert before.rows + after.rows == spark.read.parquet(str(output / before.table)).count()
    assert_exports_equal_full_reads(spark, zone, output, zone / "_schema")
    assert all(r.files == 0 for r in export(spark, str(zone), str(output)))


def test_an_exported_file_that_changed_is_an_error_naming_it(spark, zone, tmp_path):
    output = tmp_path / "out"
    export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    changed = sorted((zone / "crm").iterdir())[0]
    changed.write_bytes(changed.read_bytes() + b"\x00")
    with pytest.raises(ExportError, match="REPLICATE_FILE_CHANGED") as failure:
        export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    assert changed.name in error_text(failure.value)


EXPORT = """
    import sys
    from spark_replicate.cli import main
    sys.exit(main(["export", *{args!r}, "--master", "local[2]"]))
"""


def export_process(args: list[str], log: Path) -> subprocess.Popen:
    """The installed command in a process group of its own, so that SIGKILL takes its JVM with it."""
    with open(log, "wb") as out:
        return python_group(EXPORT.format(args=args), stdout=out, stderr=subprocess.STDOUT)


def batch_in_flight(checkpoints: Path) -> bool:
    """Some table's query has planned a batch (in its offset log) and not committed it."""
    return any(checkpoint_batches(c, "offsets") - checkpoint_batches(c, "commits") for c in checkpoints.glob("*"))


@pytest.mark.slow
def test_an_export_killed_mid_batch_is_redone_exactly_by_the_next_run(spark, zone, tmp_path):
    output = tmp_path / "out"
    args = [str(zone), "--output", str(output), "--schema-topic", str(zone / "_schema"), "--mode", "dropmalformed"]
    killed = export_process(args, tmp_path / "killed.log")
    kill_when(killed, lambda: batch_in_flight(output / "_spark_replicate" / "checkpoints"), tmp_path / "killed.log",
              "the export planned no batch")

    # The installed command, twice in one fresh process: the first run finishes the job, the second has nothing to do.
    result = run_python(f"""
        from spark_replicate.cli import main
        args = {args!r} + ["--master", "local[2]"]
        assert main(["export"] + args) == 0
        print("SECOND RUN")
        assert main(["export"] + args) == 0
        """, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    first, second = result.stdout.split("SECOND RUN")
    assert all(f"{t}: " in first for t in TABLES) and "nothing written" in second
    # Progress goes to stderr, one line per table; stdout keeps only the results.
    assert all(f"spark-replicate export: exporting {t} (" in result.stderr for t in TABLES)
    assert "spark-replicate export:" not in result.stdout
    assert_exports_equal_full_reads(spark, zone, output, zone / "_schema")


@pytest.fixture
def growing(pristine, tmp_path) -> Landing:
    return Landing(pristine, tmp_path / "landing")


@pytest.mark.slow
def test_continuous_export_picks_up_new_files_and_new_columns_until_stopped(spark, pristine, growing, tmp_path):
    items = pristine.messages_for("INV.ITEMS")
    others = [m for m in pristine.messages if m.table != "INV.ITEMS"]
    growing.land_messages([m for m in items if m.table_version == 1] + others[:40])
    output = tmp_path / "out"
    args = [str(growing.root), "--output", str(output), "--schema-topic", str(growing.schema_topic),
            "--continuous", "--interval", "1"]
    running = export_process(args, tmp_path / "continuous.log")

    def wait_for(counts: dict[str, int]) -> None:
        """Until each table's sink has committed files holding its count of rows. A sink is read
        once its log has a commit (before that, parquet files may be there, but none is part of
        the output), and again only after another."""
        watch = LogWatch("[0-9]*")

        def exported(table: str) -> bool:
            return spark.read.parquet(str(output / table)).count() == counts[table]
        deadline = time.monotonic() + 150
        while not all([watch.holds(output / t / "_spark_metadata", functools.partial(exported, t))
                       for t in counts]):
            assert running.poll() is None, (tmp_path / "continuous.log").read_text()[-4000:]
            assert time.monotonic() < deadline, (tmp_path / "continuous.log").read_text()[-4000:]
            time.sleep(1)
    try:
        wait_for({"INV.ITEMS": sum(1 for m in items if m.table_version == 1)})
        # Versions 2 and 3 of INV.ITEMS add columns: its query stops and is started again with them.
        growing.land_messages([m for m in items if m.table_version > 1] + others[40:])
        wait_for({t: len(pristine.messages_for(t)) for t in TABLES})
    finally:
        running.send_signal(signal.SIGTERM)  # to the command alone: it stops its queries and exits
        code = running.wait(timeout=60)
    log = (tmp_path / "continuous.log").read_text()
    assert code == 0, log[-4000:]
    assert re.search(r"INV\.ITEMS: \d+ row\(s\) written from \d+ new input file\(s\) \(restarted [12] time", log), log
    assert_exports_equal_full_reads(spark, growing.root, output, growing.schema_topic)
    assert {"COLOR", "RATING"} <= set(exported(spark, output, "INV.ITEMS", ["*"]).columns)
