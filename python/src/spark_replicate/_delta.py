"""Delta Lake for a classic session: the delta-spark release built for the running Spark minor.

Delta's jars are built per Spark minor (from Delta 4.1 on, the artifact name carries the minor),
and a Delta built for another minor fails at run time. These are the releases Maven Central
serves for each minor the connector supports; ``build.sbt`` puts the same ones on the Scala
tests' class path. Spark 4.3 has none yet.
"""

from __future__ import annotations

from spark_replicate._jar import ReplicateSetupError

DELTA_PACKAGES = {
    "4.0": "io.delta:delta-spark_2.13:4.0.1",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.1.0",
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
}
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_package(pyspark_version: str) -> str:
    """The Maven coordinates of the delta-spark jar for ``pyspark_version``'s minor."""
    minor = ".".join(pyspark_version.split(".")[:2])
    package = DELTA_PACKAGES.get(minor)
    if package is None:
        raise ReplicateSetupError(
            f"no Delta Lake release is built for Spark {minor} (pyspark {pyspark_version}): delta-spark serves "
            f"Spark {', '.join(DELTA_PACKAGES)}. Use one of those minors for apply_changes, or put a Delta "
            f"release built for Spark {minor} on the session yourself (spark.jars.packages) once one exists")
    return package
