"""``latest_state`` and ``history`` (README "Applying changes") against the generator's truth.

The truth is what the simulated source database holds after its last change
(``LandingZone.final_state``) and each key's versions as the simulation made them
(``LandingZone.history``), never derived from the reader. The zones have UPDATEs with partial
column masks (the left-out columns sent as null) and UPDATEs that move a row to a new key; the
changes are read from shuffled files, some of them twice, so that order and duplicates are tested.
The Python helpers and their Scala twins (``io.sparkreplicate.cdc.Changes``) meet the same truth.
"""

from __future__ import annotations

import json
import random

import pytest
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

import spark_replicate
from conftest import assert_same_rows, collect_plain, read_table, run_python, source_row, spark_conf, table_def
from spark_replicate.cdc import KEY_POSITION
from spark_replicate.generate import generate_landing_zone, mask_ordinals

TABLES = ["HR.EMPLOYEES", "HR.DEPARTMENTS", "SALES.ORDERS"]
ZONES = {
    "masks-and-moves": dict(seed=301, key_changes=0.2, partial_masks=0.4),
    "masks-and-moves-2": dict(seed=302, key_changes=0.1, partial_masks=0.6, full_load=False),
    "plain": dict(seed=303),
}


@pytest.fixture(scope="module")
def zones(tmp_path_factory):
    return {name: generate_landing_zone(tmp_path_factory.mktemp(name) / "landing", messages=1200,
                                        files_per_topic=4, **spec) for name, spec in ZONES.items()}


