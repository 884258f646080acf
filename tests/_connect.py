"""A Spark Connect server for the tests, started with pyspark's own ``spark-submit`` machinery
(``SparkSubmit --class SparkConnectServer``, whose jar pyspark ships) on a free port of 127.0.0.1,
in its own process group, and clients of it."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql.connect.session import SparkSession as ConnectSession

from _cluster import (SHORT_JVM_OPTIONS, SPARK_HOME, Daemon, free_port, listening, spark_class, wait_for,
                      with_shared_classes)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@contextmanager
def connect_server(workdir: Path, *, master: str = "local[2]", jars: list[str] = (),
                   conf: dict[str, str] | None = None):
    """A Connect server whose driver runs ``master``, with ``jars`` on its class path and the
    settings ``conf``; yields its ``sc://`` URL and stops the server (and its executors)
    afterwards. Its warehouse, logs and scratch space are under ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOCAL_DIRS": str(workdir), "PYSPARK_PYTHON": sys.executable}
    settings = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
                "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
                "spark.sql.shuffle.partitions": "2", "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1", "spark.sql.warehouse.dir": str(workdir / "warehouse"), **(conf or {})}
    if jars:
        # The connector's SQL functions (from_replicate), as configure_spark sets them on a classic session.
        settings["spark.sql.extensions"] = ",".join(
            ["io.sparkreplicate.ReplicateExtensions", *filter(None, [settings.get("spark.sql.extensions")])])
    # The server runs a few dozen small queries in a run: short-lived work, as a command's is.
    args = ["--class", SERVER_CLASS, "--master", master,
            "--driver-java-options", with_shared_classes(SHORT_JVM_OPTIONS),
            *(["--jars", ",".join(jars)] if jars else [])]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    server = Daemon("connect-server", spark_class("org.apache.spark.deploy.SparkSubmit", args), workdir, env)
    try:
        wait_for(lambda: listening(port), "the Spark Connect server", [server])
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def connect_session(url: str) -> ConnectSession:
    """A new client session of the server at ``url``. Built with the Connect builder itself, as
    ``SparkSession.builder.remote`` refuses to run beside the tests' classic session."""
    return ConnectSession.builder.remote(url).create()
