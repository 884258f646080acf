"""The Kafka profile of ``make bench``: a profile's landed messages published to a local Apache
Kafka broker (tests/_kafka.py: one KRaft node from Kafka's own jars), 3 partitions, and read in one
session by ``format("replicate")`` over Kafka, by Spark's Kafka source + spark-avro's ``from_avro``
twice (the hand-written way), and by the floor: Spark's Kafka source alone, ``sum(length(value))``.

The contenders are checked to return the same rows (count and checksum) before they are timed.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from fastavro import reader
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import contenders as C
from profiles import Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

PARTITIONS = 3
DATA_TOPIC, SCHEMA_TOPIC = "bench", "bench-schema"


def publish(ds: Dataset, bootstrap: str) -> None:
    """The landed data messages round-robin over the data topic's partitions; the metadata messages
    to the schema topic."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(DATA_TOPIC, PARTITIONS, 1), NewTopic(SCHEMA_TOPIC, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1)
    for topic, files in ((SCHEMA_TOPIC, sorted(ds.schema_dir.glob("*.avro"))), (DATA_TOPIC, ds.data_files)):
        n = 0
        for path in files:
            with path.open("rb") as f:
                for record in reader(f):
                    producer.send(topic, value=record["value"], partition=n % PARTITIONS if topic == DATA_TOPIC else 0)
                    n += 1
    producer.flush()
    producer.close()


def kafka_records(spark: SparkSession, bootstrap: str) -> DataFrame:
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", DATA_TOPIC).load())


def connector(spark: SparkSession, ds: Dataset, bootstrap: str) -> DataFrame:
    return (spark.read.format("replicate").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", DATA_TOPIC).option("schemaTopic", SCHEMA_TOPIC)
            .option("table", ds.profile.table_name).option("sourceTypes", "false").load())


def contenders(spark: SparkSession, ds: Dataset, info: dict, bootstrap: str) -> list[C.Contender]:
    return [
        C.Contender("kafka_connector", 'connector: format("replicate") over Kafka, sourceTypes=false',
                    lambda: connector(spark, ds, bootstrap)),
        C.Contender("kafka_from_avro", "Spark's Kafka source + from_avro twice",
                    lambda: C.decode_from_avro(kafka_records(spark, bootstrap), info)),
        C.Contender("kafka_floor", "floor: Spark's Kafka source, sum(length(value))",
                    lambda: kafka_records(spark, bootstrap).agg(F.count(F.lit(1)).alias("messages"),
                                                                F.sum(F.length("value")).alias("bytes")),
                    is_floor=True),
    ]


def bench_kafka(make_session, measure, ds: Dataset, runs: int, workdir: Path, log) -> dict:
    """``make_session(kafka=True)`` gives a session with Spark's Kafka source; ``measure`` times."""
    import pydecode
    from _kafka import kafka_broker

    with kafka_broker(workdir / "kafka-broker") as bootstrap:
        log(f"  publishing {ds.profile.name} to Kafka ({PARTITIONS} partitions) ...")
        publish(ds, bootstrap)
        spark = make_session()
        try:
            info = pydecode.table_info(str(ds.schema_dir), ds.profile.table_name)
            all_contenders = contenders(spark, ds, info, bootstrap)
            messages = sum(ds.counts.values())
            ours, theirs = (C.checksum(c.build()) for c in all_contenders[:2])
            if (ours["rows"], ours["checksum"]) != (theirs["rows"], theirs["checksum"]) or ours["rows"] != messages:
                raise SystemExit(f"Kafka contenders disagree: {ours['rows']} rows, {ours['checksum']} vs "
                                 f"{theirs['rows']} rows, {theirs['checksum']} ({messages} messages)")
            log(f"    both decode {messages:,} rows, checksum {ours['checksum']}")
            times = measure(spark, all_contenders, [], runs).times
        finally:
            spark.stop()
    median = {k: statistics.median(v) for k, v in times.items()}
    return {
        "profile": ds.profile.name, "messages": messages, "partitions": PARTITIONS,
        "contenders": {c.key: {"label": c.label, "times_s": [round(t, 4) for t in times[c.key]],
                               "median_s": round(median[c.key], 4), "rows_per_s": round(messages / median[c.key])}
                       for c in all_contenders},
        "ratios": {
            "kafka_connector_vs_from_avro": round(median["kafka_from_avro"] / median["kafka_connector"], 3),
            "kafka_connector_vs_floor": round(median["kafka_connector"] / median["kafka_floor"], 3),
        },
    }
