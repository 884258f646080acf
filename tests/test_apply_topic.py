"""``apply_topic`` with ``transactional=True`` and ``continuous=True`` (README "Applying changes")
against the generator's truth, on a zone whose transactions span HR.EMPLOYEES and HR.DEPARTMENTS
and two partitions. Its messages land in batches, each a file per partition, cut inside
transactions.

Transactional: some events of the newest transactions come a batch late; after every batch each
table must be the simulated source table as of the last commit before the oldest transaction not
wholly landed (from the simulation's versions of each key, never from the reader), and at the end
its final state. The Scala twin (``Changes.applyTopic``) finishes the batch a Python run died
in, and Python applies the next batch over what Scala left. Continuous: ``spark-replicate apply
--continuous`` follows the landing until SIGTERM; ``apply_topic(transactional=True,
continuous=True)`` is checked after every cycle; Scala's ``Changes.applyTopicContinuously``
follows two landings, with and without transactions.
"""

from __future__ import annotations

import functools
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

import spark_replicate
from _cluster import python_group
from conftest import DELTA, LogWatch, assert_same_rows, collect_plain, small_session_env, source_row
from spark_replicate import topic
from spark_replicate.generate import default_tables, generate_landing_zone

needs_delta = pytest.mark.skipif(not DELTA, reason="no Delta Lake release serves this Spark minor")
TABLES = ["HR.DEPARTMENTS", "HR.EMPLOYEES"]


def hr_zone(root, **options):
    return generate_landing_zone(root, tables=[t for t in default_tables() if t.topic == "hr"],
                                 framing="length-prefixed", **options)


@pytest.fixture(scope="module")
def zone(tmp_path_factory):
    return hr_zone(tmp_path_factory.mktemp("transactions") / "staged", messages=240, seed=331, files_per_topic=2,
                   key_changes=0.2, partial_masks=0.4)


def land(zone, messages: list, directory: Path, batch: int) -> None:
    """``messages`` landed in ``directory`` as one length-prefixed file per partition."""
    frames: dict[Path, list[bytes]] = {}
    for path in {m.file for m in zone.messages}:
        data, at = path.read_bytes(), 0
        while at < len(data):
            size = int.from_bytes(data[at:at + 4], "big")
            frames.setdefault(path, []).append(data[at:at + 4 + size])
            at += 4 + size
    directory.mkdir(parents=True, exist_ok=True)
    for partition in sorted({m.partition for m in messages}):
        landing = directory / f"_batch-{batch}-part-{partition}.bin"  # skipped by readers until renamed
        landing.write_bytes(b"".join(frames[m.file][m.offset] for m in messages if m.partition == partition))
        landing.rename(directory / landing.name[1:])


def state_at(zone, table: str, sequence: str | None) -> list[dict]:
    """The source table right after the change ``sequence`` (None: after the full load), from the
    versions of each key the simulation recorded."""
    def live(version) -> bool:
        opened = version.start_at is None or (sequence is not None and version.start_at <= sequence)
        return opened and (version.end_at is None or (sequence is not None and version.end_at > sequence))
    return [source_row(zone, table, v.row) for versions in zone.history(table).values() for v in versions if live(v)]


def truth(zone, table: str) -> list[dict]:
    return [source_row(zone, table, row) for row in zone.final_state(table).values()]


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
    return {table: result.held() for table, result in scala_results(spark, results).items()}


def scala_results(spark, results) -> dict:
    """A Scala ``Map[String, ApplyResult]`` as a dict of its (py4j) ApplyResults."""
    java = spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(results)
    return {table: java.get(table) for table in java.keySet()}


def delta_rows(spark, path) -> list[dict]:
    return collect_plain(spark.read.format("delta").load(str(path)))


