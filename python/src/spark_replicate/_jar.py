"""Locates the connector jar bundled in the package and checks it matches the installed pyspark."""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path

JAR_NAME = "spark-replicate.jar"
_BUILD_PROPERTIES = "spark-replicate-build.properties"


class ReplicateSetupError(RuntimeError):
    """The connector cannot be put on this Spark session."""


def jar_path() -> Path:
    """Path of the bundled connector jar."""
    jar = resources.files("spark_replicate") / "jars" / JAR_NAME
    if not jar.is_file():
        raise ReplicateSetupError(
            f"the connector jar {JAR_NAME} is missing from the spark_replicate package; "
            "build and install with `make demo` (or `make jar`, then pip install ./python)"
        )
    return Path(str(jar))


def compiled_spark_version(jar: Path) -> str:
    """The Spark version the jar was compiled against, recorded in the jar at build time."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read(_BUILD_PROPERTIES).decode("utf-8")
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return values["sparkVersion"]