def shuffled_with_duplicates(spark, zone, table, seed):
    """The table's changes read from its topic's files in a random order, plus half of those
    files read again (a file delivered twice)."""
    files = sorted(p for p in zone.files if p.parent.name == table_def(zone, table).topic)
    random.Random(seed).shuffle(files)
    df = read_table(spark, zone, table, paths=files)
    return df.unionByName(read_table(spark, zone, table, paths=files[:len(files) // 2 + 1])).repartition(3)


def applied(implementation: str, helper: str, changes: DataFrame) -> DataFrame:
    """``spark_replicate.<helper>(changes)``, or its Scala twin called through the JVM."""
    if implementation == "python":
        return getattr(spark_replicate, helper)(changes)
    scala = changes.sparkSession._jvm.io.sparkreplicate.cdc.Changes
    method = {"latest_state": "latestState", "history": "history"}[helper]
    no_keys = getattr(scala, f"{method}$default$2")()
    return DataFrame(getattr(scala, method)(changes._jdf, no_keys), changes.sparkSession)


@pytest.mark.parametrize("implementation", ["python", "scala"])
@pytest.mark.parametrize("zone_name", list(ZONES))
@pytest.mark.parametrize("table", TABLES)
def test_latest_state_equals_the_source_table(spark, zones, zone_name, table, implementation):
    zone = zones[zone_name]
    changes = shuffled_with_duplicates(spark, zone, table, seed=len(zone_name))
    state = applied(implementation, "latest_state", changes)
    assert_same_rows(collect_plain(state), [source_row(zone, table, row) for row in zone.final_state(table).values()])


@pytest.mark.parametrize("implementation", ["python", "scala"])
@pytest.mark.parametrize("zone_name", list(ZONES))
@pytest.mark.parametrize("table", TABLES)
def test_history_equals_the_simulated_versions(spark, zones, zone_name, table, implementation):
    zone = zones[zone_name]
    versions = applied(implementation, "history", shuffled_with_duplicates(spark, zone, table, seed=7))
    expected = [{**source_row(zone, table, v.row), "__START_AT": v.start_at, "__END_AT": v.end_at}
                for key_versions in zone.history(table).values() for v in key_versions]
    assert_same_rows(collect_plain(versions), expected)


@pytest.mark.parametrize("implementation", ["python", "scala"])
@pytest.mark.parametrize("helper", ["latest_state", "history"])
def test_the_changes_are_read_by_one_scan(spark, zones, helper, implementation):
    """A moved row's two events come from one read of it: two scans of a Kafka read would each
    plan their offsets up to the latest, and a record produced in between would give the DELETE
    of a moved row's old key without its row at the new one."""
    zone = zones["masks-and-moves"]
    result = applied(implementation, helper, read_table(spark, zone, "HR.EMPLOYEES"))
    assert result._jdf.queryExecution().executedPlan().toString().count("BatchScan") == 1


def test_a_wide_tables_events_fit_whole_stage_code_generation_and_are_sorted_once(spark, tmp_path):
    """The events of a table of 30 columns of mixed types, as the benchmark's: with a generated loop
    per column to read its mask, their projection's code was 12.8 KB, past the 8,000 bytes HotSpot
    compiles, and ran outside whole-stage code generation; the window sorted them twice. (The Scala
    twin: ChangesSuite.)"""
    import re

    from pyspark.sql.types import (ArrayType, DateType, DecimalType, IntegerType, LongType, StringType,
                                   StructField, TimestampType)

    from spark_replicate.cdc import change_events, replay_last, table_layout

    types = [IntegerType(), LongType(), StringType(), DecimalType(18, 2), TimestampType(), DateType()]
    wide = StructType([StructField("ID", LongType(), metadata={KEY_POSITION: 1})]
                      + [StructField(f"C{i}", types[i % len(types)]) for i in range(1, 30)])
    schema = StructType(wide.fields + [StructField("header__operation", StringType()),
                                       StructField("header__change_seq", StringType()),
                                       StructField("header__present_columns", ArrayType(StringType(), False)),
                                       StructField("header__before_image", wide)])
    # Read from files: Spark would fold a projection of local rows into new local rows.
    spark.createDataFrame([], schema).write.parquet(str(tmp_path / "wide"))
    changes = spark.read.schema(schema).parquet(str(tmp_path / "wide"))
    layout = table_layout(changes, None)
    debug = spark._jvm.org.apache.spark.sql.execution.debug.package
    with spark_conf(spark, {"spark.sql.adaptive.enabled": "false"}):  # the plan as it runs
        events = change_events(changes, layout)._jdf.queryExecution().executedPlan()
        sizes = [int(s) for s in re.findall(r"maxMethodCodeSize:(\d+)", debug.codegenString(events))]
        replayed = replay_last(change_events(changes, layout), layout)._jdf.queryExecution().executedPlan()
    assert sizes and max(sizes) <= 8000, sizes
    assert replayed.toString().count("Sort [") == 1


def test_the_truth_covers_masks_moves_deletes_and_the_full_load(zones):
    zone = zones["masks-and-moves"]
    updates = [m for m in zone.messages if m.operation == "UPDATE"]
    moved = [m for m in updates if any(m.before[c.name] != m.data[c.name]
                                       for c in table_def(zone, m.table).key_columns)]
    partial = [m for m in updates if len(mask_ordinals(m.column_mask)) < len(m.data)]
    assert moved and partial and any(m.operation == "DELETE" for m in zone.messages)
    assert [m for m in partial if m in moved], "a row moved to a new key by an UPDATE whose mask leaves columns out"
    history = zone.history("HR.EMPLOYEES")
    assert any(v.start_at is None for versions in history.values() for v in versions)
    assert any(versions[-1].end_at is not None for versions in history.values())


def test_keys_come_with_the_schema_in_key_order(spark, zones):
    df = read_table(spark, zones["plain"], "HR.DEPARTMENTS")
    keyed = {f.name: f.metadata[KEY_POSITION] for f in df.schema.fields if KEY_POSITION in f.metadata}
    assert keyed == {"COMPANY_ID": 1, "DEPT_ID": 2}


def test_keys_override_and_a_table_without_keys_is_an_error(spark, zones):
    zone = zones["plain"]
    df = read_table(spark, zone, "HR.EMPLOYEES")
    assert spark_replicate.latest_state(df, keys=["EMP_ID"]).count() == len(zone.final_state("HR.EMPLOYEES"))
    no_keys = spark.createDataFrame(df.rdd, StructType([f.__class__(f.name, f.dataType, f.nullable)
                                                        for f in df.schema.fields]))
    with pytest.raises(ValueError, match="pass keys= .* among: EMP_ID, FIRST_NAME"):
        spark_replicate.latest_state(no_keys)
    with pytest.raises(ValueError, match="unknown key columns NOPE"):
        spark_replicate.history(df, keys=["NOPE"])


def as_json(df: DataFrame) -> list[str]:
    return sorted(json.dumps(row.asDict(), default=str) for row in df.collect())


@pytest.mark.connect
@pytest.mark.smoke
def test_over_connect_the_helpers_return_what_they_return_on_a_classic_session(connect_url, spark, zones):
    """In a client process of its own: pyspark's functions build Connect columns only in a
    process whose session is remote (see test_connect)."""
    zone, table = zones["masks-and-moves"], "SALES.ORDERS"
    paths, schema_topic = str(zone.topics[table_def(zone, table).topic]), str(zone.schema_topic)
    result = run_python(f"""
        import json
        import spark_replicate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        changes = spark_replicate.read(spark, {paths!r}, schema_topic={schema_topic!r}, table={table!r})
        rows = lambda df: sorted(json.dumps(row.asDict(), default=str) for row in df.collect())
        print("RESULT=" + json.dumps([rows(spark_replicate.latest_state(changes)),
                                      rows(spark_replicate.history(changes))]))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    changes = read_table(spark, zone, table)
    classic = [as_json(spark_replicate.latest_state(changes)), as_json(spark_replicate.history(changes))]
    assert json.loads(result.stdout.split("RESULT=", 1)[1]) == classic
    assert len(classic[0]) == len(zone.final_state(table))
