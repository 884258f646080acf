"""``spark-replicate apply --continuous`` (``apply_topic(continuous=True)``, README "Applying
changes"): every table a stream of the landed files applied into its own Delta table, until
SIGTERM, against the generator's truth; the files land while it runs, one per message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from pyspark.errors import AnalysisException

from _streams import Landing
from conftest import DELTA, assert_same_rows, collect_plain, source_row
from spark_replicate.generate import default_tables, generate_landing_zone

APPLY = """
    import sys
    from spark_replicate.cli import main
    sys.exit(main(["apply", *{args!r}, "--master", "local[2]"]))
"""


def state_at(zone, table: str, sequence: str) -> list[dict]:
    """The source table right after the change ``sequence``, from the simulation's key versions."""
    return [source_row(zone, table, v.row) for versions in zone.history(table).values() for v in versions
            if (v.start_at is None or v.start_at <= sequence) and (v.end_at is None or v.end_at > sequence)]


@pytest.mark.skipif(not DELTA, reason="no Delta Lake release serves this Spark minor")
@pytest.mark.slow
def test_continuous_apply_follows_the_landing_until_sigterm(spark, tmp_path):
    zone = generate_landing_zone(tmp_path / "staged", tables=[t for t in default_tables() if t.topic == "hr"],
                                 framing="message", messages=160, seed=341, key_changes=0.2, partial_masks=0.4)
    landing, target, log = Landing(zone, tmp_path / "landing"), tmp_path / "lake", tmp_path / "apply.log"
    first = len(zone.messages) * 2 // 3
    landing.land_messages(zone.messages[:first])
    args = [str(landing.root / "hr"), "--target", str(target), "--schema-topic", str(landing.schema_topic),
            "--continuous", "--interval", "1"]
    with open(log, "wb") as out:
        running = subprocess.Popen([sys.executable, "-c", textwrap.dedent(APPLY.format(args=args))], stdout=out,
                                   stderr=subprocess.STDOUT, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
                                   start_new_session=True)

    def matches(table: str, rows: list[dict]) -> bool:
        try:
            assert_same_rows(collect_plain(spark.read.format("delta").load(str(target / table))), rows)
            return True
        except (AssertionError, AnalysisException):  # not yet, or no Delta table there yet
            return False

    def wait_for(expected: dict[str, list[dict]]) -> None:
        deadline = time.monotonic() + 240
        while not all(matches(table, rows) for table, rows in expected.items()):
            assert running.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(1)
    try:
        tables = ["HR.DEPARTMENTS", "HR.EMPLOYEES"]
        wait_for({t: state_at(zone, t, zone.messages[first - 1].headers["changeSequence"]) for t in tables})
        landing.land_messages(zone.messages[first:])
        wait_for({t: [source_row(zone, t, row) for row in zone.final_state(t).values()] for t in tables})
    finally:
        running.send_signal(signal.SIGTERM)  # to the command alone: it stops its queries and exits
        code = running.wait(timeout=120)
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert "HR.EMPLOYEES: batch " in output and "spark-replicate apply: applying HR.EMPLOYEES" in output, output[-4000:]
