"""Spark Connect: the connector and every ``spark_replicate`` helper used from a Connect client,
against real Connect servers: the run's server started with the jar (``--jars``), and one started
without it, to which the client uploads the jar with ``addArtifacts``.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

import spark_replicate
from _cluster import standalone_cluster
from _connect import connect_server, connect_session
from conftest import assert_accounted, assert_same_rows, collect_plain, expected_rows, run_python, table_def
from spark_replicate.generate import generate_landing_zone

TABLE = "HR.EMPLOYEES"


def read_employees(session, zone, **options):
    return spark_replicate.read(session, str(zone.topics[table_def(zone, TABLE).topic]),
                                schema_topic=str(zone.schema_topic), table=TABLE, **options)


# --------------------------------------------------------------------------------------------
# configure_spark on a Connect builder: the jar belongs on the server
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("builder", [
    lambda: SparkSession.builder.remote("sc://127.0.0.1:15002"),
    lambda: SparkSession.builder.config("spark.remote", "sc://127.0.0.1:15002"),
], ids=["remote", "spark.remote"])
def test_configure_spark_refuses_a_connect_builder_naming_where_the_jar_goes(builder):
    with pytest.raises(spark_replicate.ReplicateSetupError) as error:
        spark_replicate.configure_spark(builder())
    message = str(error.value)
    assert "sc://127.0.0.1:15002" in message and "belongs on the server" in message
    assert "--jars" in message and "spark.jars" in message and "addArtifacts" in message
    assert str(spark_replicate.jar_path()) in message and "spark_replicate.jar_path()" in message


def test_configure_spark_refuses_a_connect_server_given_by_spark_remote(monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    with pytest.raises(spark_replicate.ReplicateSetupError, match="belongs on the server"):
        spark_replicate.configure_spark(SparkSession.builder)


@pytest.mark.connect
def test_configure_spark_puts_the_jar_on_the_local_server_pyspark_starts_for_remote_local(avro_zone):
    result = run_python(f"""
        import spark_replicate
        from pyspark.sql import SparkSession
        spark = spark_replicate.configure_spark(SparkSession.builder.remote("local[1]")).getOrCreate()
        rows = spark_replicate.read(spark, {str(avro_zone.topics["hr"])!r}, schema_topic={str(avro_zone.schema_topic)!r},
                                    table={TABLE!r}).count()
        print(f"ROWS={{rows}} CONNECT={{type(spark).__module__}}")
        spark.stop()
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"ROWS={len(avro_zone.messages_for(TABLE))} CONNECT=pyspark.sql.connect.session" in result.stdout


# --------------------------------------------------------------------------------------------
# The helpers on a server started with the jar
# --------------------------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.connect
def test_read_over_connect_returns_the_rows_written(remote, avro_zone):
    assert_same_rows(collect_plain(read_employees(remote, avro_zone)), expected_rows(avro_zone, TABLE))


