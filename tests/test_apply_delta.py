"""``apply_changes`` into real Delta Lake tables (README "Applying changes") against the truth of
the generator's simulated source database (``LandingZone.final_state`` and ``history``), never
derived from the reader: in one batch, in three, from shuffled files some delivered twice, with
partial column masks and key-changing UPDATEs, after a SIGKILL while a batch writes, as a stream
stopped and restarted, and into a target with deletion vectors. The Scala twin
(``io.sparkreplicate.cdc.Changes.applyChanges``) meets the same truth through the JVM.
"""

from __future__ import annotations

import ast
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, functions as F
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructField, StructType

import spark_replicate
from _cluster import dies_with_parent
from conftest import (DELTA, TESTS_DIR, assert_same_rows, collect_plain, evolving_tables, read_table, run_python,
                      small_session_env, source_row, spark_conf, table_def)
from spark_replicate._delta import DELTA_PACKAGES, delta_package
from spark_replicate._jar import ReplicateSetupError
from spark_replicate.apply import (APP_ID_PREFIX, APP_ID_PROPERTY, MERGE_MATERIALIZE_SOURCE, TXN_APP_ID, TXN_VERSION,
                                   ApplyResult, _State, _apply_batch, _path_name)
from spark_replicate.cdc import KEY_POSITION, table_layout
from spark_replicate.generate import default_tables, generate_landing_zone, mask_ordinals
from spark_replicate.session import session_setting

TABLES = ["HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS"]
needs_delta = pytest.mark.skipif(not DELTA, reason="no Delta Lake release serves this Spark minor")


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    """Partial column masks and key-changing UPDATEs, three partition files per topic."""
    return generate_landing_zone(tmp_path_factory.mktemp("apply") / "landing", messages=600, seed=311,
                                 files_per_topic=3, key_changes=0.2, partial_masks=0.4)


def truth(zone, table: str) -> list[dict]:
    return [source_row(zone, table, row) for row in zone.final_state(table).values()]


def history_truth(zone, table: str) -> list[dict]:
    return [{**source_row(zone, table, v.row), "__START_AT": v.start_at, "__END_AT": v.end_at}
            for versions in zone.history(table).values() for v in versions]


def delta_rows(spark, target) -> list[dict]:
    return collect_plain(spark.read.format("delta").load(str(target)))


def apply(implementation: str, changes: DataFrame, target, scd_type: int = 1) -> ApplyResult:
    """``spark_replicate.apply_changes``, or its Scala twin called through the JVM."""
    if implementation == "python":
        return spark_replicate.apply_changes(changes, str(target), scd_type=scd_type)
    scala = changes.sparkSession._jvm.io.sparkreplicate.cdc.Changes
    no_keys = getattr(scala, "applyChanges$default$3")()
    result = scala.applyChanges(changes._jdf, str(target), no_keys, scd_type)
    return ApplyResult(result.batch(), result.inserted(), result.updated(), result.deleted(), result.ignored())


