"""Kafka over Spark Connect: the run's Connect server has Spark's Kafka source on its class path
(conftest's ``connect_url``), so a Connect client reads Kafka with ``format("replicate")`` and
decodes Spark's Kafka DataFrame with ``from_replicate``, as a classic session does."""

from __future__ import annotations

import pytest

from _kafka import PREFIX, fingerprint, kafka_read, kafka_values
from spark_replicate.generate import SCHEMA_TOPIC

pytestmark = [pytest.mark.kafka, pytest.mark.connect]

TABLE, TOPIC = "SALES.ORDERS", "sales"


@pytest.fixture(scope="module")
def expected(spark, kafka_zone, kafka_bootstrap):
    return fingerprint(kafka_read(spark, kafka_bootstrap, TOPIC, table=TABLE))


@pytest.mark.smoke
def test_the_reader_over_connect_equals_the_classic_one(remote, kafka_bootstrap, expected):
    assert fingerprint(kafka_read(remote, kafka_bootstrap, TOPIC, table=TABLE)) == expected


def test_from_replicate_over_connect_equals_the_classic_reader(remote, kafka_bootstrap, expected):
    # selectExpr builds the call on the client's own (Connect) columns, and the server resolves it.
    options = {"kafka.bootstrap.servers": kafka_bootstrap, "schemaTopic": PREFIX + SCHEMA_TOPIC, "table": TABLE}
    arguments = ", ".join(f"'{k}', '{v}'" for k, v in options.items())
    decoded = kafka_values(remote, kafka_bootstrap, TOPIC).selectExpr(f"from_replicate(value, map({arguments})) AS r")
    assert fingerprint(decoded.where("r IS NOT NULL").select("r.*")) == expected
