"""Locates the connector jar bundled in the package and checks the installed pyspark can run it."""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path

JAR_NAME = "spark-replicate.jar"
_BUILD_PROPERTIES = "spark-replicate-build.properties"

# The Spark minors the one bundled jar is proven on: it is compiled against the oldest, and
# `make smoke` runs the smoke tests on the newest pyspark of each of the others (.ci/run does all).
# pyproject.toml's pyspark range says the same; tests/test_configure_spark.py checks they agree.
SUPPORTED_SPARK_MINORS = ("4.0", "4.1", "4.2", "4.3")


class ReplicateSetupError(RuntimeError):
    """The connector cannot be put on this Spark session."""


def jar_path() -> Path:
    """Path of the bundled connector jar."""
    jar = resources.files("spark_replicate") / "jars" / JAR_NAME
    if not jar.is_file():
        raise ReplicateSetupError(
            f"the connector jar {JAR_NAME} is missing from the spark_replicate package; build the "
            "package with its jar by `make wheel` and install the wheel it writes to dist/"
        )
    return Path(str(jar))


def compiled_spark_version(jar: Path) -> str:
    """The Spark version the jar was compiled against, recorded in the jar at build time."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read(_BUILD_PROPERTIES).decode("utf-8")
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return values["sparkVersion"]


def check_spark_version(pyspark_version: str, jar: Path) -> None:
    """Fails unless the jar is proven on the minor of ``pyspark_version``: Spark's internals may
    change between minors, and a minor the tests never ran could fail in any read."""
    minor = ".".join(pyspark_version.split(".")[:2])
    if minor not in SUPPORTED_SPARK_MINORS:
        raise ReplicateSetupError(
            f"spark-replicate runs on Spark {SUPPORTED_SPARK_MINORS[0]} to {SUPPORTED_SPARK_MINORS[-1]} "
            f"(its jar is built against Spark {compiled_spark_version(jar)}) but pyspark "
            f"{pyspark_version} is installed; install a supported pyspark, e.g. "
            f"pip install 'pyspark>={SUPPORTED_SPARK_MINORS[0]},<{_next_minor(SUPPORTED_SPARK_MINORS[-1])}'"
        )


def _next_minor(minor: str) -> str:
    major, number = minor.split(".")
    return f"{major}.{int(number) + 1}"
