"""``apply_topic`` over Apache Kafka (README "Applying changes"): every table of the Kafka zone's
topics applied, each into its own Delta table, equal to the generator's simulated source table
(``LandingZone.final_state``, never the reader's), in Python, in Scala (``Changes.applyTopic``) and
by ``spark-replicate apply``; with the metadata from the schema topic or from the data topics;
transactional; a rerun applies nothing again; continuously, as records arrive; over Spark Connect."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from pyspark.errors import AnalysisException

import spark_replicate
from _cluster import dies_with_parent, wait_for
from _kafka import PREFIX, publish
from conftest import DELTA, assert_same_rows, collect_plain, run_python, small_session_env, source_row
from spark_replicate import topic
from spark_replicate.apply import ApplyResult
from spark_replicate.generate import SCHEMA_TOPIC, default_tables, generate_landing_zone
from test_apply_topic import TABLES, last_whole_commit, scala_results, state_at
from test_kafka_publish import landed

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
    results = apply_options(implementation, spark, target, schema_topic, kafka_options(zone, bootstrap, topics),
                            transactional)
    return {table: (r.inserted, r.updated, r.deleted, r.ignored) for table, r in results.items()}


def apply_options(implementation: str, spark, target, schema_topic: str | None, options: dict[str, str],
                  transactional: bool) -> dict[str, ApplyResult]:
    """``apply_topic`` over the Kafka topics ``options`` read, or its Scala twin."""
    if implementation == "python":
        return spark_replicate.apply_topic(spark, None, str(target), schema_topic=schema_topic,
                                           transactional=transactional, **options)
    jvm = spark._jvm
    utils = jvm.org.apache.spark.api.python.PythonUtils
    results = jvm.io.sparkreplicate.cdc.Changes.applyTopic(
        spark._jsparkSession, utils.toSeq([]), str(target), jvm.scala.Option.apply(schema_topic), 1, transactional,
        utils.toScalaMap(options))
    return {table: ApplyResult(r.batch(), r.inserted(), r.updated(), r.deleted(), r.ignored(), r.held())
            for table, r in scala_results(spark, results).items()}


@pytest.mark.slow
@pytest.mark.parametrize("implementation,schema_topic,transactional", [
    pytest.param("python", None, False, id="python-metadata-in-the-data-topics"),
    pytest.param("scala", PREFIX + SCHEMA_TOPIC, False, id="scala"),
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


def publish_landed(bootstrap: str, landed_topic, name: str, part: slice) -> None:
    """``part`` of each partition's records of a landed topic (in offset order) to the Kafka topic
    ``name``, created with as many partitions on the first call."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    records = sorted(landed(landed_topic))
    partitions = sorted({r[0] for r in records})
    if part.start is None:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(name, num_partitions=len(partitions), replication_factor=1)])
        finally:
            admin.close()
    chosen = [r for p in partitions for r in [r for r in records if r[0] == p][part]]
    publish(bootstrap, name, [(partition, key, value) for partition, _, _, key, value in chosen])


@pytest.mark.slow
@pytest.mark.parametrize("implementation,transactional", [("python", False), ("scala", True)])
def test_continuous_apply_follows_the_topics(spark, kafka_bootstrap, tmp_path, implementation, transactional):
    """The HR topic published in two halves to new Kafka topics while a continuous apply runs (its
    streams from the earliest offsets, as none is given): each table ends as its source table."""
    zone = generate_landing_zone(tmp_path / "landing", tables=[t for t in default_tables() if t.topic == "hr"],
                                 messages=300, seed=31, files_per_topic=2)
    prefix = f"continuous-{implementation}-"
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": prefix + "hr"}
    publish_landed(kafka_bootstrap, zone.schema_topic, prefix + SCHEMA_TOPIC, slice(None))
    publish_landed(kafka_bootstrap, zone.topics["hr"], prefix + "hr", slice(None, 60))
    target, tables = tmp_path / "target", tables_of(zone, ["hr"])
    stop = threading.Event()
    if implementation == "python":
        results = {}
        run = threading.Thread(target=lambda: results.update(topic.apply_continuously(
            spark, None, str(target), prefix + SCHEMA_TOPIC, 1, transactional, 1.0, options, should_stop=stop.is_set)))
        run.start()
    else:
        jvm = spark._jvm
        utils = jvm.org.apache.spark.api.python.PythonUtils
        scala_run = jvm.io.sparkreplicate.cdc.Changes.applyTopicContinuously(
            spark._jsparkSession, utils.toSeq([]), str(target), jvm.scala.Option.apply(prefix + SCHEMA_TOPIC), 1,
            transactional, utils.toScalaMap(options), 1.0)
    try:
        wait_for(lambda: all((target / table / "_delta_log").exists() for table in tables), "the first batches", [],
                 timeout=180)
        publish_landed(kafka_bootstrap, zone.topics["hr"], prefix + "hr", slice(60, None))

        def applied() -> bool:
            try:
                assert_source_tables(spark, zone, target, tables)
                return True
            except (pytest.fail.Exception, AnalysisException):  # (or a table whose first commit is being written)
                return False
        wait_for(applied, "the source tables", [], timeout=180)
    finally:
        stop.set()
        if implementation == "python":
            run.join(120)
            inserted = {table: result.inserted for table, result in results.items()}
        else:
            inserted = {table: r.inserted() for table, r in scala_results(spark, scala_run.stop()).items()}
    # What the run applied, summed over its batches: every live key was inserted at least once.
    assert sorted(inserted) == tables
    assert all(inserted[table] >= len(zone.final_state(table)) for table in tables)


