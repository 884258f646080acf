"""A real Apache Kafka broker for the tests: one KRaft node (broker and controller) on free ports of
127.0.0.1, from Kafka's own jars on Maven Central (their class path resolved by Maven from
``tests/kafka/pom.xml``), in its own process group, stopped afterwards."""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaProducer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from _cluster import SHORT_JVM_OPTIONS, Daemon, free_port, listening, wait_for
from spark_replicate.generate import SCHEMA_TOPIC

# The topics of the shared Kafka zone (conftest's `kafka_zone`) are the landed ones' names after this.
PREFIX = "read-"

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"


def _cluster_id() -> str:
    """A random Kafka cluster id. Kafka's own ids never start with '-', which its command line would
    read as an option; one in 64 random ones would, so those are drawn again."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def broker_classpath(workdir: Path) -> str:
    """The broker's class path; Maven resolves it from its local repository once it is there."""
    out = workdir / "classpath.txt"
    subprocess.run(["mvn", "-q", "-B", "-f", str(POM), "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
                   check=True, timeout=600)
    return out.read_text().strip()


@contextmanager
def kafka_broker(workdir: Path):
    """Yields the bootstrap servers (``127.0.0.1:PORT``) of a broker whose data lives in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, controller_port = free_port(), free_port()
    properties = workdir / "server.properties"
    properties.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", f"log.dirs={workdir / 'data'}",
        # One node: the internal topics cannot have more replicas than that.
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0",
        # The generator publishes records at their (past) commit times: time-based retention
        # would delete them within minutes, at the broker's first retention check.
        "log.retention.ms=-1", ""]))
    java = ["java", "-Xmx512m", *SHORT_JVM_OPTIONS.split(), "-cp", broker_classpath(workdir)]
    cluster_id = _cluster_id()
    subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties)],
                   check=True, capture_output=True, timeout=120)
    broker = Daemon("kafka-broker", [*java, "kafka.Kafka", str(properties)], workdir, dict(os.environ))
    try:
        wait_for(lambda: listening(port), "the Kafka broker", [broker])
        yield f"127.0.0.1:{port}"
    finally:
        broker.stop()


def kafka_read(spark: SparkSession, bootstrap: str, topic: str, schema_topic: bool = True, stream: bool = False,
               **options) -> DataFrame:
    """``format("replicate")`` of one topic of the Kafka zone, with its schema topic unless told not to."""
    reader = spark.readStream if stream else spark.read
    reader = reader.format("replicate").option("kafka.bootstrap.servers", bootstrap).option("subscribe", PREFIX + topic)
    if schema_topic:
        reader = reader.option("schemaTopic", PREFIX + SCHEMA_TOPIC)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def kafka_values(spark: SparkSession, bootstrap: str, topic: str, stream: bool = False, **options) -> DataFrame:
    """Spark's own Kafka DataFrame of one topic of the Kafka zone, from its earliest offset, with
    Spark's Kafka ``options``."""
    reader = spark.readStream if stream else spark.read
    return (reader.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", PREFIX + topic)
            .option("startingOffsets", "earliest").options(**options).load())


def memory_sink(spark: SparkSession, stream: DataFrame, name: str) -> DataFrame:
    """Runs ``stream`` to its end (``Trigger.AvailableNow``) into a memory table; returns the table."""
    query = stream.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return spark.table(name)


def publish(bootstrap: str, topic: str, records) -> None:
    """Sends ``(partition, key, value)`` records in order and waits for them all."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_in_flight_requests_per_connection=1)
    try:
        for partition, key, value in records:
            producer.send(topic, value=value, key=key, partition=partition)
        producer.flush()
    finally:
        producer.close()


def fingerprint(df: DataFrame) -> dict[str, tuple[int, int]]:
    """Per operation: (rows, sum of a hash of every column but ``header__source``). In SQL, so
    that it runs on the DataFrame's own session, classic or Spark Connect."""
    columns = ", ".join(f"`{c}`" for c in df.columns if c != "header__source")
    rows = df.sparkSession.sql("SELECT header__operation, count(1) AS n, "
                               f"sum(CAST(xxhash64({columns}) AS DECIMAL(38,0))) AS h FROM {{df}} "
                               "GROUP BY header__operation", df=df).collect()
    return {r["header__operation"]: (r["n"], int(r["h"])) for r in rows}


def generic_fingerprint(df: DataFrame) -> dict[tuple[str, str], tuple[int, int]]:
    """The generic layout's :func:`fingerprint`, per table and operation, of the images as JSON."""
    rows = (df.groupBy("header__table_name", "header__operation")
            .agg(F.count(F.lit(1)), F.sum(F.xxhash64(F.to_json("data"), "header__change_seq").cast("decimal(38,0)")))
            .collect())
    return {(r[0], r[1]): (r[2], int(r[3])) for r in rows}
