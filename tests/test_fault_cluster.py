"""A worker dies mid-job: the read must still return every message exactly once.

A real standalone cluster (master and two one-core workers on 127.0.0.1) reads a landing zone cut
into many small tasks (container files split at sync markers). A driver in its own process first
computes, undisturbed, a per table and operation count and order-independent checksum over all
output columns; then it computes the same through a job slowed down per partition, with a shuffle
after it. Once tasks have finished on both workers, one worker and its executor are killed
(SIGKILL to their process group). Spark must reschedule the lost tasks, recompute the lost map
output, and end with exactly the undisturbed result: nothing lost, nothing read twice."""

from __future__ import annotations

import time

import pytest

from _cluster import WORKER_VARIABLE, DriverProcess, process_alive, standalone_cluster, wait_for
from spark_replicate.generate import default_tables, generate_landing_zone

TABLES = [t.name for t in default_tables()]
TASK_SECONDS = 0.5  # the slowdown of each task of the disturbed job
JOB_TIMEOUT = 240

DRIVER = """
    import json, os, time
    from pathlib import Path
    from pyspark import TaskContext
    from pyspark.sql import SparkSession, functions as F
    import spark_replicate

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

    def digests(table, topic):
        df = (spark.read.format("replicate").option("schemaTopic", {schema_topic!r}).option("table", table)
              .load(os.path.join({root!r}, topic)))
        return df.select(F.lit(table).alias("table"), F.col("header__operation").alias("operation"),
                         F.hash(*df.columns).cast("long").alias("digest"))

    changes = None
    for table, topic in {tables!r}:
        changes = digests(table, topic) if changes is None else changes.unionByName(digests(table, topic))

    undisturbed = {{f"{{r[0]}}/{{r[1]}}": [r[2], r[3]] for r in
                   changes.groupBy("table", "operation").agg(F.count("*"), F.sum("digest")).collect()}}

    def slow_partition(rows):
        totals = {{}}
        for row in rows:
            key = f"{{row.table}}/{{row.operation}}"
            count, digest = totals.get(key, (0, 0))
            totals[key] = (count + 1, digest + row.digest)
        time.sleep({task_seconds})
        task = TaskContext.get()
        marker = (f"{{task.stageId()}}-{{task.partitionId()}}-{{task.stageAttemptId()}}-{{task.attemptNumber()}}-"
                  f"{{os.environ.get({worker_variable!r}, 'unknown')}}")
        Path({markers!r}, marker).touch()
        return iter(totals.items())

    disturbed = dict(changes.rdd.mapPartitions(slow_partition)
                     .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]), numPartitions=2)
                     .mapValues(list).collect())
    print("RESULT=" + json.dumps({{"undisturbed": undisturbed, "disturbed": disturbed,
                                  "partitions": changes.rdd.getNumPartitions()}}))
    spark.stop()
"""


class Marker:
    """One finished task of the slow stage, as its marker file names it."""

    def __init__(self, name: str):
        stage, partition, stage_attempt, attempt, self.worker = name.split("-", 4)
        self.stage, self.partition = int(stage), int(partition)
        self.retry = int(stage_attempt) > 0 or int(attempt) > 0


def markers(directory) -> list[Marker]:
    return [Marker(path.name) for path in directory.iterdir()]


@pytest.fixture(scope="module")
def many_task_zone(tmp_path_factory):
    """Three tables in one container file per topic: with 96k splits, about 40 tasks."""
    return generate_landing_zone(tmp_path_factory.mktemp("fault-zone") / "landing", framing="avro", messages=8000,
                                 files_per_topic=1, sync_interval=2048, seed=401)


def test_killing_a_worker_and_its_executor_mid_job_loses_and_duplicates_nothing(tmp_path, many_task_zone):
    zone = many_task_zone
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    with standalone_cluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        code = DRIVER.format(master=cluster.master_url, schema_topic=str(zone.schema_topic), root=str(zone.root),
                             tables=[(t.name, t.topic) for t in zone.tables], task_seconds=TASK_SECONDS,
                             worker_variable=WORKER_VARIABLE, markers=str(marker_dir))
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
    assert any(m.retry and m.worker == survivor for m in after), "no task was re-run after the kill"

    assert outcome["disturbed"] == outcome["undisturbed"]
    counts = {}
    for key, (count, _) in outcome["disturbed"].items():
        table, operation = key.split("/")
        counts.setdefault(table, {})[operation] = count
    assert counts == zone.expected_counts()