def publish_messages(bootstrap: str, landed_topic, name: str, messages: list) -> None:
    """The landed records of ``messages``, in their order, each to its partition of the Kafka topic ``name``."""
    records = {(partition, offset): (key, value) for partition, offset, _, key, value in landed(landed_topic)}
    publish(bootstrap, name, [(m.partition, *records[m.partition, m.offset]) for m in messages])


@pytest.mark.slow
@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_a_transactional_run_applies_none_of_a_transaction_published_while_it_runs(spark, kafka_bootstrap, tmp_path,
                                                                                   monkeypatch, implementation):
    """A transactional run reads each table once, and every step takes the rows it read: the first
    events of a transaction (some of the second table's), published once the run has found every
    transaction it read whole (no boundary; Scala's run cannot be patched there: once its first
    table is written), are not applied by its later steps, as a Kafka read evaluated again would
    apply them. The next run applies the whole transaction."""
    zone = generate_landing_zone(tmp_path / "landing", tables=[t for t in default_tables() if t.topic == "hr"],
                                 messages=200, seed=41, files_per_topic=2)
    messages = zone.messages

    def last_event(i: int) -> int:
        return next(j for j in range(i, len(messages)) if messages[j].headers["transactionLastEvent"])
    # Where a transaction of several events starts, halfway through the changes; its events before
    # the last touch the second table.
    start = next(i for i, m in enumerate(messages) if i > len(messages) // 2 and m.operation != "REFRESH"
                 and m.headers["transactionEventCounter"] == 1 and not m.headers["transactionLastEvent"]
                 and any(n.table == TABLES[-1] for n in messages[i:last_event(i)]))
    end = last_event(start)
    name, lake = f"published-while-applying-{implementation}-", tmp_path / "lake"
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": name + "hr"}
    publish_landed(kafka_bootstrap, zone.schema_topic, name + SCHEMA_TOPIC, slice(None))
    publish_landed(kafka_bootstrap, zone.topics["hr"], name + "hr", slice(None, 0))  # (the topic, empty)
    publish_messages(kafka_bootstrap, zone.topics["hr"], name + "hr", messages[:start])

    def publish_the_first_events() -> None:
        publish_messages(kafka_bootstrap, zone.topics["hr"], name + "hr", messages[start:end])

    def run() -> dict[str, int]:
        """``{table: rows held}``."""
        results = apply_options(implementation, spark, lake, name + SCHEMA_TOPIC, options, transactional=True)
        return {table: r.held for table, r in results.items()}

    if implementation == "python":
        boundary = topic._boundary

        def publish_after_the_boundary(*args):
            found = boundary(*args)
            assert found is None  # every transaction read is whole
            publish_the_first_events()
            return found
        monkeypatch.setattr(topic, "_boundary", publish_after_the_boundary)
        held = run()
        monkeypatch.undo()
    else:
        failures = []

        def publish_once_the_first_table_is_written() -> None:
            try:
                wait_for(lambda: (lake / TABLES[0] / "_delta_log").exists(), "the first table's write", [],
                         timeout=300)
                publish_the_first_events()
            except BaseException as failure:  # (reported by the test's thread below)
                failures.append(failure)
        publisher = threading.Thread(target=publish_once_the_first_table_is_written)
        publisher.start()
        held = run()
        publisher.join(60)
        assert not failures and not publisher.is_alive()
    assert held == {table: 0 for table in TABLES}
    commit = last_whole_commit(zone, {id(m) for m in messages[:start]})
    for table in TABLES:
        assert_same_rows(collect_plain(spark.read.format("delta").load(str(lake / table))),
                         state_at(zone, table, commit))
    publish_messages(kafka_bootstrap, zone.topics["hr"], name + "hr", messages[end:])
    run()
    assert_source_tables(spark, zone, lake, TABLES)


@pytest.mark.connect
def test_over_connect_every_table_of_a_topic_becomes_its_source_table(connect_url, spark, kafka_zone,
                                                                       kafka_bootstrap, tmp_path):
    """In a Connect client process of its own (see test_apply_delta's Connect test); the server has
    Spark's Kafka source and Delta. Transactional: the run's local checkpoints of what it read
    (see the test above) are Connect's cached relations there."""
    options = kafka_options(kafka_zone, kafka_bootstrap, ["hr"])
    result = run_python(f"""
        import spark_replicate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        results = spark_replicate.apply_topic(spark, None, {str(tmp_path)!r}, transactional=True, **{options!r})
        print("RESULT=" + repr(sorted((table, r.inserted, r.deleted, r.held) for table, r in results.items())))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    tables = tables_of(kafka_zone, ["hr"])
    assert result.stdout.split("RESULT=", 1)[1].strip() == repr(
        [(table, len(kafka_zone.final_state(table)), 0, 0) for table in tables])
    assert_source_tables(spark, kafka_zone, tmp_path, tables)
