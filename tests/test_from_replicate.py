"""``from_replicate``: the messages of a binary column decoded into the reader's columns.

The bytes come from Spark's own ``binaryFile`` source over the ``message`` zone, where each file
is one bare Replicate message, so the column holds exactly the messages the generator wrote. The
structs are checked against the generator's record of each message, never against the reader
alone, and against the reader on the same options.
"""

from __future__ import annotations

import pytest
from pyspark.sql import Window, functions as F
from pyspark.sql.types import VariantType

from conftest import assert_same_rows, collect_plain, expected_rows, raises_replicate, spark_conf
from spark_replicate.functions import from_replicate

TABLE = "HR.EMPLOYEES"


@pytest.fixture(scope="module")
def zone(landing_zone):
    return landing_zone("message")


def messages(spark, zone, topics=None):
    """Every message of the zone's data topics (or of ``topics``) as a ``value`` column."""
    paths = [str(zone.topics[t]) for t in (topics or zone.topics)]
    return (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(paths)
            .select(F.col("path"), F.col("content").alias("value")))


def decoded(df, **options):
    return df.select(from_replicate("value", options).alias("r"))


@pytest.mark.smoke
def test_a_tables_messages_decode_to_the_rows_written_and_others_to_null(spark, zone):
    frame = decoded(messages(spark, zone), schemaTopic=str(zone.schema_topic), table=TABLE)
    rows = frame.where("r IS NOT NULL").select("r.*")
    assert_same_rows(collect_plain(rows), expected_rows(zone, TABLE))
    others = sum(1 for m in zone.messages if m.table != TABLE)
    assert frame.where("r IS NULL").count() == others


# The struct is the decoder's reused row: every operator that keeps one value while reading the
# next must still see each message's own values.
KEEPING = {
    "collect_list": lambda f: f.agg(F.collect_list("r").alias("all")).select(F.explode("all").alias("r")),
    "first per group": lambda f: f.groupBy("path").agg(F.first("r").alias("r")),
    "sort": lambda f: f.orderBy(F.col("r.header__change_seq").desc()),
    "lag": lambda f: f.select(F.lag("r").over(Window.orderBy("path")).alias("r")).where("r IS NOT NULL")
                      .unionByName(f.orderBy(F.col("path").desc()).limit(1).select("r")),
}


@pytest.mark.parametrize("keep", list(KEEPING))
def test_operators_that_keep_the_struct_keep_each_messages_values(spark, zone, keep):
    options = dict(schemaTopic=str(zone.schema_topic), table=TABLE)
    frame = messages(spark, zone).select("path", from_replicate("value", options).alias("r")).where("r IS NOT NULL")
    kept = KEEPING[keep](frame)
    assert_same_rows(collect_plain(kept.select("r.*")), expected_rows(zone, TABLE))


def test_an_aggregate_of_the_call_itself_keeps_each_messages_values(spark, zone):
    # No projection copies the struct first: the aggregate keeps it by InternalRow.copyValue, which
    # keeps decimals (SALARY) by reference, so a decimal reused from row to row showed the last one.
    options = dict(schemaTopic=str(zone.schema_topic), table=TABLE)
    kept = (messages(spark, zone).agg(F.collect_list(from_replicate("value", options)).alias("all"))
            .select(F.explode("all").alias("r")))
    assert_same_rows(collect_plain(kept.select("r.*")), expected_rows(zone, TABLE))


def test_without_code_generation_too(spark, zone):
    with spark_conf(spark, {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}):
        frame = decoded(messages(spark, zone), schemaTopic=str(zone.schema_topic), table=TABLE)
        assert_same_rows(collect_plain(frame.where("r IS NOT NULL").select("r.*")), expected_rows(zone, TABLE))


def test_the_struct_has_exactly_the_readers_columns_for_the_same_options(spark, zone):
    for options in (dict(table=TABLE), dict(table=TABLE, expandMasks="false", sourceTypes="false"),
                    dict(layout="generic"), dict(table=TABLE, mode="PERMISSIVE")):
        reader = spark.read.format("replicate").options(schemaTopic=str(zone.schema_topic), **options).load(
            [str(p) for p in zone.topics.values()])
        frame = decoded(messages(spark, zone), schemaTopic=str(zone.schema_topic), **options)
        assert frame.schema["r"].dataType == reader.schema, options
        assert_same_rows(comparable(frame.where("r IS NOT NULL").select("r.*")), comparable(reader))


