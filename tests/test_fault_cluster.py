"""A worker dies mid-job: the read must still return every message exactly once.

A real standalone cluster (master and two one-core workers on 127.0.0.1) reads a landing zone cut
into many small tasks (container files split at sync markers), in a job slowed down per partition
and followed by a shuffle. Once tasks have finished on both workers, one worker and its executor
are killed (SIGKILL to their process group). Spark must reschedule the lost tasks and recompute
the lost map output, and the job must end with exactly what an undisturbed read (the test's own
local session, split differently) gives: per table and operation, the row count and an
order-independent checksum over all output columns. Nothing lost, nothing read twice."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from _cluster import WORKER_VARIABLE, DriverProcess, process_alive, standalone_cluster, wait_for
from spark_replicate.generate import generate_landing_zone

TASK_SECONDS = 0.6  # the slowdown of each task
JOB_TIMEOUT = 240

TESTS_DIR = Path(__file__).resolve().parent

DRIVER = """
    import json, os, sys, time
    from pathlib import Path
    from pyspark import TaskContext
    from pyspark.sql import SparkSession
    import spark_replicate

    sys.path.insert(0, {tests_dir!r})
    from test_fault_cluster import change_digests

    builder = (SparkSession.builder.master({master!r}).appName("spark-replicate-fault-test")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
               .config("spark.cores.max", "2")
               .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
               .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s")
               .config("spark.sql.files.maxPartitionBytes", "96k")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC"))
    spark = spark_replicate.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    changes = change_digests(spark, {schema_topic!r}, {topics!r})

    def slow_partition(rows):
        totals = {{}}
        for row in rows:
            key = f"{{row.table}}/{{row.operation}}"
            count, digest = totals.get(key, (0, 0))
            totals[key] = (count + 1, digest + row.digest)
        time.sleep({task_seconds})
        task = TaskContext.get()
        marker = (f"{{task.stageId()}}-{{task.partitionId()}}-{{task.attemptNumber()}}-{{task.taskAttemptId()}}-"
                  f"{{os.environ.get({worker_variable!r}, 'unknown')}}")
        Path({markers!r}, marker).touch()
        return iter(totals.items())

    totals = dict(changes.rdd.mapPartitions(slow_partition)
                  .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), numPartitions=2)
                  .mapValues(list).collect())
    print("RESULT=" + json.dumps({{"totals": totals, "partitions": changes.rdd.getNumPartitions()}}))
    spark.stop()
"""


def change_digests(spark, schema_topic: str, topics: dict[str, str]):
    """One row per change of every table: its table, operation and a hash of all its columns."""
    from pyspark.sql import functions as F
    digests = None
    for table, path in topics.items():
        df = spark.read.format("replicate").option("schemaTopic", schema_topic).option("table", table).load(path)
        digest = df.select(F.lit(table).alias("table"), F.col("header__operation").alias("operation"),
                           F.hash(*df.columns).cast("long").alias("digest"))
        digests = digest if digests is None else digests.unionByName(digest)
    return digests


def undisturbed_totals(spark, schema_topic: str, topics: dict[str, str]) -> dict[str, list[int]]:
    from pyspark.sql import functions as F
    rows = (change_digests(spark, schema_topic, topics).groupBy("table", "operation")
            .agg(F.count("*"), F.sum("digest")).collect())
    return {f"{table}/{operation}": [count, digest] for table, operation, count, digest in rows}


class Marker:
    """One task of the slow stage that got through its partition, as its marker file names it."""

    def __init__(self, name: str):
        stage, partition, attempt, _task_id, self.worker = name.split("-", 4)
        self.partition = (int(stage), int(partition))
        self.attempt = int(attempt)


def markers(directory) -> list[Marker]:
    return [Marker(path.name) for path in directory.iterdir()]


@pytest.fixture(scope="module")
def many_task_zone(tmp_path_factory):
    """Three tables in one container file per topic: with 96k splits, about 25 tasks."""
    return generate_landing_zone(tmp_path_factory.mktemp("fault-zone") / "landing", framing="avro", messages=5000,
                                 files_per_topic=1, sync_interval=2048, seed=401)


def test_killing_a_worker_and_its_executor_mid_job_loses_and_duplicates_nothing(spark, tmp_path, many_task_zone):
    zone = many_task_zone
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    topics = {t.name: str(zone.topics[t.topic]) for t in zone.tables}
    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        code = DRIVER.format(tests_dir=str(TESTS_DIR), master=cluster.master_url, schema_topic=str(zone.schema_topic),
                             topics=topics, task_seconds=TASK_SECONDS, worker_variable=WORKER_VARIABLE,
                             markers=str(marker_dir))
        driver = DriverProcess(code, tmp_path / "driver.log")
        try:
            def both_workers_finished_tasks():
                driver.check_running()
                done = markers(marker_dir)
                return done if all(sum(m.worker == w.name for m in done) >= 2 for w in cluster.workers) else None

            finished_before = wait_for(both_workers_finished_tasks, "tasks to finish on both workers",
                                       cluster.daemons, timeout=JOB_TIMEOUT)
            victim = cluster.workers[-1]
            executors = victim.executor_pids()
            assert executors, "the victim worker should be running an executor"
            victim.kill()
            killed_at = time.monotonic()
            while any(process_alive(pid) for pid in executors) and time.monotonic() - killed_at < 10:
                time.sleep(0.1)
            assert not any(process_alive(pid) for pid in executors), "the executor JVM survived its worker's kill"

            outcome = driver.result(timeout=JOB_TIMEOUT)
        finally:
            driver.stop()

    assert len(finished_before) < outcome["partitions"], "the worker was killed after the job had finished"
    survivor = cluster.workers[0].name
    after = markers(marker_dir)
    runs = Counter(m.partition for m in after)
    assert any(m.worker == survivor and (m.attempt > 0 or runs[m.partition] > 1) for m in after), \
        "no task was run again after the kill"

    assert outcome["totals"] == undisturbed_totals(spark, str(zone.schema_topic), topics)
    counts = {}
    for key, (count, _) in outcome["totals"].items():
        table, operation = key.split("/")
        counts.setdefault(table, {})[operation] = count
    assert counts == zone.expected_counts()