@needs_delta
@pytest.mark.slow
def test_every_batch_shows_whole_transactions_and_the_last_the_source_tables(spark, zone, tmp_path, monkeypatch):
    """The first batch fails after applying its first table (as if the process died there) and
    Scala runs it again; Python applies the second batch over what Scala left. Every run ends
    with each table as of the same commit."""
    landing, target = tmp_path / "landed", tmp_path / "lake"
    landed, held = set(), []
    for number, batch in enumerate(landing_batches(zone, 2, seed=3), 1):
        land(zone, batch, landing / "hr", number)
        landed.update(id(m) for m in batch)
        if number == 1:
            applied = topic._apply_table

            def die_after_the_first_table(*args, **kwargs):
                applied(*args, **kwargs)
                raise RuntimeError("the process dies")
            monkeypatch.setattr(topic, "_apply_table", die_after_the_first_table)
            with pytest.raises(RuntimeError, match="the process dies"):
                spark_replicate.apply_topic(spark, str(landing), str(target), schema_topic=str(zone.schema_topic),
                                            transactional=True)
            monkeypatch.setattr(topic, "_apply_table", applied)
        implementation = "scala" if number == 1 else "python"
        held.append(sum(apply_transactions(implementation, spark, landing, target, zone.schema_topic).values()))
        commit = last_whole_commit(zone, landed)
        for table in TABLES:
            assert_same_rows(delta_rows(spark, target / table), state_at(zone, table, commit))
    assert held[-1] == 0 and all(held[:-1]), held
    for table in TABLES:
        assert_same_rows(delta_rows(spark, target / table), truth(zone, table))


@pytest.mark.parametrize("implementation", ["python", "scala"])
def test_without_transaction_headers_transactional_is_an_error(spark, tmp_path, implementation):
    zone = hr_zone(tmp_path / "landing", messages=40, seed=332, headers_version="6.3")
    with pytest.raises(Exception, match=r"\[REPLICATE_NO_TRANSACTION_HEADERS\] .*"
                       r"change rows without them: HR.DEPARTMENTS \(\d+\), HR.EMPLOYEES \(\d+\)") as error:
        apply_transactions(implementation, spark, zone.root, tmp_path / "lake", zone.schema_topic)
    if implementation == "python":
        assert error.value.getCondition() == "REPLICATE_NO_TRANSACTION_HEADERS"
    assert not (tmp_path / "lake").exists()


def wait_until_applied(spark, target: Path, expected: dict[str, list[dict]], stopped) -> None:
    """Polls each table's Delta table until it holds its ``expected`` rows (each read once it has
    a new commit); ``stopped()`` says why the applying side stopped (it failed), or None while it runs."""
    watch = LogWatch("*.json")

    def matches(table: str, rows: list[dict]) -> bool:
        try:
            assert_same_rows(collect_plain(spark.read.format("delta").load(str(target / table))), rows)
            return True
        except (pytest.fail.Exception, AnalysisException):  # not yet, or a table being created
            return False
    deadline = time.monotonic() + 240
    while not all([watch.holds(target / t / "_delta_log", functools.partial(matches, t, rows))
                   for t, rows in expected.items()]):
        assert stopped() is None, stopped()
        assert time.monotonic() < deadline, f"not applied within 4 minutes: {stopped()}"
        time.sleep(1)


APPLY = """
    import sys
    from spark_replicate.cli import main
    sys.exit(main(["apply", *{args!r}, "--master", "local[2]"]))
"""


@needs_delta
@pytest.mark.slow
def test_continuous_apply_follows_the_landing_until_sigterm(spark, zone, tmp_path):
    landing, target, log = tmp_path / "landing" / "hr", tmp_path / "lake", tmp_path / "apply.log"
    first = len(zone.messages) * 2 // 3
    land(zone, zone.messages[:first], landing, 1)
    args = [str(landing), "--target", str(target), "--schema-topic", str(zone.schema_topic), "--continuous",
            "--interval", "1"]
    with open(log, "wb") as out:
        running = python_group(APPLY.format(args=args), env=small_session_env(), stdout=out, stderr=subprocess.STDOUT)

    def stopped() -> str | None:
        return None if running.poll() is None else log.read_text()[-4000:]
    try:
        wait_until_applied(spark, target, {t: state_at(zone, t, zone.messages[first - 1].headers["changeSequence"])
                                           for t in TABLES}, stopped)
        land(zone, zone.messages[first:], landing, 2)
        wait_until_applied(spark, target, {t: truth(zone, t) for t in TABLES}, stopped)
    finally:
        running.send_signal(signal.SIGTERM)  # to the command alone: it stops its queries and exits
        code = running.wait(timeout=120)
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert "HR.EMPLOYEES: batch " in output and "spark-replicate apply: applying HR.EMPLOYEES" in output, output[-4000:]