def comparable(df):
    """Collected rows, with variants (the generic layout's images) as their JSON text."""
    return collect_plain(df.select(*[F.to_json(F.col(f.name)).alias(f.name) if isinstance(f.dataType, VariantType)
                                     else F.col(f.name) for f in df.schema.fields]))


def test_python_style_option_names_and_values(spark, zone):
    frame = decoded(messages(spark, zone), schema_topic=[str(zone.schema_topic)], table=TABLE, expand_masks=False)
    assert "header__changed_columns" not in frame.select("r.*").columns
    assert frame.where("r IS NOT NULL").count() == len(zone.messages_for(TABLE))


@pytest.mark.smoke
def test_sql_with_a_map_of_options(spark, zone):
    messages(spark, zone).createOrReplaceTempView("replicate_messages")
    frame = spark.sql(f"SELECT from_replicate(value, map('schemaTopic', '{zone.schema_topic}', "
                      f"'table', '{TABLE}')) AS r FROM replicate_messages")
    assert_same_rows(collect_plain(frame.where("r IS NOT NULL").select("r.*")), expected_rows(zone, TABLE))


def test_the_metadata_view_needs_no_schema_topic(spark, zone):
    schema_files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                    .load(str(zone.schema_topic)).select(F.col("content").alias("value")))
    frame = decoded(schema_files, messages="metadata")
    reader = spark.read.format("replicate").option("messages", "metadata").load(str(zone.schema_topic))
    assert_same_rows(collect_plain(frame.select("r.*")), collect_plain(reader))


def bad_values(spark, zone):
    good = messages(spark, zone, [next(iter(zone.topics))]).select("value")
    return good.unionByName(spark.createDataFrame([(b"not a Replicate message",)], "value binary"))


def test_failfast_names_the_column_and_the_reason(spark, zone):
    with raises_replicate("REPLICATE_BAD_MAGIC", "a value of", "PERMISSIVE"):
        decoded(bad_values(spark, zone), schemaTopic=str(zone.schema_topic), table=TABLE).collect()


@pytest.mark.smoke
def test_permissive_keeps_the_bytes_and_the_reason_in_the_corrupt_record_field(spark, zone):
    frame = decoded(bad_values(spark, zone), schemaTopic=str(zone.schema_topic), table=TABLE, mode="PERMISSIVE")
    corrupt = [r.r["_corrupt_record"] for r in frame.where("r._corrupt_record IS NOT NULL").collect()]
    assert [(bytes(c.bytes), c.reason) for c in corrupt] == [(b"not a Replicate message", "REPLICATE_BAD_MAGIC")]


@pytest.mark.parametrize("options, fragments", [
    (dict(mode="DROPMALFORMED"), ["PERMISSIVE", "filter"]),
    (dict(includeSource="true"), ["includeSource"]),
    (dict(), ["schemaTopic"]),
], ids=["dropmalformed", "include-source", "no-schema-topic"])
def test_what_only_a_reader_can_do_is_refused(spark, zone, options, fragments):
    options = {"table": TABLE, **options}
    if fragments != ["schemaTopic"]:
        options["schemaTopic"] = str(zone.schema_topic)
    with raises_replicate("REPLICATE_INVALID_OPTION", *fragments):
        decoded(messages(spark, zone), **options).schema


def test_options_must_be_a_constant_map(spark, zone):
    messages(spark, zone).createOrReplaceTempView("replicate_messages")
    with raises_replicate("REPLICATE_INVALID_OPTION", "constant map"):
        spark.sql("SELECT from_replicate(value, map('table', path)) FROM replicate_messages").schema


def test_decodes_in_a_streaming_query(spark, zone, tmp_path):
    topic = zone.topics[next(t.topic for t in zone.tables if t.name == TABLE)]
    stream = (spark.readStream.format("binaryFile").option("recursiveFileLookup", "true")
              .schema("path string, modificationTime timestamp, length long, content binary").load(str(topic)))
    options = {"schemaTopic": str(zone.schema_topic), "table": TABLE}
    query = (stream.select(from_replicate(F.col("content"), options).alias("r")).where("r IS NOT NULL")
             .select("r.*").writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    written = spark.read.parquet(str(tmp_path / "out"))
    assert_same_rows(collect_plain(written.select(*[c for c in written.columns if c != "header__before_image"])),
                     [{k: v for k, v in row.items() if k != "header__before_image"}
                      for row in expected_rows(zone, TABLE)])
