"""``configure_spark``: puts the bundled jar on a session, and fails clearly when it cannot.

Cases that need a JVM started without the jar run in a subprocess, so that the session shared by
the other tests is not disturbed.
"""

from __future__ import annotations

import os
import re
import shutil
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from pyspark.sql import SparkSession

import spark_replicate
from conftest import TESTS_DIR, run_python
from spark_replicate._jar import SUPPORTED_SPARK_MINORS, check_spark_version
from spark_replicate.apply import MERGE_MATERIALIZE_SOURCE
from spark_replicate.session import (CODEGEN_CACHE, DELTA_SNAPSHOT_PARTITIONS, HUGE_METHOD_LIMIT, JIT_METHOD_LIMIT,
                                    jit_sized_methods, local_cores, session_setting)

PLAIN_SESSION = """
    import spark_replicate
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
"""


def test_configure_spark_sets_the_jit_method_limit_unless_the_builder_has_one():
    """HotSpot's limit by default; a limit the user set is kept (in a process without a session,
    as a running one makes configure_spark return the builder as it is)."""
    result = run_python(f"""
        import spark_replicate
        from pyspark.sql import SparkSession
        print("DEFAULT=" + spark_replicate.configure_spark(SparkSession.builder)._options["{HUGE_METHOD_LIMIT}"])
        builder = SparkSession.builder.config("{HUGE_METHOD_LIMIT}", "20000")
        print("SET=" + spark_replicate.configure_spark(builder)._options["{HUGE_METHOD_LIMIT}"])
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line) == {
        "DEFAULT": str(JIT_METHOD_LIMIT), "SET": "20000"}


@pytest.mark.parametrize("session_limit, inside", [("65535", "8000"), ("4000", "4000")])
def test_jit_sized_methods_lowers_the_limit_for_its_block_then_restores_it(spark, session_limit, inside):
    previous = spark.conf.get(HUGE_METHOD_LIMIT)
    try:
        spark.conf.set(HUGE_METHOD_LIMIT, session_limit)
        with pytest.raises(RuntimeError), jit_sized_methods(spark):
            assert spark.conf.get(HUGE_METHOD_LIMIT) == inside
            raise RuntimeError("restored even when the block fails")
        assert spark.conf.get(HUGE_METHOD_LIMIT) == session_limit
    finally:
        spark.conf.set(HUGE_METHOD_LIMIT, previous)


@pytest.mark.parametrize("own", ["all", None])
def test_a_setting_for_a_block_is_restored_afterwards_or_unset_when_the_session_had_not_set_it(spark, own):
    key = MERGE_MATERIALIZE_SOURCE
    try:
        spark.conf.set(key, own) if own else spark.conf.unset(key)
        with pytest.raises(RuntimeError), session_setting(spark, key, "none"):
            assert spark.conf.get(key) == "none"
            raise RuntimeError("restored even when the block fails")
        assert spark.conf.get(key, None) == own
    finally:
        spark.conf.unset(key)


@pytest.mark.smoke
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


@pytest.mark.smoke
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


@pytest.mark.parametrize("version", ["4.0.0", "4.0.5", "4.1.0", "4.1.4", "4.2.1", "4.3.0", "4.3.0.dev1"])
def test_every_supported_minor_is_accepted(version):
    check_spark_version(version, spark_replicate.jar_path())


@pytest.mark.parametrize("version", ["3.5.6", "4.4.0", "5.0.0"])
def test_configure_spark_refuses_a_pyspark_outside_the_supported_minors(version):
    message = configure_spark_error(f"import pyspark; pyspark.__version__ = {version!r}")
    assert f"pyspark {version} is installed" in message
    assert "Spark 4.0 to 4.3" in message and "pip install 'pyspark>=4.0,<4.4'" in message


def test_the_package_requires_exactly_the_supported_minors():
    """pip and configure_spark must agree: a pyspark pip accepts is one configure_spark accepts."""
    pyspark = next(Requirement(text) for text in metadata.requires("spark-replicate")
                   if Requirement(text).name == "pyspark")
    last = int(SUPPORTED_SPARK_MINORS[-1].split(".")[1])
    accepted = [f"4.{minor}" for minor in range(0, last + 3) if pyspark.specifier.contains(f"4.{minor}.0")]
    assert accepted == list(SUPPORTED_SPARK_MINORS)
    assert not pyspark.specifier.contains("3.5.9")


def test_every_supported_minor_is_tested_by_make():
    """`make test` runs on the Spark the jar is compiled against and `make smoke-all` on the others."""
    makefile = (TESTS_DIR.parent / "Makefile").read_text()
    build = (TESTS_DIR.parent / "build.sbt").read_text()
    compiled = re.search(r'^val sparkVersion = .*"([0-9.]+)"', build, re.M).group(1)
    others = re.search(r"^OTHER_PYSPARKS := (.*)$", makefile, re.M).group(1).split()
    minors = [".".join(version.split(".")[:2]) for version in [compiled, *others]]
    assert minors == list(SUPPORTED_SPARK_MINORS)


def test_a_package_without_its_jar_says_how_to_build_one_with_it(tmp_path):
    """What `pip install ./python` without a built jar gives: the package, but no jar in it."""
    shutil.copytree(Path(spark_replicate.__file__).parent, tmp_path / "spark_replicate",
                    ignore=shutil.ignore_patterns("*.jar"))
    message = configure_spark_error(env={"PYTHONPATH": str(tmp_path)})
    assert "missing" in message and "`make wheel`" in message


def configure_spark_error(prelude: str = "", env: dict | None = None) -> str:
    """The ReplicateSetupError message of configure_spark on a plain builder, in a fresh interpreter
    that runs ``prelude`` first."""
    result = run_python(prelude + """
import spark_replicate
from pyspark.sql import SparkSession
try:
    spark_replicate.configure_spark(SparkSession.builder)
except spark_replicate.ReplicateSetupError as error:
    print("SETUP-ERROR: " + str(error))
""", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SETUP-ERROR: " in result.stdout, result.stdout
    return result.stdout.split("SETUP-ERROR: ", 1)[1]


@pytest.mark.kafka
def test_kafka_adds_spark_kafka_source_of_the_running_pyspark(spark):
    """A run with Kafka tests builds its session with kafka=True: Spark's Kafka source and its token
    provider load in this pyspark's JVM (resolved from Maven Central at start-up)."""
    import pyspark
    from spark_replicate.kafka_connector import CONNECTOR, connector_versions

    assert f"{CONNECTOR}:{connector_versions(pyspark.__version__)[0]}" in spark.conf.get("spark.jars.packages")
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in ("org.apache.spark.sql.kafka010.KafkaSourceProvider", "org.apache.spark.kafka010.KafkaTokenUtil"):
        jvm.java.lang.Class.forName(name, True, loader)


@pytest.mark.parametrize("version, packages, ivy", [
    ("4.0.4", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.4", 'rev="4.0.0"'),
    ("4.1.4", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.3", 'rev="4.1.1"'),
    ("4.2.1", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0", None),
    ("4.3.0", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0", None),
])
def test_kafka_settings_per_pyspark(version, packages, ivy):
    from spark_replicate.kafka_connector import kafka_settings

    settings = kafka_settings(version, {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"})
    assert settings["spark.jars.packages"] == "io.delta:delta-spark_2.13:4.0.0," + packages
    if ivy is None:
        assert set(settings) == {"spark.jars.packages"}
    else:
        assert ivy in Path(settings["spark.jars.ivySettings"]).read_text()
        assert "hadoop-client-runtime" in settings["spark.jars.excludes"]


def test_kafka_settings_refuse_to_replace_the_users_ivy_settings():
    from spark_replicate.kafka_connector import kafka_settings

    with pytest.raises(spark_replicate.ReplicateSetupError, match="spark.jars.ivySettings"):
        kafka_settings("4.0.4", {"spark.jars.ivySettings": "/etc/ivy.xml"})


def test_with_delta_a_local_master_replays_delta_logs_in_as_many_tasks_as_it_has_cores():
    """A builder's own value is kept, and a cluster's master, or none, is left to Delta's default
    (in a process without a session, as a running one makes configure_spark return the builder as
    it is). Room for 1000 plans' generated classes comes with Delta on any master, unless set."""
    result = run_python(f"""
        import spark_replicate
        from pyspark.sql import SparkSession
        keys = ("{DELTA_SNAPSHOT_PARTITIONS}", "{CODEGEN_CACHE}")
        for name, builder in [("local3", SparkSession.builder.master("local[3]")),
                              ("set", SparkSession.builder.master("local[3]").config("{DELTA_SNAPSHOT_PARTITIONS}", "7")
                               .config("{CODEGEN_CACHE}", "50")),
                              ("cluster", SparkSession.builder.master("spark://127.0.0.1:7077")),
                              ("none", SparkSession.builder)]:
            options = spark_replicate.configure_spark(builder, delta=True)._options
            print(name + "=" + ",".join(options.get(key, "unset") for key in keys))
        options = spark_replicate.configure_spark(SparkSession.builder.master("local[3]"))._options
        print("nodelta=" + ",".join(options.get(key, "unset") for key in keys))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line) == {
        "local3": "3,1000", "set": "7,50", "cluster": "unset,1000", "none": "unset,1000", "nodelta": "unset,unset"}


@pytest.mark.parametrize("master, cores", [("local", 1), ("local[2]", 2), ("local[4, 3]", 4), ("local[*]", os.cpu_count()),
                                           ("local-cluster[2,1,1024]", None), ("yarn", None), (None, None)])
def test_local_cores(master, cores):
    assert local_cores(master) == cores
