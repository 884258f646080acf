"""``apply_topic(transactional=True)`` (README "Applying changes") against the generator's truth.

The zone's transactions span HR.EMPLOYEES and HR.DEPARTMENTS and their events two partitions,
landed one file per message. The files land in batches cut inside transactions, some events of
the newest transactions coming a batch late; after every batch each table must be the simulated
source table as of the last commit before the oldest transaction not wholly landed (from the
simulation's versions of each key, never from the reader), and at the end its final state. The
Scala twin (``Changes.applyTopic``) applies one of the batches, continuing what Python applied.
"""

from __future__ import annotations

import random
import shutil

import pytest

import spark_replicate
from conftest import DELTA, assert_same_rows, collect_plain, source_row
from spark_replicate import topic
from spark_replicate.generate import default_tables, generate_landing_zone

needs_delta = pytest.mark.skipif(not DELTA, reason="no Delta Lake release serves this Spark minor")
TABLES = ["HR.DEPARTMENTS", "HR.EMPLOYEES"]


def hr_zone(root, **options):
    return generate_landing_zone(root, tables=[t for t in default_tables() if t.topic == "hr"], framing="message",
                                 **options)


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    return hr_zone(tmp_path_factory.mktemp("transactions") / "landing", messages=240, seed=331, files_per_topic=2,
                   key_changes=0.2, partial_masks=0.4)


def state_at(zone, table: str, sequence: str | None) -> list[dict]:
    """The source table right after the change ``sequence`` (None: after the full load), from the
    versions of each key the simulation recorded."""
    def live(version) -> bool:
        opened = version.start_at is None or (sequence is not None and version.start_at <= sequence)
        return opened and (version.end_at is None or (sequence is not None and version.end_at > sequence))
    return [source_row(zone, table, v.row) for versions in zone.history(table).values() for v in versions if live(v)]


def landing_batches(zone, batches: int, seed: int) -> list[list]:
    """The data messages in commit order cut into ``batches`` at random points (inside
    transactions), after the full load; in each but the last, some events after the first of
    the newest transactions come one batch late."""
    rng = random.Random(seed)
    messages = zone.messages
    first_change = next(i for i, m in enumerate(messages) if m.operation != "REFRESH")
    cuts = sorted(rng.sample(range(first_change + 1, len(messages)), batches - 1)) + [len(messages)]
    landed, late, result = 0, [], []
    for cut in cuts:
        batch, late = late + messages[landed:cut], []
        if cut < len(messages):
            recent = {m.headers["transactionId"] for m in messages[max(first_change, cut - 12):cut]}
            late = [m for m in messages[landed:cut] if m.headers["transactionId"] in recent
                    and m.headers["transactionEventCounter"] > 1 and rng.random() < 0.5]
        late_ids = {id(m) for m in late}
        result.append([m for m in batch if id(m) not in late_ids])
        landed = cut
    return result


def last_whole_commit(zone, landed: set) -> str | None:
    """The change sequence of the last change before the oldest transaction not wholly landed."""
    missing = {m.headers["transactionId"] for m in zone.messages if id(m) not in landed}
    last = None
    for m in zone.messages:
        if m.operation != "REFRESH":
            if m.headers["transactionId"] in missing:
                return last
            last = m.headers["changeSequence"]
    return last


def apply_transactions(implementation: str, spark, landing, target, schema_topic) -> dict:
    """``spark_replicate.apply_topic(transactional=True)``, or its Scala twin called through the JVM:
    ``{table: held rows}``."""
    if implementation == "python":
        results = spark_replicate.apply_topic(spark, str(landing), str(target), schema_topic=str(schema_topic),
                                              transactional=True)
        return {table: result.held for table, result in results.items()}
    jvm = spark._jvm
    utils, scala = jvm.org.apache.spark.api.python.PythonUtils, jvm.io.sparkreplicate.cdc.Changes
    results = scala.applyTopic(spark._jsparkSession, utils.toSeq([str(landing)]), str(target),
                               jvm.scala.Option.apply(str(schema_topic)), 1, True, utils.toScalaMap({}))
    java = jvm.scala.jdk.javaapi.CollectionConverters.asJava(results)
    return {table: java.get(table).held() for table in java.keySet()}


def delta_rows(spark, path) -> list[dict]:
    return collect_plain(spark.read.format("delta").load(str(path)))


@needs_delta
@pytest.mark.slow
def test_every_batch_shows_whole_transactions_and_the_last_the_source_tables(spark, zone, tmp_path, monkeypatch):
    """The first batch fails after applying its first table (as if the process died there) and
    is run again; every run ends with each table as of the same commit."""
    landing, target = tmp_path / "landed", tmp_path / "lake"
    (landing / "hr").mkdir(parents=True)
    landed, held = set(), []
    for number, batch in enumerate(landing_batches(zone, 3, seed=3), 1):
        for m in batch:
            shutil.copy(m.file, landing / "hr" / m.file.name)
            landed.add(id(m))
        if number == 1:
            applied = topic._apply_table

            def die_after_the_first_table(changes, target, name, scd_type):
                result = applied(changes, target, name, scd_type)
                raise RuntimeError("the process dies")
            monkeypatch.setattr(topic, "_apply_table", die_after_the_first_table)
            with pytest.raises(RuntimeError, match="the process dies"):
                spark_replicate.apply_topic(spark, str(landing), str(target), schema_topic=str(zone.schema_topic),
                                            transactional=True)
            monkeypatch.setattr(topic, "_apply_table", applied)
        implementation = "scala" if number == 2 else "python"
        held.append(sum(apply_transactions(implementation, spark, landing, target, zone.schema_topic).values()))
        commit = last_whole_commit(zone, landed)
        for table in TABLES:
            assert_same_rows(delta_rows(spark, target / table), state_at(zone, table, commit))
    assert held[-1] == 0 and all(held[:-1]), held
    for table in TABLES:
        assert_same_rows(delta_rows(spark, target / table),
                         [source_row(zone, table, row) for row in zone.final_state(table).values()])


@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_without_transaction_headers_transactional_is_an_error(spark, tmp_path, implementation):
    zone = hr_zone(tmp_path / "landing", messages=40, seed=332, headers_version="6.3")
    with pytest.raises(Exception, match=r"\[REPLICATE_NO_TRANSACTION_HEADERS\] .*"
                       r"change rows without them: HR.DEPARTMENTS \(\d+\), HR.EMPLOYEES \(\d+\)") as error:
        apply_transactions(implementation, spark, zone.root, tmp_path / "lake", zone.schema_topic)
    if implementation == "python":
        assert error.value.getCondition() == "REPLICATE_NO_TRANSACTION_HEADERS"
    assert not (tmp_path / "lake").exists()
