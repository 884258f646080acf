"""The connector on a real Spark standalone cluster: a master and a worker started with pyspark's
own ``bin/spark-class``, a driver (in a subprocess: the shared test session is local) that puts
the jar on the session with ``configure_spark``, and executors in their own JVMs that must get
the jar shipped to them to read anything."""

from __future__ import annotations

import json
import zlib

import pytest

from _cluster import standalone_cluster
from conftest import run_python

TABLE = "HR.EMPLOYEES"


def checksum_text(values) -> str:
    """What Spark's ``concat_ws('|', ...)`` makes of the values: nulls are left out."""
    return "|".join(v for v in values if v is not None)


def expected_checksum(zone) -> int:
    total = 0
    for m in zone.messages_for(TABLE):
        row = m.data
        text = checksum_text([m.operation, m.headers["changeSequence"] or None, str(row["EMP_ID"]),
                              row["LAST_NAME"], row["EMAIL"],
                              m.change_mask.hex().upper() if m.change_mask is not None else None])
        total += zlib.crc32(text.encode("utf-8"))
    return total


# The driver's session on the cluster: the connector's set-up with a small footprint.
SESSION = """
    builder = (SparkSession.builder.master({master!r}).appName("spark-replicate-standalone-test")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.executor.memory", "512m").config("spark.cores.max", "2")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC"))
    spark = spark_replicate.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
"""


DRIVER = """
    import json, os, sys
    from pyspark.sql import SparkSession, functions as F
    import spark_replicate

""" + SESSION + """    df = (spark.read.format("replicate").option("schemaTopic", {schema_topic!r}).option("table", {table!r})
          .load({path!r}))
    counts = {{r[0]: r[1] for r in df.groupBy("header__operation").count().collect()}}
    text = F.concat_ws("|", "header__operation", "header__change_seq", F.col("EMP_ID").cast("string"),
                       "LAST_NAME", "EMAIL", F.hex("header__change_mask"))
    checksum = df.select(F.sum(F.crc32(text))).first()[0]

    def executor_jvm(rows):
        # The Python worker of a task is forked (via pyspark's daemon) by the JVM that ran the
        # task, here the one that also ran the connector's partition reader.
        n = sum(1 for _ in rows)
        pid = os.getpid()
        for _ in range(8):
            with open(f"/proc/{{pid}}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\\0")
            if any(b"java" in part for part in cmdline[:1]):
                args = [part.decode() for part in cmdline]
                executor_id = args[args.index("--executor-id") + 1] if "--executor-id" in args else "driver"
                yield (pid, executor_id, "CoarseGrainedExecutorBackend" in " ".join(args), n)
                return
            with open(f"/proc/{{pid}}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        yield (None, None, False, n)

    readers = df.select("EMP_ID").rdd.mapPartitions(executor_jvm).collect()
    driver_jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    batch = {{"counts": counts, "checksum": checksum, "readers": readers, "driver_jvm": driver_jvm,
              "master": spark.sparkContext.master}}
"""


def test_a_standalone_cluster_reads_every_message_on_its_executors(driven, avro_zone):
    outcome = driven["batch"]
    assert outcome["master"] == driven["master"]
    assert outcome["counts"] == avro_zone.expected_counts()[TABLE]
    assert outcome["checksum"] == expected_checksum(avro_zone)

    readers = outcome["readers"]
    assert sum(n for *_, n in readers) == len(avro_zone.messages_for(TABLE))
    for jvm_pid, executor_id, is_executor_backend, _ in readers:
        assert jvm_pid is not None and jvm_pid != outcome["driver_jvm"], readers
        assert is_executor_backend and executor_id != "driver", readers


# Then, on the same session: ``spark.readStream`` with ``Trigger.AvailableNow``, batches of one file.
STREAM = """    query = (spark.readStream.format("replicate").option("schemaTopic", {schema_topic!r}).option("table", {table!r})
             .option("maxFilesPerTrigger", "1").load({path!r})
             .writeStream.format("parquet").option("path", {sink!r}).option("checkpointLocation", {checkpoint!r})
             .trigger(availableNow=True).start())
    query.awaitTermination()
    batches = [p["sources"][0]["metrics"] for p in query.recentProgress if p["numInputRows"]]
    counts = {{r[0]: r[1] for r in spark.read.parquet({sink!r}).groupBy("header__operation").count().collect()}}
    stream = {{"counts": counts, "files_per_batch": [int(m["filesRead"]) for m in batches]}}
    print("RESULT=" + json.dumps({{"batch": batch, "stream": stream}}))
    spark.stop()
"""


@pytest.fixture(scope="module")
def driven(tmp_path_factory, avro_zone) -> dict:
    """A master and one worker (2 cores, 1g) on 127.0.0.1, and one driver program on it (a driver
    and its executors take a while to start: the batch read and the stream share them); the
    driver's results, with the master URL."""
    workdir = tmp_path_factory.mktemp("standalone")
    with standalone_cluster(workdir / "cluster", workers=1, cores=2, memory="1g") as cluster:
        code = (DRIVER + STREAM).format(master=cluster.master_url, schema_topic=str(avro_zone.schema_topic),
                                        table=TABLE, path=str(avro_zone.topics["hr"]), sink=str(workdir / "sink"),
                                        checkpoint=str(workdir / "checkpoint"))
        result = run_python(code, timeout=300)
    assert result.returncode == 0, result.stderr[-5000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT="))
    return {**json.loads(line.removeprefix("RESULT=")), "master": cluster.master_url}


def test_a_stream_on_a_standalone_cluster_reads_every_landed_file_once(driven, avro_zone):
    """``spark.readStream`` with ``Trigger.AvailableNow``: batches of one file, read by the executors."""
    outcome = driven["stream"]
    assert outcome["counts"] == avro_zone.expected_counts()[TABLE]
    data_files = list(avro_zone.topics["hr"].iterdir())
    assert outcome["files_per_batch"] == [1] * len(data_files)
