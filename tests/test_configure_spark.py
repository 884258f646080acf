"""``configure_spark``: puts the bundled jar on a session, and fails clearly when it cannot.

Cases that need a JVM started without the jar run in a subprocess, so that the session shared by
the other tests is not disturbed.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

import spark_replicate
from conftest import run_python

PLAIN_SESSION = """
    import spark_replicate
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
"""


def test_the_session_fixture_carries_the_bundled_jar(spark):
    assert str(spark_replicate.jar_path()) in spark.conf.get("spark.jars").split(",")


def test_configure_spark_accepts_a_running_session_that_has_the_jar(spark):
    builder = SparkSession.builder
    assert spark_replicate.configure_spark(builder) is builder


def test_configure_spark_keeps_jars_already_configured():
    result = run_python("""
        import spark_replicate
        from pyspark.sql import SparkSession
        builder = spark_replicate.configure_spark(SparkSession.builder.config("spark.jars", "/opt/other.jar"))
        print("JARS=" + builder._options["spark.jars"])
        print("BUNDLED=" + str(spark_replicate.jar_path()))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    values = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert values["JARS"].split(",") == ["/opt/other.jar", values["BUNDLED"]]


def test_configure_spark_fails_clearly_when_a_jvm_without_the_jar_runs():
    result = run_python(PLAIN_SESSION + """
    try:
        spark_replicate.configure_spark(SparkSession.builder)
    except spark_replicate.ReplicateSetupError as error:
        print("SETUP-ERROR: " + str(error))
    else:
        print("NO-ERROR")
    spark.stop()
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SETUP-ERROR: " in result.stdout, result.stdout
    message = result.stdout.split("SETUP-ERROR: ", 1)[1]
    assert "without the spark-replicate jar" in message
    assert "configure_spark" in message and "before the first" in message


def test_configure_spark_after_stopping_a_session_without_the_jar_fails_or_works():
    """A stopped session leaves its JVM running, still without the jar: configure_spark must say
    so, not hand back a builder whose session cannot find the `replicate` format."""
    result = run_python(PLAIN_SESSION + """
    spark.stop()
    try:
        builder = spark_replicate.configure_spark(SparkSession.builder.master("local[1]"))
    except spark_replicate.ReplicateSetupError as error:
        print("SETUP-ERROR: " + str(error))
    else:
        session = builder.getOrCreate()
        try:
            session.read.format("replicate").load("/nonexistent-replicate-path")
        except Exception as error:
            print("READ-ERROR: " + " ".join(str(error).split())[:400])
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "DATA_SOURCE_NOT_FOUND" not in result.stdout, (
        "configure_spark returned a builder, but its session cannot find the format: " + result.stdout)
    assert "SETUP-ERROR: " in result.stdout or "REPLICATE_PATH_NOT_FOUND" in result.stdout, result.stdout
