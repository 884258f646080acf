"""The read's size estimate, as Spark's planner sees it: the data files' bytes (from the file
system, not from the connector), so that a small read joined with a large table is broadcast
instead of shuffling the large table; through ``spark.read`` and through a catalog table ``USING
replicate`` (a V1 relation in a session whose catalog is Delta Lake's), on a classic session and
over Spark Connect; and none for a stream's micro-batches."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

from conftest import replicate_options, spark_conf, table_def

TABLE = "HR.EMPLOYEES"


def data_files_bytes(zone) -> int:
    topic = zone.topics[table_def(zone, TABLE).topic]
    return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(topic)
               for name in names if not name.startswith((".", "_")))


@contextmanager
def employees(session, zone, how: str, tmp_path):
    """``how``: a temporary view of a read (DataSource V2), or a catalog table (Spark's V1 path)."""
    options = replicate_options(zone, TABLE)
    if how == "view":
        session.sql(f"CREATE OR REPLACE TEMPORARY VIEW employees USING replicate OPTIONS ({options})")
        try:
            yield "employees"
        finally:
            session.sql("DROP VIEW IF EXISTS employees")
    else:
        session.sql(f"CREATE DATABASE replicate_stats LOCATION '{tmp_path / 'replicate_stats.db'}'")
        try:
            session.sql(f"CREATE TABLE replicate_stats.employees USING replicate OPTIONS ({options})")
            yield "replicate_stats.employees"
        finally:
            session.sql("DROP DATABASE replicate_stats CASCADE")


@pytest.mark.parametrize("how", ["view", "catalog table"])
def test_a_small_read_joined_with_a_large_table_is_broadcast(session, avro_zone, how, tmp_path):
    query = ("SELECT count(*) FROM (SELECT CAST(id AS INT) AS EMP_ID FROM range(0, 5000000)) large "
             "JOIN {table} e USING (EMP_ID)")
    # Adaptive execution off: the join planned from the estimates alone (adaptive execution would
    # also broadcast a small side, but only after shuffling the large one).
    with employees(session, avro_zone, how, tmp_path) as table, \
            spark_conf(session, {"spark.sql.adaptive.enabled": "false"}):
        plan = session.sql("EXPLAIN " + query.format(table=table)).first()[0]
        assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan, plan
        joined = session.sql(query.format(table=table)).first()[0]
    keys = [m.data.get("EMP_ID") for m in avro_zone.messages_for(TABLE)]
    assert joined == sum(key is not None and 0 <= key < 5_000_000 for key in keys) > 0


@pytest.mark.smoke
@pytest.mark.parametrize("how", ["view", "catalog table"])
def test_the_estimate_is_the_data_files_size(spark, avro_zone, how, tmp_path):
    with employees(spark, avro_zone, how, tmp_path) as table:
        estimate = spark.table(table)._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    assert int(str(estimate)) == data_files_bytes(avro_zone)


@pytest.mark.smoke
def test_a_streams_batches_report_no_size(spark, avro_zone, tmp_path):
    """Spark asks the stream's scan for each micro-batch's size: the files listed when the stream
    started are not the batch's, so it reports none (as Spark's Kafka source)."""
    sizes = []
    topic = str(avro_zone.topics[table_def(avro_zone, TABLE).topic])
    (spark.readStream.format("replicate").option("schemaTopic", str(avro_zone.schema_topic)).option("table", TABLE)
     .load(topic).writeStream.option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True)
     .foreachBatch(lambda batch, _: sizes.append(int(str(batch._jdf.queryExecution().optimizedPlan().stats()
                                                         .sizeInBytes()))))
     .start().awaitTermination())
    assert sizes == [2 ** 63 - 1]
