"""``metadataWait`` over Kafka: data published before its metadata. The Kafka zone's ``hr`` topic
(HR.EMPLOYEES and HR.DEPARTMENTS) is read in the generic layout with a schema topic of its own
that lacks HR.EMPLOYEES' metadata when the query is planned; a thread publishes it later, or
never. A task meeting an unknown schema id re-reads the schema topic with a plain consumer until
the id appears or the wait runs out; then ``mode`` decides. Batch, stream and ``from_replicate``."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from _kafka import PREFIX, generic_fingerprint, kafka_read, kafka_values, memory_sink, publish
from conftest import raises_replicate, read_metrics
from spark_replicate.functions import from_replicate

pytestmark = pytest.mark.kafka

TOPIC, LATE_TABLE = "hr", "HR.EMPLOYEES"


class LateSchemaTopic:
    """A new schema topic with every metadata message of the zone but LATE_TABLE's."""

    def __init__(self, zone, bootstrap: str):
        from test_kafka_publish import landed

        self.bootstrap, self.name = bootstrap, f"late-schema-{uuid.uuid4().hex[:8]}"
        self.late_ids = [m.schema_id for m in zone.metadata if m.table == LATE_TABLE]
        records = [(0, key, value) for _, _, _, key, value in sorted(landed(zone.schema_topic))]
        late = lambda value: any(schema_id.encode() in value for schema_id in self.late_ids)
        self.held = [r for r in records if late(r[2])]
        assert self.held
        publish(bootstrap, self.name, [r for r in records if not late(r[2])])
        self.late_messages = len(zone.messages_for(LATE_TABLE))
        self.messages = sum(1 for m in zone.messages if m.topic == TOPIC)

    def publish_held(self, after: float) -> threading.Thread:
        """Publishes LATE_TABLE's metadata ``after`` seconds from now, from a thread."""
        thread = threading.Thread(target=lambda: (time.sleep(after), publish(self.bootstrap, self.name, self.held)))
        thread.start()
        return thread


@pytest.fixture
def late(kafka_zone, kafka_bootstrap) -> LateSchemaTopic:
    return LateSchemaTopic(kafka_zone, kafka_bootstrap)


@pytest.fixture(scope="module")
def expected(spark, kafka_zone, kafka_bootstrap):
    """The topic read with all of its metadata there."""
    return generic_fingerprint(kafka_read(spark, kafka_bootstrap, TOPIC, layout="generic"))


def read(spark, late: LateSchemaTopic, stream: bool = False, **options):
    return kafka_read(spark, late.bootstrap, TOPIC, schema_topic=False, stream=stream, schemaTopic=late.name,
                      layout="generic", **options)


def test_a_batch_waits_for_metadata_published_after_it_was_planned(spark, late, expected):
    frame = read(spark, late, metadataWait="60s")
    publishing = late.publish_held(after=2)
    got = generic_fingerprint(frame)
    publishing.join()
    assert read_metrics(spark)["malformed"] == 0
    assert got == expected and any(table == LATE_TABLE.split(".")[1] for table, _ in got)


def test_failfast_names_the_schema_id_and_the_record_when_the_wait_runs_out(spark, late):
    with raises_replicate("REPLICATE_UNKNOWN_SCHEMA_ID", "is unknown", f"topic {PREFIX}{TOPIC}, partition") as error:
        read(spark, late, metadataWait="500ms").collect()
    assert any(f"schema id {schema_id} is unknown" in error[0] for schema_id in late.late_ids)


def test_permissive_quarantines_what_the_wait_did_not_bring(spark, late):
    rows = read(spark, late, metadataWait="1s", mode="PERMISSIVE").select("_corrupt_record.reason").collect()
    reasons = [r.reason for r in rows if r.reason is not None]
    assert len(reasons) == late.late_messages and set(reasons) == {"REPLICATE_UNKNOWN_SCHEMA_ID"}
    assert len(rows) == late.messages


def test_a_stream_waits_for_metadata_published_after_it_started(spark, late, expected):
    frame = read(spark, late, stream=True, metadataWait="60s", startingOffsets="earliest")
    publishing = late.publish_held(after=2)
    written = memory_sink(spark, frame, "late_metadata_waited")
    publishing.join()
    assert generic_fingerprint(written) == expected


def test_a_stream_quarantines_what_the_wait_did_not_bring(spark, late):
    frame = read(spark, late, stream=True, metadataWait="1s", mode="PERMISSIVE", startingOffsets="earliest")
    written = memory_sink(spark, frame, "late_metadata_quarantined")
    assert written.count() == late.messages
    assert written.where("_corrupt_record IS NOT NULL").select("_corrupt_record.reason").distinct().collect() == \
        [("REPLICATE_UNKNOWN_SCHEMA_ID",)]
    assert written.where("_corrupt_record IS NOT NULL").count() == late.late_messages


def test_from_replicate_on_a_kafka_dataframe_waits_as_the_reader_does(spark, late, expected):
    decoded = kafka_values(spark, late.bootstrap, TOPIC).select(from_replicate("value", {
        "kafka.bootstrap.servers": late.bootstrap, "schemaTopic": late.name, "layout": "generic",
        "metadataWait": "60s"}).alias("r"))
    publishing = late.publish_held(after=2)
    got = generic_fingerprint(decoded.where("r IS NOT NULL").select("r.*"))
    publishing.join()
    assert got == expected
