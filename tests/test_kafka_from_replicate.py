"""``from_replicate`` on Spark's own Kafka DataFrame, with the metadata in a Kafka schema topic
(``kafka.bootstrap.servers`` + ``schemaTopic``): the same rows as ``format("replicate")`` over the
same topic (count and checksum per operation), in batch, in a stream and in SQL."""

from __future__ import annotations

import pytest

from _kafka import PREFIX, fingerprint, kafka_read, kafka_values, memory_sink
from spark_replicate.functions import from_replicate
from spark_replicate.generate import SCHEMA_TOPIC

pytestmark = pytest.mark.kafka

TABLE, TOPIC = "SALES.ORDERS", "sales"


@pytest.fixture(scope="module")
def options(kafka_bootstrap) -> dict[str, str]:
    return {"kafka.bootstrap.servers": kafka_bootstrap, "schemaTopic": PREFIX + SCHEMA_TOPIC, "table": TABLE}


@pytest.fixture(scope="module")
def expected(spark, kafka_zone, kafka_bootstrap):
    reader = kafka_read(spark, kafka_bootstrap, TOPIC, table=TABLE)
    return reader.schema, fingerprint(reader)


def rows(decoded):
    return decoded.where("r IS NOT NULL").select("r.*")


def test_a_batch_equals_the_reader_over_the_same_topic(spark, kafka_bootstrap, options, expected):
    decoded = rows(kafka_values(spark, kafka_bootstrap, TOPIC).select(from_replicate("value", options).alias("r")))
    assert (decoded.schema, fingerprint(decoded)) == expected


@pytest.mark.smoke
def test_a_stream_equals_the_reader_over_the_same_topic(spark, kafka_bootstrap, options, expected):
    stream = kafka_values(spark, kafka_bootstrap, TOPIC, stream=True).select(from_replicate("value", options).alias("r"))
    assert fingerprint(rows(memory_sink(spark, stream, "from_replicate_kafka"))) == expected[1]


def test_sql_equals_the_reader_over_the_same_topic(spark, kafka_bootstrap, options, expected):
    kafka_values(spark, kafka_bootstrap, TOPIC).createOrReplaceTempView("kafka_sales")
    arguments = ", ".join(f"'{k}', '{v}'" for k, v in options.items())
    decoded = spark.sql(f"SELECT from_replicate(value, map({arguments})) AS r FROM kafka_sales")
    assert fingerprint(rows(decoded)) == expected[1]
