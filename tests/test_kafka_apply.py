"""``apply_topic`` over Apache Kafka (README "Applying changes"): every table of the Kafka zone's
topics applied, each into its own Delta table, equal to the generator's simulated source table
(``LandingZone.final_state``, never the reader's), in Python, in Scala (``Changes.applyTopic``) and
by ``spark-replicate apply``; with the metadata from the schema topic or from the data topics;
transactional; a rerun applies nothing again."""

from __future__ import annotations

import subprocess
import sys

import pytest

import spark_replicate
from _cluster import dies_with_parent
from _kafka import PREFIX
from conftest import DELTA, assert_same_rows, collect_plain, small_session_env, source_row
from spark_replicate.generate import SCHEMA_TOPIC
from test_apply_topic import scala_results

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(not DELTA, reason="no Delta Lake release serves this Spark minor")]


def kafka_options(zone, bootstrap: str, topics: list[str] | None = None) -> dict[str, str]:
    """``topics`` of the zone, by default its data topics (not the schema topic: a pattern could
    match other tests' topics)."""
    data_topics = topics or [topic for topic in zone.topics if topic != SCHEMA_TOPIC]
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": ",".join(sorted(PREFIX + t for t in data_topics))}


def tables_of(zone, topics: list[str] | None) -> list[str]:
    return sorted(t.name for t in zone.tables if topics is None or t.topic in topics)


def assert_source_tables(spark, zone, target, tables: list[str]) -> None:
    for table in tables:
        rows = collect_plain(spark.read.format("delta").load(f"{target}/{table}"))
        assert_same_rows(rows, [source_row(zone, table, row) for row in zone.final_state(table).values()])


def apply_kafka(implementation: str, spark, zone, bootstrap: str, target, schema_topic: str | None,
                topics: list[str] | None, transactional: bool = False) -> dict[str, tuple[int, int, int, int]]:
    """``apply_topic`` over the zone's Kafka ``topics``, or its Scala twin: ``{table: (inserted,
    updated, deleted, ignored)}``."""
    options = kafka_options(zone, bootstrap, topics)
    if implementation == "python":
        results = spark_replicate.apply_topic(spark, None, str(target), schema_topic=schema_topic,
                                              transactional=transactional, **options)
        return {table: (r.inserted, r.updated, r.deleted, r.ignored) for table, r in results.items()}
    jvm = spark._jvm
    utils = jvm.org.apache.spark.api.python.PythonUtils
    results = jvm.io.sparkreplicate.cdc.Changes.applyTopic(
        spark._jsparkSession, utils.toSeq([]), str(target), jvm.scala.Option.apply(schema_topic), 1, transactional,
        utils.toScalaMap(options))
    return {table: (r.inserted(), r.updated(), r.deleted(), r.ignored())
            for table, r in scala_results(spark, results).items()}


@pytest.mark.slow
@pytest.mark.parametrize("implementation,schema_topic,transactional", [
    pytest.param("python", None, False, id="python-metadata-in-the-data-topics"),
    pytest.param("scala", PREFIX + SCHEMA_TOPIC, True, id="scala-transactional"),
])
def test_every_table_of_the_topics_becomes_its_source_table(spark, kafka_zone, kafka_bootstrap, tmp_path,
                                                           implementation, schema_topic, transactional):
    """The HR topic read: its tables become the source tables. The tables applied are those the
    schema topic announces, else those whose metadata the data topics read carry."""
    read = tables_of(kafka_zone, ["hr"])
    first = apply_kafka(implementation, spark, kafka_zone, kafka_bootstrap, tmp_path, schema_topic, ["hr"],
                        transactional)
    assert sorted(first) == (read if schema_topic is None else tables_of(kafka_zone, None))
    for table, (inserted, _, deleted, _) in first.items():
        assert (inserted, deleted) == (len(kafka_zone.final_state(table)) if table in read else 0, 0), table
    assert_source_tables(spark, kafka_zone, tmp_path, read)
    if implementation == "python":
        # A rerun reads the topics again: every change is applied already.
        again = apply_kafka(implementation, spark, kafka_zone, kafka_bootstrap, tmp_path, schema_topic, ["hr"])
        assert again == {table: (0, 0, 0, len(kafka_zone.messages_for(table))) for table in read}
        assert_source_tables(spark, kafka_zone, tmp_path, read)


@pytest.mark.slow
def test_the_apply_command_reads_kafka(spark, kafka_zone, kafka_bootstrap, tmp_path):
    options = [f"--option={name}={value}" for name, value in kafka_options(kafka_zone, kafka_bootstrap, ["hr"]).items()]
    command = [sys.executable, "-m", "spark_replicate.cli", "apply", "--target", str(tmp_path), "--schema-topic",
               PREFIX + SCHEMA_TOPIC, *options, "--master", "local[2]"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=small_session_env(),
                         preexec_fn=dies_with_parent())
    assert run.returncode == 0, run.stderr[-3000:]
    # (Spark's resolution of the Kafka source's packages prints to stdout too.)
    lines = sorted(line for line in run.stdout.splitlines() if ": batch " in line)
    # Every table the schema topic announces; those of other topics have no change in the one read.
    assert [line.split(":")[0] for line in lines] == tables_of(kafka_zone, None)
    for line in lines:
        table = line.split(":")[0]
        inserted = len(kafka_zone.final_state(table)) if table.startswith("HR.") else 0
        assert line.startswith(f"{table}: batch 1: {inserted} inserted, 0 updated, 0 deleted"), line
    assert_source_tables(spark, kafka_zone, tmp_path, tables_of(kafka_zone, ["hr"]))


def test_paths_and_kafka_topics_together_are_refused(spark, kafka_zone, kafka_bootstrap, tmp_path):
    with pytest.raises(TypeError, match="pass None as the path"):
        spark_replicate.apply_topic(spark, "/landing/hr", str(tmp_path), schema_topic=PREFIX + SCHEMA_TOPIC,
                                    **kafka_options(kafka_zone, kafka_bootstrap))


@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_continuous_apply_over_kafka_is_refused(spark, kafka_zone, kafka_bootstrap, tmp_path, implementation):
    options = kafka_options(kafka_zone, kafka_bootstrap)
    if implementation == "python":
        with pytest.raises(ValueError, match="over Kafka, apply in batch"):
            spark_replicate.apply_topic(spark, None, str(tmp_path), schema_topic=PREFIX + SCHEMA_TOPIC,
                                        continuous=True, **options)
        return
    jvm = spark._jvm
    utils = jvm.org.apache.spark.api.python.PythonUtils
    with pytest.raises(Exception, match="over Kafka, apply in batch"):
        jvm.io.sparkreplicate.cdc.Changes.applyTopicContinuously(
            spark._jsparkSession, utils.toSeq([]), str(tmp_path), jvm.scala.Option.apply(PREFIX + SCHEMA_TOPIC), 1,
            False, utils.toScalaMap(options), 60.0)
