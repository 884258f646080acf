"""Publishes a generated Replicate task to Apache Kafka, as Replicate's Kafka target does.

Each landed topic (the metadata topic and the data topics) becomes a Kafka topic of the same
partitions; every message goes to the partition it was landed in, with its key (the table name
for metadata messages, the primary key values for data messages) and its commit time as the
record timestamp. The topics must be new: each message's Kafka offset must equal its landed
offset, so that a read of the topics and a read of the landed files can be compared message by
message.

Needs the ``kafka`` extra (``pip install spark-replicate[kafka]``), a pure-Python client.
"""

from __future__ import annotations


class KafkaTopics:
    """The Kafka side of a generated task: ``publish`` per message, ``close`` at the end."""

    def __init__(self, bootstrap_servers: str, topic_prefix: str = ""):
        try:
            from kafka import KafkaAdminClient, KafkaProducer
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise RuntimeError("publishing to Kafka needs the kafka-python client: "
                               "pip install 'spark-replicate[kafka]'") from e
        self._bootstrap, self._prefix = bootstrap_servers, topic_prefix
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="spark-replicate-generate")
        # Ordered per partition: one request in flight, so retries cannot reorder the offsets.
        self._producer = KafkaProducer(bootstrap_servers=bootstrap_servers, acks="all",
                                       max_in_flight_requests_per_connection=1, linger_ms=20)
        self._sent: list = []

    def topic(self, name: str) -> str:
        return self._prefix + name

    def create(self, name: str, partitions: int) -> None:
        """Creates the topic of a landed one; a topic that exists already is refused."""
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        try:
            self._admin.create_topics([NewTopic(self.topic(name), num_partitions=partitions, replication_factor=1)])
        except TopicAlreadyExistsError as e:
            raise ValueError(f"Kafka topic {self.topic(name)} exists already; the generator publishes to new "
                             "topics only (choose another topic prefix)") from e

    def publish(self, name: str, partition: int, offset: int, envelope: bytes, key: bytes | None,
                timestamp_ms: int) -> None:
        future = self._producer.send(self.topic(name), value=envelope, key=key, partition=partition,
                                     timestamp_ms=timestamp_ms)
        self._sent.append((name, partition, offset, future))
        if len(self._sent) >= _CHECK_EVERY:
            self._check_sent()

    def close(self) -> None:
        """Waits for every message and checks it got its landed offset."""
        try:
            self._producer.flush()
            self._check_sent()
        finally:
            self._producer.close()
            self._admin.close()

    def _check_sent(self) -> None:
        """Waits for the messages sent so far; each must have the offset it was landed at."""
        for name, partition, offset, future in self._sent:
            got = future.get(timeout=60).offset
            if got != offset:
                raise RuntimeError(f"{self.topic(name)}[{partition}] gave offset {got} to the message landed "
                                   f"at offset {offset}: the topic was not new")
        self._sent.clear()


# Sent messages are checked (and forgotten) in batches, so memory does not grow with the task.
_CHECK_EVERY = 10_000
