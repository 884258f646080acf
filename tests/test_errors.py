"""Typed errors: a connector failure reaches PySpark as a Spark error condition, whose condition is
the ``REPLICATE_*`` identifier, with its SQLSTATE and the detail as a message parameter, on a
classic session and over Spark Connect alike, raised while planning or inside a task; the message
stays the one the connector always gave.
"""

from __future__ import annotations

import pytest
from pyspark.errors import IllegalArgumentException, PySparkException

import spark_replicate
from conftest import table_def

TABLE = "HR.EMPLOYEES"


def assert_condition(error: PySparkException, condition: str, sql_state: str, *fragments: str) -> None:
    assert isinstance(error, IllegalArgumentException), type(error)
    assert error.getCondition() == condition
    assert error.getSqlState() == sql_state
    detail = error.getMessageParameters()["detail"]
    assert str(error).startswith(f"[{condition}] {detail}"), str(error)[:2000]
    for fragment in fragments:
        assert fragment in detail, detail


def test_a_planning_failure_is_typed(session, avro_zone):
    with pytest.raises(PySparkException) as error:  # classic plans at load(), Connect at collect()
        spark_replicate.read(session, str(avro_zone.topics[table_def(avro_zone, TABLE).topic]),
                             schema_topic=str(avro_zone.schema_topic), table="HR.NO_SUCH_TABLE").collect()
    assert_condition(error.value, "REPLICATE_TABLE_NOT_FOUND", "42P01", "HR.NO_SUCH_TABLE", TABLE)


@pytest.mark.smoke
def test_a_failure_inside_a_task_is_typed(session, avro_zone, tmp_path):
    (tmp_path / "part-0").write_bytes(len(b"junkjunk").to_bytes(4, "big") + b"junkjunk")
    df = spark_replicate.read(session, str(tmp_path), schema_topic=str(avro_zone.schema_topic), table=TABLE,
                              framing="length-prefixed")
    with pytest.raises(PySparkException) as error:
        df.collect()
    assert_condition(error.value, "REPLICATE_BAD_MAGIC", "22000", "part-0", "frame at byte 0", "mode")


def test_an_invalid_option_is_typed(session, avro_zone):
    with pytest.raises(PySparkException) as error:
        spark_replicate.read(session, str(avro_zone.schema_topic), mode="LENIENT").collect()
    assert_condition(error.value, "REPLICATE_INVALID_OPTION", "42616", "mode")
