"""Identical replicate scans are one scan to Spark: a plan that reads the same DataFrame twice
reuses the first read's exchange instead of decoding the messages again."""

from __future__ import annotations

import spark_replicate
from conftest import spark_conf, table_def

TABLE = "HR.EMPLOYEES"


def test_a_self_join_of_one_read_reuses_its_exchange(spark, avro_zone, capsys):
    df = spark_replicate.read(spark, str(avro_zone.topics[table_def(avro_zone, TABLE).topic]),
                              schema_topic=str(avro_zone.schema_topic), table=TABLE)
    per_operation = df.groupBy("header__operation").count()
    joined = per_operation.join(per_operation.withColumnRenamed("count", "again"), "header__operation")
    # Adaptive execution decides reuse while it runs; without it the plan shows it up front.
    with spark_conf(spark, {"spark.sql.adaptive.enabled": "false"}):
        joined.explain()
        plan = capsys.readouterr().out
        rows = joined.collect()
    assert plan.count("BatchScan") == 1 and "ReusedExchange" in plan, plan
    counts = {}
    for message in avro_zone.messages_for(TABLE):
        counts[message.operation] = counts.get(message.operation, 0) + 1
    assert {row.header__operation: (row["count"], row.again) for row in rows} == {
        operation: (n, n) for operation, n in counts.items()}
