"""Why Replicate TIME columns stay strings `HH:mm:ss.ffffff` on every Spark minor (README "Types").

Spark 4.1 added a TIME type, but behind `spark.sql.timeType.enabled`, an internal setting that is
off outside Spark's own tests up to 4.3. With it off, a TIME column can be collected and sorted,
yet comparing it with a string, Spark's time functions and writing it to Parquet (`export`) fail
with UNSUPPORTED_TIME_TYPE. When a new minor turns TIME on by default this test fails, and TIME
should become TimeType there."""

from __future__ import annotations

import datetime

import pyspark
import pytest
from pyspark.errors import AnalysisException

from conftest import spark_conf

HAS_TIME_TYPE = tuple(int(part) for part in pyspark.__version__.split(".")[:2]) >= (4, 1)


@pytest.mark.smoke
@pytest.mark.skipif(not HAS_TIME_TYPE, reason="Spark before 4.1 has no TIME type")
def test_spark_refuses_what_users_do_with_a_time_column_by_default(spark, tmp_path):
    from pyspark.sql.types import StructField, StructType, TimeType

    assert spark.conf.get("spark.sql.timeType.enabled") == "false"
    times = spark.createDataFrame([(datetime.time(13, 0),)], StructType([StructField("t", TimeType())]))
    for use in (lambda: times.where("t > '12:00:00'").collect(),
                lambda: times.selectExpr("hour(t)").collect(),
                lambda: times.write.parquet(str(tmp_path / "times"))):
        with pytest.raises(AnalysisException, match="UNSUPPORTED_TIME_TYPE"):
            use()
    with spark_conf(spark, {"spark.sql.timeType.enabled": "true"}):
        assert times.where("t > '12:00:00'").count() == 1
