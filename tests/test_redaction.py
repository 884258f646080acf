"""Secrets never leave the connector: values of options whose names match ``spark.redaction.regex``
and text matching ``spark.sql.redaction.string.regex`` are masked in every error and corrupt-record
message, and no option value appears in EXPLAIN."""

from __future__ import annotations

import shutil

import pytest

from conftest import error_text, spark_conf

SECRET = "S3CR3T-value-42"
MASK = "*********(redacted)"
BAD_MESSAGE = b"XXXXXnot a replicate message"


@pytest.fixture(scope="module")
def secret_dir(avro_zone, tmp_path_factory):
    """A copy of the `hr` topic, and a bad whole-file message, under a folder named with the secret."""
    root = tmp_path_factory.mktemp("redaction") / f"lake-{SECRET}"
    shutil.copytree(avro_zone.topics["hr"], root / "hr")
    (root / "bad").mkdir()
    (root / "bad" / "one.msg").write_bytes(BAD_MESSAGE)
    return root


def read(spark, path, schema_topic, **options):
    reader = (spark.read.format("replicate").option("schemaTopic", str(schema_topic))
              .option("table", "HR.EMPLOYEES").option("my.access.key", SECRET))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(path))


def failure_text(action) -> str:
    with pytest.raises(Exception) as info:
        action()
    return error_text(info.value)


def test_planning_errors_mask_a_secret_option_value(spark, avro_zone, secret_dir):
    text = failure_text(lambda: read(spark, secret_dir / "missing", avro_zone.schema_topic))
    assert "[REPLICATE_PATH_NOT_FOUND]" in text
    assert SECRET not in text and MASK in text


def test_task_errors_mask_a_secret_option_value(spark, avro_zone, secret_dir):
    df = read(spark, secret_dir / "bad", avro_zone.schema_topic, framing="message")
    text = failure_text(df.collect)
    assert "[REPLICATE_BAD_MAGIC]" in text
    assert SECRET not in text and MASK in text


def test_corrupt_record_messages_mask_a_secret_option_value(spark, avro_zone, secret_dir):
    rows = read(spark, secret_dir / "bad", avro_zone.schema_topic, framing="message",
                mode="PERMISSIVE").select("_corrupt_record").collect()
    corrupt = rows[0]["_corrupt_record"]
    assert corrupt["reason"] == "REPLICATE_BAD_MAGIC"
    assert bytes(corrupt["bytes"]) == BAD_MESSAGE
    assert SECRET not in corrupt["message"] and MASK in corrupt["message"]


def test_the_string_redaction_regex_masks_matching_text_in_errors(spark, avro_zone, secret_dir):
    with spark_conf(spark, {"spark.sql.redaction.string.regex": "lake-S3CR3T[-a-z0-9]*"}):
        text = failure_text(lambda: spark.read.format("replicate")
                            .option("schemaTopic", str(avro_zone.schema_topic))
                            .option("table", "HR.EMPLOYEES").load(str(secret_dir / "missing")))
    assert "[REPLICATE_PATH_NOT_FOUND]" in text
    assert "S3CR3T" not in text and MASK in text


def test_explain_shows_no_option_value(spark, avro_zone, secret_dir):
    df = read(spark, secret_dir / "hr", avro_zone.schema_topic)
    plan = df._jdf.queryExecution().toString()
    assert "BatchScan" in plan or "RelationV2" in plan
    assert SECRET not in plan
