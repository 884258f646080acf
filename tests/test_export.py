"""``spark_replicate.read_tables`` and the ``spark-replicate export`` command on a landing zone
of five tables (one with three versions), landed one message per file so that files can be held
back and "land" later."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import spark_replicate
from conftest import assert_same_rows, collect_plain, evolving_tables, expected_rows, run_python
from spark_replicate.export import ExportError, _Manifest, export
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
    return spark.read.option("mergeSchema", "true").parquet(str(output / table)).select(*columns)


def assert_exports_equal_full_reads(spark, root: Path, output: Path) -> None:
    """Every table's Parquet holds exactly the connector's flat read of the whole zone."""
    assert sorted(p.name for p in output.iterdir() if not p.name.startswith("_")) == TABLES
    for table in TABLES:
        full = spark_replicate.read(spark, str(root), schema_topic=str(root / "_schema"), table=table)
        assert_same_rows(collect_plain(exported(spark, output, table, full.columns)), collect_plain(full))


def manifest_files(output: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (output / "_spark_replicate").iterdir()}


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
    output = tmp_path / "out"
    first = export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    assert [(b.batch, b.redone) for b in first] == [(1, False)] and sorted(first[0].rows) == TABLES
    assert_exports_equal_full_reads(spark, zone, output)
    before = sorted(str(p.relative_to(output)) for p in output.rglob("*"))
    manifest = manifest_files(output)
    assert export(spark, str(zone), str(output), schema_topic=str(zone / "_schema")) == []
    assert sorted(str(p.relative_to(output)) for p in output.rglob("*")) == before
    assert manifest_files(output) == manifest
    assert_exports_equal_full_reads(spark, zone, output)


def test_new_files_are_appended_once_with_metadata_from_all_input(spark, zone, tmp_path):
    """No schema topic: the metadata of the later files' tables was landed with the first files."""
    output, later = tmp_path / "out", tmp_path / "later"
    places = hold_back(zone, later)
    first = export(spark, str(zone), str(output))
    land(later, places)
    second = export(spark, str(zone), str(output))
    assert [b.batch for b in second] == [2] and second[0].files == len(places)
    # Batch 2 holds exactly the rows of the files that landed later.
    for table in TABLES:
        new_rows = spark_replicate.read(spark, [str(p) for p in places], schema_topic=str(zone / "_schema"),
                                        table=table)
        batch = exported(spark, output, table, new_rows.columns + ["export_batch"])
        assert_same_rows(collect_plain(batch.where("export_batch = 2").drop("export_batch")), collect_plain(new_rows))
        assert first[0].rows[table] + second[0].rows[table] == batch.count()
    assert_exports_equal_full_reads(spark, zone, output)
    assert export(spark, str(zone), str(output)) == []


def test_an_interrupted_batch_is_written_again_with_exactly_its_files(spark, zone, tmp_path):
    output, later = tmp_path / "out", tmp_path / "later"
    places = hold_back(zone, later)
    export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    # A run begins batch 2 with the landed files, writes part of one table's rows, and dies.
    land(later, places[:len(places) // 2])
    manifest = _Manifest(spark, str(output))
    landed = {str(p) for p in places[:len(places) // 2]}
    pending = [f for f in manifest.list_input([str(zone)]) if f.path.removeprefix("file:") in landed]
    manifest.begin(2, pending)
    partial = spark_replicate.read(spark, [f.path for f in pending], schema_topic=str(zone / "_schema"),
                                   table="SALES.ORDERS")
    partial.limit(3).write.parquet(manifest.table_dir("SALES.ORDERS", 2))
    # More files land before the rerun: they make batch 3, not part of the interrupted batch 2.
    land(later, places[len(places) // 2:])
    results = export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    assert [(b.batch, b.files, b.redone) for b in results] == [
        (2, len(pending), True), (3, len(places) - len(pending), False)]
    assert_exports_equal_full_reads(spark, zone, output)


def test_an_exported_file_that_changed_is_an_error_naming_it(spark, zone, tmp_path):
    output = tmp_path / "out"
    export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))
    changed = sorted((zone / "crm").iterdir())[0]
    changed.write_bytes(changed.read_bytes() + b"\x00")
    with pytest.raises(ExportError, match=changed.name):
        export(spark, str(zone), str(output), schema_topic=str(zone / "_schema"))


def test_the_export_command(zone, tmp_path):
    """The installed command in a fresh process, run twice: the second run writes nothing."""
    output = tmp_path / "out"
    result = run_python(f"""
        from spark_replicate.cli import main
        args = [{str(zone)!r}, "--output", {str(output)!r}, "--schema-topic", {str(zone / "_schema")!r},
                "--mode", "dropmalformed", "--master", "local[2]"]
        assert main(["export"] + args) == 0
        print("SECOND RUN")
        assert main(["export"] + args) == 0
        """, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    first, second = result.stdout.split("SECOND RUN")
    assert "batch 1:" in first and all(f"  {t}: " in first for t in TABLES)
    assert "nothing written" in second and "batch" not in second
    # Progress goes to stderr, one line per table of the batch; stdout keeps only the results.
    assert all(f"spark-replicate export: batch 1 (" in line for line in result.stderr.splitlines() if "writing" in line)
    assert all(f"writing {t} (" in result.stderr for t in TABLES) and "spark-replicate export:" not in result.stdout
    done = json.loads((output / "_spark_replicate" / "batch-000001.done.json").read_text())
    assert sorted(done["rows"]) == TABLES and sum(done["rows"].values()) == sum(
        int(line.rsplit(": ", 1)[1].split()[0]) for line in first.splitlines() if line.startswith("  "))