@pytest.mark.connect
def test_from_replicate_over_connect_calls_the_function_the_servers_extensions_registered(connect_url,
                                                                                          landing_zone):
    """In a client process of its own: pyspark's functions build Connect columns only in a
    process whose session is remote."""
    zone = landing_zone("message")
    paths, schema_topic = [str(p) for p in zone.topics.values()], str(zone.schema_topic)
    result = run_python(f"""
        import json
        from pyspark.sql import SparkSession, functions as F
        from spark_replicate.functions import from_replicate
        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        values = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load({paths!r})
                  .select(F.col("content").alias("value")))
        decoded = values.select(from_replicate("value", {{"schemaTopic": {schema_topic!r}, "table": {TABLE!r}}})
                                .alias("r")).where("r IS NOT NULL").select("r.EMP_ID", "r.header__operation")
        print("RESULT=" + json.dumps(sorted([r.EMP_ID, r.header__operation] for r in decoded.collect())))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    expected = sorted([row["EMP_ID"], row["header__operation"]] for row in expected_rows(zone, TABLE))
    assert json.loads(result.stdout.split("RESULT=", 1)[1]) == expected


@pytest.mark.connect
def test_list_tables_and_read_tables_over_connect(remote, avro_zone):
    names = sorted(t.name for t in avro_zone.tables)
    assert spark_replicate.list_tables(remote, str(avro_zone.schema_topic)) == names
    frames = spark_replicate.read_tables(remote, [str(p) for p in avro_zone.topics.values()],
                                         schema_topic=str(avro_zone.schema_topic))
    assert sorted(frames) == names
    assert {name: df.count() for name, df in frames.items()} == {
        name: len(avro_zone.messages_for(name)) for name in names}


@pytest.mark.connect
def test_last_read_metrics_over_connect_counts_the_sessions_own_last_read(remote, connect_url, avro_zone):
    rows = read_employees(remote, avro_zone).collect()
    metrics = spark_replicate.last_read_metrics(remote)
    assert_accounted(metrics)
    assert metrics["rowsReturned"] == len(rows) > 0
    topic = table_def(avro_zone, TABLE).topic
    assert metrics["filteredOut"] == sum(m.topic == topic for m in avro_zone.messages) - len(rows)  # HR.DEPARTMENTS
    other = connect_session(connect_url)
    try:
        assert spark_replicate.last_read_metrics(other) == {}  # another user of the same server
    finally:
        other.stop()


@pytest.mark.connect
def test_inspect_over_connect_reports_what_it_reports_on_a_classic_session(connect_url, spark, avro_zone):
    """In a client process of its own, as a user's: pyspark's functions build Connect columns only
    in a process whose session is remote, and this one's is classic."""
    paths, schema_topic = [str(p) for p in avro_zone.topics.values()], str(avro_zone.schema_topic)
    result = run_python(f"""
        import json
        import spark_replicate
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
        report = spark_replicate.inspect(spark, {paths!r}, schema_topic={schema_topic!r})
        print("REPORT=" + json.dumps(report, default=str))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    remote_report = json.loads(result.stdout.split("REPORT=", 1)[1])
    classic = spark_replicate.inspect(spark, paths, schema_topic=schema_topic)
    assert remote_report == json.loads(json.dumps(classic, default=str))


# --------------------------------------------------------------------------------------------
# A server without the jar: the client uploads it with addArtifacts
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bare_connect_url(tmp_path_factory):
    """A Connect server started without the connector jar."""
    with connect_server(tmp_path_factory.mktemp("bare-connect-server")) as url:
        yield url


@pytest.fixture
def uploaded(bare_connect_url):
    """A client session of the server without the jar, that uploaded the jar itself."""
    session = connect_session(bare_connect_url)
    session.addArtifacts(str(spark_replicate.jar_path()))
    yield session
    session.stop()


@pytest.mark.connect
def test_a_jar_added_with_add_artifacts_reads(uploaded, avro_zone):
    assert_same_rows(collect_plain(read_employees(uploaded, avro_zone)), expected_rows(avro_zone, TABLE))
    metrics = spark_replicate.last_read_metrics(uploaded)
    assert_accounted(metrics)
    assert metrics["rowsReturned"] == len(expected_rows(avro_zone, TABLE))


@pytest.mark.connect
def test_a_jar_added_with_add_artifacts_collects_metadata_with_a_job(uploaded, tmp_path):
    """Beyond 32 MB of data topics without a schema topic, the metadata messages are collected by
    a Spark job, whose results the server's driver must read back: a sparse 33 MB file holding one
    frame larger than maxMessageBytes (skipped unread, counted as REPLICATE_BAD_FRAME) gets there."""
    zone = generate_landing_zone(tmp_path / "landing", framing="length-prefixed", md_in_data_topics=True,
                                 messages=200, seed=401)
    topic = zone.topics[table_def(zone, TABLE).topic]
    size = 33 * 1024 * 1024
    with open(topic / "oversized.bin", "wb") as file:
        file.write((size - 4).to_bytes(4, "big") + b"atMSG")
        file.truncate(size)
    df = spark_replicate.read(uploaded, str(topic), table=TABLE, mode="DROPMALFORMED", max_message_bytes="1m")
    assert_same_rows(collect_plain(df), expected_rows(zone, TABLE))
    metrics = spark_replicate.last_read_metrics(uploaded)
    assert metrics["dropped"] == metrics["malformed_REPLICATE_BAD_FRAME"] == 1, metrics


@pytest.mark.connect
def test_a_jar_added_with_add_artifacts_reads_on_a_standalone_cluster(avro_zone, tmp_path):
    """Executors in their own JVMs fetch the session's jar from the server's driver."""
    with standalone_cluster(tmp_path / "cluster", cores=2) as cluster, \
            connect_server(tmp_path / "server", master=cluster.master_url) as url:
        session = connect_session(url)
        try:
            session.addArtifacts(str(spark_replicate.jar_path()))
            assert_same_rows(collect_plain(read_employees(session, avro_zone)), expected_rows(avro_zone, TABLE))
            assert spark_replicate.last_read_metrics(session)["rowsReturned"] == len(avro_zone.messages_for(TABLE))
        finally:
            session.stop()
