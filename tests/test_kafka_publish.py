"""The generator publishes a Replicate task to a real Apache Kafka broker (``generate --kafka``):
the metadata topic and the data topics, their partitions, every message at its landed offset with
its key and commit time. What the broker holds is compared with the landed Avro container files,
read with fastavro: the two sides of every later Kafka-versus-files comparison."""

from __future__ import annotations

import itertools
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fastavro import reader
from kafka import KafkaConsumer, TopicPartition

from spark_replicate.generate import SCHEMA_TOPIC, generate_landing_zone

pytestmark = pytest.mark.kafka


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def landed(topic_dir: Path) -> set[tuple]:
    """(partition, offset, timestamp in milliseconds, key, value) of every record of a landed topic."""
    records = set()
    for path in sorted(topic_dir.glob("*.avro")):
        with path.open("rb") as f:
            records |= {(r["partition"], r["offset"], (r["timestamp"] - EPOCH) // timedelta(milliseconds=1), r["key"],
                         r["value"]) for r in reader(f)}
    return records


def published(bootstrap: str, topic: str) -> set[tuple]:
    """The same of every record of a Kafka topic, read from its first offset to its end."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)
        records = set()
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            for batch in consumer.poll(timeout_ms=1000).values():
                records |= {(r.partition, r.offset, r.timestamp, r.key, r.value) for r in batch}
        return records
    finally:
        consumer.close()


_setups = itertools.count()


@pytest.fixture(scope="module")
def zone(tmp_path_factory, kafka_bootstrap):
    """The landed zone and the prefix of its topics, a new one at each set-up: pytest-xdist's worksteal
    can run this module's tests on one worker in two turns, setting the fixture up twice on the
    worker's one broker, where the same topics exist already."""
    prefix = f"publish{next(_setups)}-"
    return generate_landing_zone(tmp_path_factory.mktemp("kafka-zone") / "landing", messages=1200, seed=171,
                                 framing="avro", files_per_topic=3, md_in_data_topics=True,
                                 kafka=kafka_bootstrap, kafka_topic_prefix=prefix), prefix


def test_every_topic_holds_exactly_the_landed_messages(zone, kafka_bootstrap):
    zone, prefix = zone
    topics = {SCHEMA_TOPIC: zone.schema_topic, **zone.topics}
    for name, directory in topics.items():
        expected = landed(directory)
        assert expected, name
        assert published(kafka_bootstrap, prefix + name) == expected, name


def test_data_topics_keep_the_partitions_and_keys_replicate_sets(zone, kafka_bootstrap):
    zone, prefix = zone
    for name in zone.topics:
        records = published(kafka_bootstrap, prefix + name)
        assert {partition for partition, *_ in records} == {0, 1, 2}
        by_offset = {(m.partition, m.offset): m.key for m in zone.messages if m.topic == name}
        assert {(p, o): key for p, o, _, key, _ in records if (p, o) in by_offset} == by_offset


def test_topics_that_exist_already_are_refused(tmp_path, kafka_bootstrap, zone):
    with pytest.raises(ValueError, match="exists already"):
        generate_landing_zone(tmp_path / "again", messages=10, kafka=kafka_bootstrap, kafka_topic_prefix=zone[1])


def test_the_cli_publishes_with_a_topic_prefix(tmp_path, kafka_bootstrap):
    done = subprocess.run([sys.executable, "-m", "spark_replicate.cli", "generate", str(tmp_path / "cli"),
                           "--messages", "200", "--kafka", kafka_bootstrap, "--kafka-topic-prefix", "cli-"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert published(kafka_bootstrap, "cli-hr") == landed(tmp_path / "cli" / "hr")
