"""The wheel `make wheel` builds, installed as a user installs it: into a fresh virtual environment
that already has the newest pyspark the package supports. pip must leave that pyspark alone, and
the connector must read there."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from conftest import TESTS_DIR
from spark_replicate._jar import SUPPORTED_SPARK_MINORS

WHEEL = TESTS_DIR.parent / "dist" / f"spark_replicate-{metadata.version('spark-replicate')}-py3-none-any.whl"

READ_A_GENERATED_ZONE = """
import json, sys
import pyspark, spark_replicate
from pyspark.sql import SparkSession
from spark_replicate.generate import generate_landing_zone

zone = generate_landing_zone(sys.argv[1], messages=300, seed=20)
table = "HR.EMPLOYEES"
topic = zone.topics[next(t.topic for t in zone.tables if t.name == table)]
spark = (spark_replicate.configure_spark(SparkSession.builder.master("local[1]"))
         .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
changes = spark_replicate.read(spark, str(topic), schema_topic=str(zone.schema_topic), table=table)
counts = {row[0]: row[1] for row in changes.groupBy("header__operation").count().collect()}
print(json.dumps({"pyspark": pyspark.__version__, "read": counts, "expected": zone.expected_counts()[table]}))
spark.stop()
"""


def run(*command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, command))} failed:\n{result.stderr[-3000:]}"
    return result


def pyspark_version(python) -> str:
    return run(python, "-c", "import pyspark; print(pyspark.__version__)").stdout.strip()


@pytest.mark.slow
def test_the_wheel_keeps_the_newest_supported_pyspark_and_reads_there(tmp_path):
    assert WHEEL.is_file(), f"{WHEEL} is missing: build it with `make wheel`"
    run(sys.executable, "-m", "venv", tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    # The package's own range picks the newest supported release.
    supported = next(text for text in metadata.requires("spark-replicate") if text.startswith("pyspark"))
    run(python, "-m", "pip", "install", "-q", supported)
    before = pyspark_version(python)
    assert before.startswith(SUPPORTED_SPARK_MINORS[-1] + ".")

    run(python, "-m", "pip", "install", "-q", WHEEL)

    assert pyspark_version(python) == before
    read = run(python, "-c", READ_A_GENERATED_ZONE, tmp_path / "zone", timeout=600, cwd=tmp_path)
    outcome = json.loads(read.stdout.strip().splitlines()[-1])
    assert outcome["pyspark"] == before
    assert outcome["read"] == outcome["expected"] and sum(outcome["read"].values()) > 0
