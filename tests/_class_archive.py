"""The run's archive of Spark's classes (HotSpot's class data sharing), made by a first session of
the run in the background while the tests start.

Every JVM the tests start beside their two sessions (a command, a driver to kill, a cluster's
daemons and executors, a Connect server) loads and verifies thousands of Spark's classes before
it does anything: seconds of CPU each, on a machine whose two cores bound the suite. A session
started with ``-XX:ArchiveClassesAtExit`` writes the classes it loaded into an archive when its
JVM exits, and a JVM given the archive (``_cluster.with_shared_classes``) maps them instead: a
process that started a session and applied one small table took 18.6 s instead of 27.6 s. The
tests' own two sessions start before the archive is made, and do without it. The classes of
``--packages`` (Delta, Spark's Kafka source) and of the connector's jar are not archived: Spark
loads them with a class loader of its own.

Run as a script, this is that first session: it resolves the sessions' Maven packages (two JVMs
resolving into an empty Ivy cache at the same moment, as on a fresh machine, read each other's
half-written downloads) and says so (:data:`READY`), then runs a little of what the tests run,
waits for its JVM to write the archive, and moves it into place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cluster import CLASS_ARCHIVE_VARIABLE, dies_with_parent, short_jvm_env

READY = "class-archive: packages resolved"
ARCHIVE = "classes.jsa"


class ClassArchive:
    """Started by the controller of a run of several workers, before they start: returns once the
    packages are resolved, and sets :data:`_cluster.CLASS_ARCHIVE_VARIABLE` for the workers, whose
    JVMs take the archive once it is there."""

    def __init__(self, kafka: bool, timeout: float = 600):
        self.folder = Path(tempfile.mkdtemp(prefix="spark-replicate-classes-"))
        self.log = self.folder / "session.log"
        dumping = self.folder / "dumping.jsa"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, __file__, str(dumping), str(self.folder / ARCHIVE), str(kafka)], stdout=log,
                stderr=subprocess.STDOUT, env=short_jvm_env(driver_options=f"-XX:ArchiveClassesAtExit={dumping}"),
                preexec_fn=dies_with_parent(), start_new_session=True)
        deadline = time.monotonic() + timeout
        while READY not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"resolving the test sessions' Maven packages failed:\n{self._tail()}")
            time.sleep(0.2)
        os.environ[CLASS_ARCHIVE_VARIABLE] = str(self.folder / ARCHIVE)

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def stop(self) -> None:
        """At the end of the run: a session still writing the archive is killed with its JVM."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _first_session(dumping: str, archive: str, kafka: bool) -> None:
    from conftest import DELTA, session_builder

    spark = session_builder("local[1]", kafka=kafka).getOrCreate()
    print(READY, flush=True)
    # What most tests do: a query with a shuffle, Parquet, and Delta's writes and MERGE.
    with tempfile.TemporaryDirectory() as work:
        rows = spark.range(100).selectExpr("id", "CAST(id % 7 AS STRING) AS s", "current_timestamp() AS t")
        rows.write.parquet(f"{work}/parquet")
        spark.read.parquet(f"{work}/parquet").groupBy("s").count().collect()
        if DELTA:
            rows.write.format("delta").save(f"{work}/delta")
            spark.sql(f"MERGE INTO delta.`{work}/delta` t USING parquet.`{work}/parquet` s ON t.id = s.id "
                      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect()
    jvm = spark.sparkContext._gateway.proc
    spark.stop()
    # pyspark's JVM exits when its input closes; the archive is written as it exits.
    jvm.stdin.close()
    jvm.wait()
    if os.path.isfile(dumping):
        os.replace(dumping, archive)


if __name__ == "__main__":
    _first_session(sys.argv[1], sys.argv[2], sys.argv[3] == "True")
