"""The Kafka profile of ``make bench``: a profile's landed messages published to a local Apache
Kafka broker (tests/_kafka.py: one KRaft node from Kafka's own jars), 3 partitions, and read in one
session by ``format("replicate")`` over Kafka, by ``from_replicate`` on Spark's Kafka DataFrame, by
Spark's Kafka source + spark-avro's ``from_avro`` twice (the hand-written way), and by the floor:
Spark's Kafka source alone, ``sum(length(value))``. The last three again with Spark's Kafka source given
what the connector's batch read gives it by default (the cut into offset ranges, the records per poll),
outside the targets.

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
# Each ratio: (numerator, denominator) contender, as the headline ratios are taken (report.py): the
# other's time / ours, and ours / the floor's.
RATIOS = {
    "kafka_connector_vs_from_avro": ("kafka_from_avro", "kafka_connector"),
    "kafka_from_replicate_vs_from_avro": ("kafka_from_avro", "kafka_from_replicate"),
    "kafka_connector_vs_floor": ("kafka_connector", "kafka_floor"),
}
# The same ratios with every contender's Kafka source given what the connector's batch read gives it
# by default, which Spark's Kafka source does only when told: how much of the connector's lead is that,
# and how much is decoding. Outside the targets.
ALIKE_RATIOS = {
    "kafka_connector_vs_from_avro_alike": ("kafka_from_avro_alike", "kafka_connector"),
    "kafka_from_replicate_alike_vs_from_avro_alike": ("kafka_from_avro_alike", "kafka_from_replicate_alike"),
    "kafka_connector_vs_floor_alike": ("kafka_connector", "kafka_floor_alike"),
}
RANGES_PER_CORE = 3  # as the connector's batch read asks Spark's Kafka source for (KafkaOptions.batchSource)
POLL_RECORDS = 100000  # the connector's kafka.max.poll.records (KafkaOptions.polling)


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


def kafka_records(spark: SparkSession, bootstrap: str, alike: bool = False) -> DataFrame:
    """Spark's Kafka DataFrame of the data topic; ``alike``: with the options the connector's batch
    read gives Spark's Kafka source by default."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", DATA_TOPIC)
    if alike:
        reader = (reader.option("minPartitions", RANGES_PER_CORE * spark.sparkContext.defaultParallelism)
                  .option("kafka.max.poll.records", POLL_RECORDS))
    return reader.load()


def options(ds: Dataset, bootstrap: str) -> dict[str, str]:
    """The connector's options, for the reader and for ``from_replicate`` alike."""
    return {"kafka.bootstrap.servers": bootstrap, "schemaTopic": SCHEMA_TOPIC, "table": ds.profile.table_name,
            "sourceTypes": "false"}


def connector(spark: SparkSession, ds: Dataset, bootstrap: str) -> DataFrame:
    return spark.read.format("replicate").options(**options(ds, bootstrap)).option("subscribe", DATA_TOPIC).load()


def from_replicate(spark: SparkSession, ds: Dataset, bootstrap: str, alike: bool = False) -> DataFrame:
    from spark_replicate.functions import from_replicate as decode

    return (kafka_records(spark, bootstrap, alike).select(decode("value", options(ds, bootstrap)).alias("r"))
            .where("r IS NOT NULL").select("r.*"))


def floor(spark: SparkSession, bootstrap: str, alike: bool = False) -> DataFrame:
    return kafka_records(spark, bootstrap, alike).agg(F.count(F.lit(1)).alias("messages"),
                                                    F.sum(F.length("value")).alias("bytes"))


def contenders(spark: SparkSession, ds: Dataset, info: dict, bootstrap: str) -> list[C.Contender]:
    alike = (f"given the connector's defaults (minPartitions {RANGES_PER_CORE} per core, "
             f"kafka.max.poll.records {POLL_RECORDS})")
    return [
        C.Contender("kafka_connector", 'connector: format("replicate") over Kafka, sourceTypes=false',
                    lambda: connector(spark, ds, bootstrap)),
        C.Contender("kafka_from_replicate", "from_replicate on Spark's Kafka DataFrame, sourceTypes=false",
                    lambda: from_replicate(spark, ds, bootstrap)),
        C.Contender("kafka_from_avro", "Spark's Kafka source + from_avro twice",
                    lambda: C.decode_from_avro(kafka_records(spark, bootstrap), info)),
        C.Contender("kafka_floor", "floor: Spark's Kafka source, sum(length(value))",
                    lambda: floor(spark, bootstrap), is_floor=True),
        C.Contender("kafka_from_replicate_alike", f"from_replicate, Spark's Kafka source {alike}",
                    lambda: from_replicate(spark, ds, bootstrap, alike=True)),
        C.Contender("kafka_from_avro_alike", f"from_avro twice, Spark's Kafka source {alike}",
                    lambda: C.decode_from_avro(kafka_records(spark, bootstrap, alike=True), info)),
        C.Contender("kafka_floor_alike", f"floor, Spark's Kafka source {alike}",
                    lambda: floor(spark, bootstrap, alike=True), is_floor=True),
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
            sums = {c.key: C.checksum(c.build()) for c in all_contenders if not c.is_floor}
            seen = {(s["rows"], s["checksum"]) for s in sums.values()}
            if len(seen) != 1 or next(iter(seen))[0] != messages:
                raise SystemExit(f"Kafka contenders disagree ({messages} messages): " + ", ".join(
                    f"{key} {s['rows']} rows, checksum {s['checksum']}" for key, s in sums.items()))
            log(f"    all {len(sums)} decode {messages:,} rows, checksum {next(iter(seen))[1]}")
            times = measure(spark, all_contenders, [], runs).times
        finally:
            spark.stop()
    median = {k: statistics.median(v) for k, v in times.items()}
    return {
        "profile": ds.profile.name, "messages": messages, "partitions": PARTITIONS,
        "contenders": {c.key: {"label": c.label, "times_s": [round(t, 4) for t in times[c.key]],
                               "median_s": round(median[c.key], 4), "rows_per_s": round(messages / median[c.key])}
                       for c in all_contenders},
        "ratios": ratios(median),
        "alike_ratios": ratios(median, ALIKE_RATIOS),
    }


def ratios(seconds: dict[str, float], which: dict[str, tuple[str, str]] = RATIOS) -> dict[str, float]:
    """The ratios ``which`` (:data:`RATIOS` unless told) of one time per contender (the medians, or the
    fastest rounds)."""
    return {name: round(seconds[a] / seconds[b], 3) for name, (a, b) in which.items()}