@needs_delta
@pytest.mark.slow
def test_continuous_transactional_apply_shows_whole_transactions_after_every_cycle(spark, zone, tmp_path):
    """Between cycles (each reports once it applied), every table is the source as of the last
    commit before the oldest transaction not wholly landed; then the next batch lands. The
    first cycle holds rows that the second batch completes. Cycles that land nothing apply nothing."""
    landing, target = tmp_path / "landed" / "hr", tmp_path / "lake"
    batches = landing_batches(zone, 2, seed=5)
    landed: set = set()
    held, checked = [], []
    began = []  # per cycle begun: how many batches were checked by then

    def land_next() -> None:
        batch = batches[len(checked)]
        land(zone, batch, landing, len(checked) + 1)
        landed.update(id(m) for m in batch)

    def after_cycle(line: str) -> None:
        if re.match(r"holding the new rows of \S+ \(1 of", line):
            began.append(len(checked))
        if not line.startswith("applied the whole transactions held"):
            return
        assert len(checked) < len(batches), f"a cycle that landed nothing applied: {line}"
        commit = last_whole_commit(zone, landed)
        for table in TABLES:
            assert_same_rows(delta_rows(spark, target / table), state_at(zone, table, commit))
        held.append(sum(int(n) for n in re.findall(r"\((\d+) row\(s\) still held\)", line)))
        checked.append(commit)
        if len(checked) < len(batches):
            land_next()

    land_next()
    # Two cycles begun after the last check: the first of them landed nothing, and ended.
    results = topic.apply_continuously(spark, str(landing), str(target), str(zone.schema_topic), 1, True, 0.5, {},
                                       progress=after_cycle, should_stop=lambda: began.count(len(batches)) == 2)
    assert len(checked) == len(batches) and held[-1] == 0 and all(held[:-1]), held
    assert {table: result.batch for table, result in results.items()} == {table: len(batches) for table in TABLES}
    for table in TABLES:
        assert_same_rows(delta_rows(spark, target / table), truth(zone, table))
    assert {table: result.held for table, result in results.items()} == {table: 0 for table in TABLES}
    assert sum(result.inserted for result in results.values()) > 0


@needs_delta
@pytest.mark.slow
@pytest.mark.parametrize("transactional", [False, True], ids=["per-table", "transactional"])
def test_scala_continuous_apply_follows_the_landing_until_stopped(spark, zone, tmp_path, transactional):
    """``Changes.applyTopicContinuously``: two thirds of the messages land (cut inside a
    transaction), then the rest; each table must show the source as of the last change landed
    (transactional: the last commit before the oldest transaction not wholly landed), then all."""
    landing, target = tmp_path / "landed" / "hr", tmp_path / "lake"
    first = len(zone.messages) * 2 // 3
    land(zone, zone.messages[:first], landing, 1)
    jvm = spark._jvm
    utils = jvm.org.apache.spark.api.python.PythonUtils
    run = jvm.io.sparkreplicate.cdc.Changes.applyTopicContinuously(
        spark._jsparkSession, utils.toSeq([str(landing)]), str(target), jvm.scala.Option.apply(str(zone.schema_topic)),
        1, transactional, utils.toScalaMap({}), 2.0)

    def stopped() -> str | None:
        return None if run.isActive() else "the run stopped"
    try:
        landed = {id(m) for m in zone.messages[:first]}
        commit = (last_whole_commit(zone, landed) if transactional
                  else zone.messages[first - 1].headers["changeSequence"])
        wait_until_applied(spark, target, {t: state_at(zone, t, commit) for t in TABLES}, stopped)
        land(zone, zone.messages[first:], landing, 2)
        wait_until_applied(spark, target, {t: truth(zone, t) for t in TABLES}, stopped)
    finally:
        results = scala_results(spark, run.stop())
    assert sorted(results) == TABLES
    assert all(results[t].held() == 0 for t in TABLES)