def in_commit_order(changes: DataFrame, batches: int) -> list[DataFrame]:
    """The changes cut into ``batches`` by change sequence, as files landed over time would
    bring them; the full load (no change sequence) comes with the first."""
    sequences = sorted(r[0] for r in changes.select("header__change_seq").where("header__change_seq IS NOT NULL")
                       .distinct().collect())
    cuts = [sequences[len(sequences) * i // batches] for i in range(1, batches)]
    position = F.coalesce(F.col("header__change_seq"), F.lit(""))

    def between(low: str | None, high: str | None) -> DataFrame:
        return changes.where(((position >= low) if low else F.lit(True)) & ((position < high) if high else F.lit(True)))

    return [between(low, high) for low, high in zip([None, *cuts], [*cuts, None])]


@needs_delta
@pytest.mark.parametrize("implementation,table", [  # (every table in Python: the apply_topic test)
    pytest.param("python", "HR.DEPARTMENTS", marks=pytest.mark.smoke), ("scala", "SALES.ORDERS")])
def test_one_batch_equals_the_source_table_and_again_leaves_it_as_it_is(spark, zone, tmp_path, implementation, table):
    changes, target = read_table(spark, zone, table), tmp_path / "target"
    result = apply(implementation, changes, target)
    assert_same_rows(delta_rows(spark, target), truth(zone, table))
    # Made by the first load's write, from the staged files: the table's columns in the changes' types.
    assert column_types(spark.read.format("delta").load(str(target))) == table_column_types(changes)
    assert (result.batch, result.inserted, result.updated, result.deleted, result.ignored) == (
        1, len(zone.final_state(table)), 0, 0, 0)
    version = delta_version(spark, target)
    # Both languages tag a batch's writes alike, so either may finish a batch the other staged.
    app_id = log_properties(spark, target)[APP_ID_PROPERTY]
    assert app_id.startswith(APP_ID_PREFIX)
    assert tagged_writes(target) == tagged_writes(target / "_spark_replicate" / "keys") == [(app_id, 1)]
    again = apply(implementation, changes, target)
    assert (again.batch, again.inserted, again.updated, again.deleted, again.ignored) == (2, 0, 0, 0, changes.count())
    assert delta_version(spark, target) == version  # nothing staged, nothing merged: no commit
    # The batch with nothing new is logged applied alone: there is nothing a crash could leave half done.
    assert logged(spark, target) == [(1, "applied"), (1, "staged"), (2, "applied")]


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_first_batch_with_no_change_makes_the_tables_then_the_next_batch_applies(spark, zone, tmp_path,
                                                                                    implementation):
    """The target and the keys are made by their first batch's write: one that stages nothing makes
    them empty (the table's columns, no row), and is logged staged, as it writes."""
    table, target = "HR.DEPARTMENTS", tmp_path / "target"
    changes = read_table(spark, zone, table)
    empty = apply(implementation, changes.limit(0), target)
    assert (empty.batch, empty.inserted, empty.updated, empty.deleted, empty.ignored) == (1, 0, 0, 0, 0)
    made = spark.read.format("delta").load(str(target))
    assert column_types(made) == table_column_types(changes)
    assert made.count() == 0
    assert spark.read.format("delta").load(str(target / "_spark_replicate" / "keys")).count() == 0
    assert logged(spark, target) == [(1, "applied"), (1, "staged")]
    result = apply(implementation, changes, target)
    assert (result.batch, result.inserted) == (2, len(zone.final_state(table)))
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


def column_types(df: DataFrame) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def table_column_types(changes: DataFrame) -> list[tuple[str, str]]:
    """The table's own columns of the changes (no header), in their types."""
    return column_types(changes.select(*table_layout(changes, None).columns))


def logged(spark, target) -> list[tuple[int, str]]:
    """The batches log's (batch, status) rows, sorted."""
    rows = spark.sql(f"SELECT batch, status FROM {log_table(target)}").collect()
    return sorted((row.batch, row.status) for row in rows)


def log_table(target) -> str:
    """The SQL name of the batches log kept beside ``target``."""
    return _path_name(f"{target}/_spark_replicate/batches")


def log_properties(spark, target) -> dict[str, str]:
    return table_properties(spark, log_table(target))


def table_properties(spark, table: str) -> dict[str, str]:
    """The properties of the table of SQL name ``table``."""
    return {row.key: row.value for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_state_made_before_the_app_id_property_keeps_its_log_tables_delta_id(spark, zone, tmp_path, implementation):
    """A log table without the property (state made before it) tags writes with its Delta id, as
    then, so a batch that such a run left staged is still recognised."""
    table, target = "SALES.ORDERS", tmp_path / "orders"
    first, rest = in_commit_order(read_table(spark, zone, table), 2)
    apply(implementation, first, target)
    log = log_table(target)
    spark.sql(f"ALTER TABLE {log} UNSET TBLPROPERTIES ('{APP_ID_PROPERTY}')")
    assert APP_ID_PROPERTY not in log_properties(spark, target)
    assert apply(implementation, rest, target).batch == 2
    delta_id = APP_ID_PREFIX + spark.sql(f"DESCRIBE DETAIL {log}").first().id
    assert tagged_writes(target)[-1] == tagged_writes(target / "_spark_replicate" / "keys")[-1] == (delta_id, 2)
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


def tagged_writes(table) -> list[tuple[str, int] | None]:
    """Per commit of the Delta table at ``table`` that adds or removes files, the application and
    version it is tagged with (Delta's ``txn`` action; None when untagged), read from the table's
    own log files."""
    writes = []
    for commit in sorted(Path(table, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        if any("add" in a or "remove" in a for a in actions):
            txn = next((a["txn"] for a in actions if "txn" in a), None)
            writes.append(txn and (txn["appId"], txn["version"]))
    return writes


def delta_version(spark, target) -> int:
    return spark.sql(f"DESCRIBE HISTORY {_path_name(str(target))} LIMIT 1").first()["version"]


# Delta's session default for the deletion vectors of tables made from then on (README "Applying changes": Speed).
DELETION_VECTORS_DEFAULT = "spark.databricks.delta.properties.defaults.enableDeletionVectors"


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_target_made_with_deletion_vectors_takes_later_batches_without_copying_rows(spark, zone, tmp_path,
                                                                                      implementation):
    """A target made under the session's default for deletion vectors has them, and a later batch's
    MERGE marks the rows it replaces or deletes instead of copying the rest of their files; reading
    the target's rows for the next batch skips the marked ones, so the table equals the source."""
    table, target = "SALES.ORDERS", tmp_path / "orders"
    first, *later = in_commit_order(read_table(spark, zone, table), 3)
    with session_setting(spark, DELETION_VECTORS_DEFAULT, "true"):
        apply(implementation, first, target)
    for batch in later:
        apply(implementation, batch, target)
    assert_same_rows(delta_rows(spark, target), truth(zone, table))
    name = _path_name(str(target))
    assert table_properties(spark, name).get("delta.enableDeletionVectors") == "true"
    merges = [r.operationMetrics for r in spark.sql(f"DESCRIBE HISTORY {name}").collect() if r.operation == "MERGE"]
    assert len(merges) == len(later)
    assert all(m["numTargetRowsCopied"] == "0" for m in merges)
    assert sum(int(m["numTargetDeletionVectorsAdded"]) for m in merges) > 0


@needs_delta
@pytest.mark.slow
def test_three_batches_in_commit_order_then_all_again(spark, zone, tmp_path):
    table, target = "SALES.ORDERS", tmp_path / "orders"
    changes = read_table(spark, zone, table)
    results = [spark_replicate.apply_changes(batch, str(target)) for batch in in_commit_order(changes, 3)]
    assert [r.batch for r in results] == list(range(1, 4))
    assert sum(r.deleted for r in results) > 0 and sum(r.updated for r in results) > 0
    assert_same_rows(delta_rows(spark, target), truth(zone, table))
    again = spark_replicate.apply_changes(changes, str(target))
    assert (again.inserted, again.updated, again.deleted, again.ignored) == (0, 0, 0, changes.count())
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
def test_merges_take_the_staged_rows_as_they_are_and_the_session_keeps_its_setting(spark, zone, tmp_path,
                                                                                  monkeypatch):
    """Nothing rewrites the staged files while a batch is applied, so its MERGEs run without Delta's
    copy of their source; the session afterwards keeps its setting (Scala's: see ``ChangesSuite``).
    A first load runs no statement: its writes make the target and the keys. Each write is tagged
    with its batch, and the session keeps no tag afterwards."""
    seen = []
    execute = _State._execute

    def noting_the_setting(self, statement: str) -> None:
        seen.append((statement.split()[0], spark.conf.get(MERGE_MATERIALIZE_SOURCE, None),
                     spark.conf.get(TXN_VERSION, None)))
        execute(self, statement)
    monkeypatch.setattr(_State, "_execute", noting_the_setting)
    spark.conf.set(MERGE_MATERIALIZE_SOURCE, "all")
    try:
        for batch in in_commit_order(read_table(spark, zone, "SALES.ORDERS"), 2):
            spark_replicate.apply_changes(batch, str(tmp_path / "orders"))
        assert spark.conf.get(MERGE_MATERIALIZE_SOURCE) == "all"
        assert spark.conf.get(TXN_APP_ID, None) is None and spark.conf.get(TXN_VERSION, None) is None
    finally:
        spark.conf.unset(MERGE_MATERIALIZE_SOURCE)
    assert seen == [("MERGE", "none", "2")] * 2
    for table in (tmp_path / "orders", tmp_path / "orders" / "_spark_replicate" / "keys"):
        assert [version for _, version in tagged_writes(table)] == [1, 2]
    assert_same_rows(delta_rows(spark, tmp_path / "orders"), truth(zone, "SALES.ORDERS"))


@needs_delta
def test_state_made_anew_beside_a_target_is_applied(spark, zone, tmp_path):
    """The state kept beside the target deleted after the first half of the changes: the second
    half, batch 1 of the new state, is applied, not skipped as the batch 1 the old state wrote."""
    table, target = "SALES.ORDERS", tmp_path / "orders"
    first, rest = in_commit_order(read_table(spark, zone, table), 2)
    spark_replicate.apply_changes(first, str(target))
    shutil.rmtree(target / "_spark_replicate")
    result = spark_replicate.apply_changes(rest, str(target))
    assert result.batch == 1 and result.updated > 0
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_batch_holding_each_change_twice_applies_it_once_and_ignores_each_repeat(spark, zone, tmp_path,
                                                                                    implementation):
    """Repeats sort beside their change in one window: the count of changes applied must leave out
    the repeats, the target's own row and the DELETEs of moved rows' old keys (not input rows)."""
    table, target = "HR.EMPLOYEES", tmp_path / "employees"
    first, second = in_commit_order(read_table(spark, zone, table), 2)
    keys = table_layout(second, None).keys
    moved = " OR ".join(f"NOT (header__before_image.`{k}` <=> `{k}`)" for k in keys)
    assert second.where(f"header__operation = 'UPDATE' AND ({moved})").count() > 0
    apply(implementation, first, target)
    result = apply(implementation, second.unionByName(second), target)
    assert result.ignored == second.count() and result.updated > 0 and result.deleted > 0
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_staged_rows_are_written_without_dictionaries(spark, zone, tmp_path, implementation):
    """The staged files are read whole and never searched: no column of them is dictionary-encoded
    (Parquet's default would encode every one of them so, at a cost per value written)."""
    import pyarrow.parquet as pq

    target = tmp_path / "departments"
    apply(implementation, read_table(spark, zone, "HR.DEPARTMENTS"), target)
    footers = [pq.ParquetFile(f).metadata for f in (target / "_spark_replicate" / "staged").glob("*.parquet")]
    chunks = [meta.row_group(g).column(c) for meta in footers
              for g in range(meta.num_row_groups) for c in range(meta.num_columns)]
    assert chunks and sum(meta.num_rows for meta in footers) > 0
    assert [c.path_in_schema for c in chunks if c.has_dictionary_page] == []


def staging_plans(spark, run) -> list[str]:
    """The physical plans of the SQL executions that ``run()`` started and that wrote the staged files."""
    store = spark._jsparkSession.sharedState().statusStore()

    def executions() -> list:
        listed, found = store.executionsList().iterator(), []
        while listed.hasNext():
            found.append(listed.next())
        return found
    before = {e.executionId() for e in executions()}
    run()
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(10_000)
    plans = [e.physicalPlanDescription() for e in executions() if e.executionId() not in before]
    return [plan for plan in plans if "_spark_replicate/staged" in plan and "InsertInto" in plan]


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_later_batch_reads_the_rows_of_its_own_keys_from_the_keys_and_the_target(spark, zone, tmp_path,
                                                                                implementation):
    """The keys and the target hold every key ever applied: a later batch cuts each to its own keys
    by a semi-join with its distinct keys, broadcast (they are small), so that neither table is
    shuffled whole to meet the batch's events (README: Speed). The table still equals the source."""
    table, target = "SALES.ORDERS", tmp_path / "orders"
    first, rest = in_commit_order(read_table(spark, zone, table), 2)
    apply(implementation, first, target)
    (plan,) = staging_plans(spark, lambda: apply(implementation, rest, target))
    broadcast_semi_joins = [line for line in plan.splitlines() if "BroadcastHashJoin" in line and "LeftSemi" in line]
    assert len(broadcast_semi_joins) >= 2, plan
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_later_batch_whose_scans_would_read_other_rows_keeps_what_partial_masks_leave_out(spark, tmp_path,
                                                                                           implementation):
    """A later batch's plan scans its changes twice: the fresh changes, and their keys, which pick
    the target's rows to replay them after. Two scans of a Kafka read plan their offsets apart and
    may read other records; here each scan of the input keeps a random half of its UPDATEs (a
    nondeterministic filter). Read once, every UPDATE replays after its key's row: a column the
    target holds null is null in the key's full load or in one of its UPDATEs whose column mask
    names it. (Read twice, a key only the first scan kept lost every column its mask leaves out.)"""
    table = "HR.EMPLOYEES"
    zone = generate_landing_zone(tmp_path / "landing", tables=[t for t in default_tables() if t.name == table],
                                 messages=200, seed=313, partial_masks=1.0)
    changes, target = read_table(spark, zone, table), tmp_path / "target"
    apply(implementation, changes.where("header__operation = 'REFRESH'"), target)
    some = F.udf(lambda: random.random() < 0.5, "boolean").asNondeterministic()
    result = apply(implementation, changes.where("header__operation = 'UPDATE'").where(some()), target)
    assert result.updated > 0
    definition = table_def(zone, table)
    columns, keys = [c.name for c in definition.columns], [c.name for c in definition.key_columns]
    loaded, null_ok = set(), set()  # the keys of the full load; the (key, column) that may be null
    for message in zone.messages_for(table):
        row = source_row(zone, table, message.data)
        key = tuple(row[k] for k in keys)
        if message.operation == "REFRESH":
            loaded.add(key)
        named = (range(1, len(columns) + 1) if message.operation == "REFRESH" or message.column_mask is None
                 else mask_ordinals(message.column_mask))
        null_ok.update((key, columns[i - 1]) for i in named if row[columns[i - 1]] is None)
    rows = [r for r in delta_rows(spark, target) if tuple(r[k] for k in keys) in loaded]
    assert len(rows) == len(loaded)
    nulled = [(key, c) for r in rows for key in [tuple(r[k] for k in keys)] for c in columns
              if r[c] is None and (key, c) not in null_ok]
    assert not nulled


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
@pytest.mark.parametrize("scd_type", [1, 2])
def test_a_batch_whose_input_reads_other_rows_each_time_counts_the_rows_it_applied(spark, tmp_path, implementation,
                                                                                  scd_type):
    """Each evaluation of the input keeps a random half of a full load (a nondeterministic filter,
    standing in for a Kafka read, which plans its offsets up to the latest each time): the first
    batch, then a second of the same kind. Every row is a new key, so nothing may be counted ignored,
    and the counts are those of the rows the target shows. (The input counted by a scan of its
    own made rows the batch never applied count as ignored, or made the count negative.)"""
    table = "HR.DEPARTMENTS"
    zone = generate_landing_zone(tmp_path / "landing", tables=[t for t in default_tables() if t.name == table],
                                 messages=2000, seed=17)
    full_load = read_table(spark, zone, table).where("header__operation = 'REFRESH'")
    some = F.udf(lambda: random.random() < 0.5, "boolean").asNondeterministic()
    first_half = full_load.where("DEPT_ID % 2 = 0").where(some())
    second_half = full_load.where("DEPT_ID % 2 = 1").where(some())
    target = tmp_path / "target"
    results = [apply(implementation, rows, target, scd_type) for rows in (first_half, second_half)]
    assert [r.ignored for r in results] == [0, 0]
    assert sum(r.inserted for r in results) == len(delta_rows(spark, target)) > 0


@needs_delta
@pytest.mark.slow
def test_files_shuffled_and_some_delivered_twice(spark, zone, tmp_path):
    """One batch per landed file, in a random order, one file twice: a key's changes are in its
    partition's file, but a moved row's old key is in another file, applied before or after."""
    table, target = "HR.EMPLOYEES", tmp_path / "employees"
    files = sorted(p for p in zone.files if p.parent.name == table_def(zone, table).topic)
    random.Random(5).shuffle(files)
    results = [spark_replicate.apply_changes(read_table(spark, zone, table, paths=[f]), str(target))
               for f in files + files[:1]]
    assert results[-1].ignored > 0 and results[-1].inserted == results[-1].updated == 0
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
@pytest.mark.parametrize("batches", [pytest.param(1, marks=pytest.mark.smoke), pytest.param(3, marks=pytest.mark.slow)])
def test_history_equals_the_simulated_versions(spark, zone, tmp_path, batches):
    table, target = "HR.DEPARTMENTS", tmp_path / "departments"
    for batch in in_commit_order(read_table(spark, zone, table), batches):
        spark_replicate.apply_changes(batch, str(target), scd_type=2)
    assert_same_rows(delta_rows(spark, target), history_truth(zone, table))


@needs_delta
def test_columns_the_source_adds_are_added_to_the_table(spark, tmp_path):
    """The first batch is read as it would have been before the ALTER TABLEs (version 1's
    columns only); the second brings versions 2 and 3, whose columns the table gains."""
    zone = generate_landing_zone(tmp_path / "landing", tables=evolving_tables(), messages=300, seed=312,
                                 files_per_topic=1, partial_masks=0.4)
    table, target = "INV.ITEMS", tmp_path / "items"
    changes = read_table(spark, zone, table)
    first, rest = changes.where("header__table_version = 1"), changes.where("header__table_version > 1")
    added = [c.name for c in table_def(zone, table).added_columns]
    before = F.col("header__before_image")
    version_1 = first.drop(*added).withColumn("header__before_image", F.when(before.isNotNull(), F.struct(*(
        before.getField(c).alias(c) for c in table_layout(changes, None).columns if c not in added))))
    spark_replicate.apply_changes(version_1, str(target))
    assert [c for c in spark.read.format("delta").load(str(target)).columns if c in added] == []
    spark_replicate.apply_changes(rest, str(target))
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
@pytest.mark.parametrize("escaped_literals", ["false", "true"])
def test_a_micro_batch_run_again_is_not_applied_again(spark, zone, tmp_path, escaped_literals):
    """Spark runs a micro-batch again after a failure: the second run finds it applied, by a
    checkpoint location read back from the log exactly, whatever characters it holds and however
    the session reads backslashes in SQL literals."""
    table, target = "HR.DEPARTMENTS", str(tmp_path / "departments")
    changes = read_table(spark, zone, table)
    layout = table_layout(changes, None)
    stream = ("s3a://lake/it's a \\ check\\'point, café", 0)
    with spark_conf(spark, {"spark.sql.parser.escapedStringLiterals": escaped_literals}):
        first = _apply_batch(changes, target, layout, 1, stream=stream)
        version = delta_version(spark, target)
        assert _apply_batch(changes, target, layout, 1, stream=stream) == first
    assert delta_version(spark, target) == version
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
def test_what_apply_changes_refuses(spark, zone, tmp_path):
    changes = read_table(spark, zone, "HR.DEPARTMENTS")
    target = str(tmp_path / "departments")
    with pytest.raises(ValueError, match="scd_type=3"):
        spark_replicate.apply_changes(changes, target, scd_type=3)
    with pytest.raises(ValueError, match="'lake/departments' is a relative path: pass an absolute path"):
        spark_replicate.apply_changes(changes, "lake/departments")
    with pytest.raises(ValueError, match="checkpoint_location is for a streaming DataFrame"):
        spark_replicate.apply_changes(changes, target, checkpoint_location=str(tmp_path / "checkpoint"))
    (tmp_path / "landed").mkdir()
    stream = spark.readStream.schema(changes.schema).parquet(str(tmp_path / "landed"))
    with pytest.raises(ValueError, match="needs checkpoint_location"):
        spark_replicate.apply_changes(stream, target)
    spark_replicate.apply_changes(changes.limit(5), target)
    with pytest.raises(ValueError, match="current-state .* apply with scd_type=1"):
        spark_replicate.apply_changes(changes, target, scd_type=2)
    with pytest.raises(ValueError, match=r"applied with the keys COMPANY_ID, DEPT_ID.*keys=\['COMPANY_ID', 'DEPT_ID'\]"):
        spark_replicate.apply_changes(changes, target, keys=["DEPT_ID"])


@needs_delta
@pytest.mark.slow
def test_a_stream_stopped_and_restarted(spark, zone, tmp_path):
    """The changes as a stream of Parquet files (one micro-batch each): stopped after two of four
    files, restarted from its checkpoint once the others have landed."""
    table, target, landed = "SALES.ORDERS", str(tmp_path / "orders"), tmp_path / "landed"
    changes = read_table(spark, zone, table)
    parts = in_commit_order(changes, 4)
    checkpoint = str(tmp_path / "checkpoint")

    def run(files: list[int]) -> None:
        for number in files:
            parts[number].coalesce(1).write.parquet(str(landed / f"part={number}"))
        stream = spark.readStream.schema(changes.schema).option("maxFilesPerTrigger", 1) \
            .option("recursiveFileLookup", "true").parquet(str(landed))
        query = spark_replicate.apply_changes(stream, target, checkpoint_location=checkpoint)
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    run([0, 1])
    assert spark.read.format("delta").load(target).count() > 0
    run([2, 3])
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


def compaction(spark, path: str) -> tuple[str | None, int]:
    """The Delta table's auto-compaction property, and how many files it holds."""
    properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()}
    files = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first().numFiles
    return properties.get("delta.autoOptimize.autoCompact"), files


@needs_delta
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_the_log_and_the_keys_stay_compacted_batch_after_batch(spark, zone, tmp_path, implementation):
    """Every batch adds files to the tables kept beside the target, which every batch reads: Delta's
    auto compaction, set on them by the target's second batch (a first load spares its cost) and
    given by its next batch to state made before it, joins their files once enough are small (here
    3, so that six batches show it)."""
    table, target = "HR.EMPLOYEES", tmp_path / "employees"
    state = [f"{target}/_spark_replicate/{name}" for name in ("batches", "keys")]
    parts = in_commit_order(read_table(spark, zone, table), 6)
    with session_setting(spark, "spark.databricks.delta.autoCompact.minNumFiles", "3"):
        apply(implementation, parts[0], target)
        assert [compaction(spark, path)[0] for path in state] == [None, None]
        apply(implementation, parts[1], target)
        for path in state:  # as state made before the property has it
            spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES ('delta.autoOptimize.autoCompact')")
        for part in parts[2:]:
            apply(implementation, part, target)
    # Without compaction the log would hold 12 files (a row a file), the keys a file per key MERGEd.
    for path in state:
        enabled, files = compaction(spark, path)
        assert enabled == "true" and files <= 4, (path, enabled, files)
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


KILLER = """
import os, signal, sys, threading, time
from pyspark.sql import SparkSession
import spark_replicate
from spark_replicate import apply
from conftest import session_builder

spark = session_builder("local[2]").getOrCreate()
jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
calls, original = 0, getattr(apply._State, {method!r})

def crash():
    os.kill(jvm, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)

def crash_once_a_job_runs():
    while not spark.sparkContext.statusTracker().getActiveJobsIds():
        time.sleep(0.01)
    crash()

def kill_in(self, *args):
    global calls
    calls += 1
    if calls == {call}:
        if {between}:
            crash()
        threading.Thread(target=crash_once_a_job_runs, daemon=True).start()
    return original(self, *args)

setattr(apply._State, {method!r}, kill_in)
for paths in {batches!r}:
    spark_replicate.apply_changes(spark_replicate.read(spark, paths, schema_topic={schema!r}, table={table!r}),
                                  {target!r})
"""


@needs_delta
@pytest.mark.slow
@pytest.mark.parametrize("first,method,call,between", [
    (2, "_write", 2, True), (1, "_write", 3, False), (1, "_write_staged", 2, False)],
    ids=["between the first load's writes", "during a later batch's MERGE into the target",
         "while a later batch's staged rows are written"])
def test_a_crash_while_a_batch_writes_then_a_rerun(spark, zone, tmp_path, first, method, call, between):
    """A process applying the first half of the files is SIGKILLed (its JVM first) between the
    first load's write that makes the target and the one that makes the keys (the rerun finds the
    target made, the keys not), or, having applied the first file, while the next batch MERGEs into
    the target, or while it writes its staged rows (plain files, which the rerun must not take for
    a batch's); a rerun over all the files gives the true table."""
    table, target = "HR.EMPLOYEES", str(tmp_path / "employees")
    files = sorted(str(p) for p in zone.files if p.parent.name == table_def(zone, table).topic)
    batches = [files[:1], files[:2]][first - 1:]
    script = KILLER.format(method=method, call=call, between=between, batches=batches, schema=str(zone.schema_topic),
                           table=table, target=target)
    crashed = run_python(script, env={"PYTHONPATH": str(TESTS_DIR)}, timeout=600)
    assert crashed.returncode == -9, crashed.stderr[-3000:]
    spark_replicate.apply_changes(read_table(spark, zone, table), target)
    assert_same_rows(delta_rows(spark, target), truth(zone, table))
    # Each batch wrote each table once: finishing the batch the crash interrupted skipped the
    # write it had committed (e.g. the first load's write into the target).
    for table_path in (target, f"{target}/_spark_replicate/keys"):
        writes = tagged_writes(table_path)
        assert None not in writes and [v for _, v in writes] == sorted({v for _, v in writes}), writes


@pytest.mark.smoke
@pytest.mark.parametrize("minor", ["4.0", "4.1", "4.2", "4.3"])
def test_each_supported_minor_has_its_delta_release_or_a_clear_error(minor):
    if minor in DELTA_PACKAGES:
        assert delta_package(f"{minor}.9").startswith("io.delta:delta-spark_")
    else:
        with pytest.raises(ReplicateSetupError, match=f"no Delta Lake release is built for Spark {minor} .*serves "
                                                      "Spark 4.0, 4.1, 4.2"):
            delta_package(f"{minor}.0")


@needs_delta
def test_apply_topic_applies_every_table_to_its_own_delta_table_then_a_rerun_finds_nothing_new(spark, zone, tmp_path):
    def run():
        return spark_replicate.apply_topic(spark, str(zone.root), str(tmp_path / "lake"),
                                           schema_topic=str(zone.schema_topic))
    results = run()
    assert sorted(results) == sorted(TABLES)
    for table in TABLES:
        result = results[table]
        assert (result.batch, result.inserted, result.updated, result.deleted, result.ignored) == (
            1, len(zone.final_state(table)), 0, 0, 0)
        assert_same_rows(delta_rows(spark, tmp_path / "lake" / table), truth(zone, table))
    again = run()
    assert {table: (r.batch, r.inserted, r.updated, r.deleted) for table, r in again.items()} == {
        table: (2, 0, 0, 0) for table in TABLES}
    assert all(again[table].ignored == len(zone.messages_for(table)) for table in TABLES)


@needs_delta
@pytest.mark.slow
def test_the_apply_command(zone, tmp_path):
    """The HR topic's two tables (each table is applied by the same code, and a rerun by apply_topic,
    which the command calls: its test runs again)."""
    command = [sys.executable, "-m", "spark_replicate.cli", "apply", str(zone.topics["hr"]), "--target", str(tmp_path),
               "--schema-topic", str(zone.schema_topic), "--master", "local[2]"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600,
                           env=small_session_env(), preexec_fn=dies_with_parent())
    assert first.returncode == 0, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"HR.DEPARTMENTS: batch 1: {len(zone.final_state('HR.DEPARTMENTS'))} inserted, 0 updated")


@needs_delta
@pytest.mark.connect
def test_over_connect_apply_changes_gives_the_source_table(connect_url, spark, zone, tmp_path):
    """In a client process of its own (pyspark's functions build Connect columns only in a process
    whose session is remote); the server has Delta, as the README says it must. The second call
    finds the target made (Delta's error, through Connect) and nothing fresh."""
    table, target = "HR.DEPARTMENTS", str(tmp_path / "departments")
    paths, schema_topic = str(zone.topics[table_def(zone, table).topic]), str(zone.schema_topic)
    result = run_python(f"""
        import spark_replicate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        changes = spark_replicate.read(spark, {paths!r}, schema_topic={schema_topic!r}, table={table!r})
        results = [tuple(spark_replicate.apply_changes(changes, {target!r}).__dict__.values()) for _ in range(2)]
        print("RESULT=" + repr(results + [changes.count()]))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    *results, rows = ast.literal_eval(result.stdout.split("RESULT=", 1)[1].strip())
    assert results == [(1, len(zone.final_state(table)), 0, 0, 0, 0), (2, 0, 0, 0, rows, 0)]
    assert_same_rows(delta_rows(spark, target), truth(zone, table))


@needs_delta
def test_a_table_name_target_is_created_in_the_catalog_and_applied_again(spark, zone, tmp_path):
    table = "HR.DEPARTMENTS"
    spark.sql(f"CREATE DATABASE replicate_apply LOCATION '{tmp_path / 'replicate_apply.db'}'")
    try:
        changes = read_table(spark, zone, table)
        first = spark_replicate.apply_changes(changes, "replicate_apply.departments")
        again = spark_replicate.apply_changes(changes, "replicate_apply.departments")
        assert (first.batch, first.inserted, again.batch, again.inserted, again.ignored) == \
            (1, len(zone.final_state(table)), 2, 0, changes.count())
        assert_same_rows(collect_plain(spark.table("replicate_apply.departments")), truth(zone, table))
    finally:
        spark.sql("DROP DATABASE replicate_apply CASCADE")


# A quote, a backslash and backticks (not a space, which Delta refuses without column mapping): SQL
# text must quote it as a name and as a literal.
ODD = "it's\\a`name`"


def odd_changes(spark, rows: list[tuple]) -> DataFrame:
    """Changes of a table (id key, ODD, note) in the reader's flat layout, built by hand."""
    table = [StructField("id", IntegerType(), metadata={KEY_POSITION: 1}),
             StructField(ODD, StringType()), StructField("note", StringType())]
    schema = StructType([StructField("header__change_seq", StringType()), StructField("header__operation", StringType()),
                         StructField("header__present_columns", ArrayType(StringType())),
                         StructField("header__before_image", StructType([StructField(f.name, f.dataType) for f in table])),
                         *table])
    return spark.createDataFrame(rows, schema)


@needs_delta
@pytest.mark.parametrize("escaped_literals", ["false", "true"])
def test_column_names_that_sql_must_quote(spark, tmp_path, escaped_literals):
    """A column whose name holds a quote, a backslash and backticks, left out of an UPDATE's mask
    in the second batch (so its value comes from the row the target holds) and in the first."""
    first = odd_changes(spark, [("001", "INSERT", None, None, 1, "a", "x"),
                                ("002", "INSERT", None, None, 2, "b", "y"),
                                ("003", "UPDATE", ["id", "note"], (2, "b", "y"), 2, None, "y2")])
    second = odd_changes(spark, [("004", "UPDATE", ["id", "note"], (1, "a", "x"), 1, None, "x2"),
                                 ("005", "UPDATE", ["id", ODD], (2, "b", "y2"), 2, "b2", None)])
    target = str(tmp_path / "odd")
    with spark_conf(spark, {"spark.sql.parser.escapedStringLiterals": escaped_literals}):
        assert_same_rows(collect_plain(spark_replicate.latest_state(first)),
                         [{"id": 1, ODD: "a", "note": "x"}, {"id": 2, ODD: "b", "note": "y2"}])
        spark_replicate.apply_changes(first, target)
        result = spark_replicate.apply_changes(second, target)
    assert (result.inserted, result.updated, result.deleted, result.ignored) == (0, 2, 0, 0)
    assert_same_rows(delta_rows(spark, target), [{"id": 1, ODD: "a", "note": "x2"}, {"id": 2, ODD: "b2", "note": "y2"}])
