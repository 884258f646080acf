"""Typed columns (README "Types"): every Replicate source type, sent the three ways the generator
can send it, read back as the same typed values.

* ``text``: Replicate with "logical data types" off: numbers, booleans and bytes as Avro
  primitives, DATE, TIME, DATETIME, NUMERIC and UINT8 as their text; the metadata's source type,
  precision and scale type them.
* ``logical``: logical data types on: Avro date, time-millis, timestamp-micros and decimals.
* ``all-text``: every value as its text (bytes in hex), typed by the metadata alone.

The expected values come from the generator's record of what it sent
(``spark_replicate.generate.expected_value``, checked against Python's ``zoneinfo`` and
``decimal``); some edge values are also spelled out here, independently of it.
"""

from __future__ import annotations

from datetime import date, datetime, time, timezone
from decimal import Decimal

import pytest
from pyspark.sql.types import BinaryType, DecimalType, StringType

from conftest import (assert_same_rows, collect_plain, expected_row, expected_rows, raises_replicate, read_metrics,
                      read_table, spark_conf, spark_type)
from spark_replicate.generate import ColumnDef, TableDef, expected_value, generate_landing_zone

C = ColumnDef
# Wall-clock times at daylight-saving changes of 2024: a gap (the clock jumps forward) and an
# overlap (the hour is repeated) in New York and in Berlin, at microsecond precision.
NEW_YORK_GAP, NEW_YORK_OVERLAP = datetime(2024, 3, 10, 2, 30, 0, 123456), datetime(2024, 11, 3, 1, 30, 0, 654321)
BERLIN_GAP, BERLIN_OVERLAP = datetime(2024, 3, 31, 2, 30, 0, 1), datetime(2024, 10, 27, 2, 30, 0, 999999)
LARGEST_38_10 = "9" * 28 + "." + "9" * 10
LARGEST_39_5 = "9" * 34 + "." + "9" * 5

TYPES = TableDef("QA", "TYPES", "types", (
    C("ID", "INT8", pk_position=1),
    C("I1", "INT1", choices=(-128, 0, 127)),
    C("I2", "INT2", choices=(-32768, 32767)),
    C("I4", "INT4"),
    C("I4_EDGE", "INT4", choices=(-2 ** 31, 2 ** 31 - 1, 0)),
    C("I8", "INT8", choices=(-2 ** 63, 2 ** 63 - 1)),
    C("U1", "UINT1", choices=(0, 255)),
    C("U2", "UINT2", choices=(0, 65535)),
    C("U4", "UINT4", choices=(0, 2 ** 32 - 1)),
    C("U8", "UINT8"),
    C("U8_EDGE", "UINT8", choices=(0, 2 ** 64 - 1)),
    C("R4", "REAL4"),
    C("R4_EDGE", "REAL4", choices=(3.4028234663852886e38, -1.401298464324817e-45, 0.1)),
    C("R8", "REAL8"),
    C("R8_EDGE", "REAL8", choices=(1.7976931348623157e308, 5e-324, -0.1)),
    C("FLAG", "BOOLEAN"),
    C("S", "STRING", 20),
    C("WS", "WSTRING", 40),
    C("CL", "CLOB", max_words=40),
    C("NCL", "NCLOB", max_words=40),
    C("BY", "BYTES", 16),
    C("BL", "BLOB"),
    C("D", "DATE"),
    C("D_EDGE", "DATE", choices=(date(1, 1, 1), date(1582, 10, 4), date(1582, 10, 15), date(1900, 2, 28),
                                 date(1969, 12, 31), date(1970, 1, 1), date(9999, 12, 31))),
    C("T", "TIME"),
    C("T_EDGE", "TIME", choices=(time(0, 0), time(23, 59, 59, 999000), time(12, 0, 0, 1000))),
    C("TS", "DATETIME"),
    C("TS_EDGE", "DATETIME", choices=(NEW_YORK_GAP, NEW_YORK_OVERLAP, BERLIN_GAP, BERLIN_OVERLAP,
                                      datetime(1969, 12, 31, 23, 59, 59, 999999), datetime(1900, 1, 1, 0, 0, 0, 1))),
    C("N", "NUMERIC", precision=10, scale=2),
    C("N38", "NUMERIC", precision=38, scale=10),
    C("N38_EDGE", "NUMERIC", precision=38, scale=10,
      choices=(LARGEST_38_10, "-" + LARGEST_38_10, "0.0000000001", "0.0000000000")),
    C("N38_ZERO", "NUMERIC", precision=38, scale=0),
    C("N39", "NUMERIC", precision=39, scale=5),
    C("N39_EDGE", "NUMERIC", precision=39, scale=5, choices=(LARGEST_39_5, "-" + LARGEST_39_5, "0.00000")),
    C("N_ZERO", "NUMERIC", precision=5, scale=0),
    C("N_NEG", "NUMERIC", precision=5, scale=-2),
    C("N_NEG_WIDE", "NUMERIC", precision=38, scale=-3),
    C("N_SMALL", "NUMERIC", precision=2, scale=5),
))
TABLE = TYPES.name
COLUMNS = [c.name for c in TYPES.columns]
ENCODINGS = {"text": {}, "logical": {"logical_types": True}, "all-text": {"all_text": True}}


@pytest.fixture(scope="module")
def zones(tmp_path_factory):
    """The same source values (same seed and table) landed in each encoding."""
    return {name: generate_landing_zone(tmp_path_factory.mktemp("types-" + name) / "landing", tables=[TYPES],
                                        messages=400, seed=61, files_per_topic=1, **settings)
            for name, settings in ENCODINGS.items()}


def table_values(rows: list[dict]) -> list[dict]:
    return [{name: row[name] for name in COLUMNS + ["header__change_seq", "header__operation"]} for row in rows]


def distinct(rows: list[dict], column: str) -> set:
    return {row[column] for row in rows if row[column] is not None}


# -- every type, every encoding -----------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_source_type_has_its_spark_type_in_every_encoding(spark, zones, encoding):
    schema = read_table(spark, zones[encoding], TABLE).schema
    assert [(f.name, f.dataType) for f in schema.fields[:len(COLUMNS)]] == \
        [(c.name, spark_type(c)) for c in TYPES.columns]
    assert schema["N39"].dataType == StringType() and schema["N38"].dataType == DecimalType(38, 10)
    assert schema["N_NEG"].dataType == DecimalType(7, 0) and schema["N_SMALL"].dataType == DecimalType(5, 5)
    assert schema["N_NEG_WIDE"].dataType == StringType() and schema["U8"].dataType == DecimalType(20, 0)


@pytest.mark.smoke
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_value_reads_back_typed(spark, zones, encoding):
    zone = zones[encoding]
    assert_same_rows(collect_plain(read_table(spark, zone, TABLE)), expected_rows(zone, TABLE))


def test_every_encoding_gives_the_same_values(spark, zones):
    read = {name: table_values(collect_plain(read_table(spark, zone, TABLE))) for name, zone in zones.items()}
    assert len(read["text"]) == 400
    assert_same_rows(read["logical"], read["text"])
    assert_same_rows(read["all-text"], read["text"])


def test_edge_values_are_exact(spark, zones):
    """Spelled out here rather than taken from the generator's oracle."""
    rows = collect_plain(read_table(spark, zones["text"], TABLE))
    assert distinct(rows, "I8") == {-2 ** 63, 2 ** 63 - 1}
    assert distinct(rows, "U4") == {0, 2 ** 32 - 1}
    assert distinct(rows, "U8_EDGE") == {Decimal(0), Decimal(2 ** 64 - 1)}
    assert distinct(rows, "R8_EDGE") == {1.7976931348623157e308, 5e-324, -0.1}
    assert distinct(rows, "D_EDGE") == {date(1, 1, 1), date(1582, 10, 4), date(1582, 10, 15), date(1900, 2, 28),
                                        date(1969, 12, 31), date(1970, 1, 1), date(9999, 12, 31)}
    assert distinct(rows, "T_EDGE") == {"00:00:00.000000", "23:59:59.999000", "12:00:00.001000"}
    assert distinct(rows, "N38_EDGE") == {Decimal(LARGEST_38_10), Decimal("-" + LARGEST_38_10),
                                          Decimal("1E-10"), Decimal(0)}
    assert distinct(rows, "N39_EDGE") == {LARGEST_39_5, "-" + LARGEST_39_5, "0.00000"}
    assert all(isinstance(v, str) and v.count(".") == 1 and len(v.split(".")[1]) == 5 for v in distinct(rows, "N39"))
    assert all(v % 100 == 0 for v in distinct(rows, "N_NEG"))
    assert all(isinstance(v, str) and v.lstrip("-").isdigit() and (v == "0" or v.endswith("000"))
               for v in distinct(rows, "N_NEG_WIDE"))
    assert all(abs(v) < Decimal("0.001") for v in distinct(rows, "N_SMALL"))
    assert datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc) in distinct(rows, "TS_EDGE")


# -- time zones ---------------------------------------------------------------------------------


@pytest.mark.parametrize("zone_name", ["America/New_York", "Europe/Berlin", "Asia/Kolkata"])
def test_datetime_text_is_read_in_the_time_zone_option(spark, zones, zone_name):
    zone = zones["text"]
    rows = collect_plain(read_table(spark, zone, TABLE, timeZone=zone_name))
    assert_same_rows(rows, expected_rows(zone, TABLE, time_zone=zone_name))


@pytest.mark.parametrize("zone_name, gap, overlap", [
    # A time in the gap moves forward by the gap; one in the overlap takes the earlier offset.
    ("America/New_York", (NEW_YORK_GAP, datetime(2024, 3, 10, 7, 30, 0, 123456)),
     (NEW_YORK_OVERLAP, datetime(2024, 11, 3, 5, 30, 0, 654321))),
    ("Europe/Berlin", (BERLIN_GAP, datetime(2024, 3, 31, 1, 30, 0, 1)),
     (BERLIN_OVERLAP, datetime(2024, 10, 27, 0, 30, 0, 999999))),
])
def test_daylight_saving_gaps_and_overlaps_resolve_as_zoneinfo_with_fold_0(spark, zones, zone_name, gap, overlap):
    rows = collect_plain(read_table(spark, zones["text"], TABLE, timeZone=zone_name))
    read = distinct(rows, "TS_EDGE")
    column = TYPES.columns[COLUMNS.index("TS_EDGE")]
    for wall_clock, utc in (gap, overlap):
        assert expected_value(column, wall_clock.isoformat(" "), zone_name) == utc.replace(tzinfo=timezone.utc)
        assert utc.replace(tzinfo=timezone.utc) in read


def test_the_time_zone_defaults_to_the_session_time_zone(spark, zones):
    zone = zones["text"]
    with spark_conf(spark, {"spark.sql.session.timeZone": "Europe/Berlin"}):
        rows = collect_plain(read_table(spark, zone, TABLE))
    assert_same_rows(rows, expected_rows(zone, TABLE, time_zone="Europe/Berlin"))


def test_avro_timestamps_are_instants_whatever_the_time_zone(spark, zones):
    zone = zones["logical"]
    rows = collect_plain(read_table(spark, zone, TABLE, timeZone="America/New_York"))
    assert_same_rows(rows, expected_rows(zone, TABLE))


def test_an_invalid_time_zone_names_the_option(spark, zones):
    with raises_replicate("REPLICATE_INVALID_OPTION", "`timeZone`", "Mars/Olympus_Mons"):
        read_table(spark, zones["text"], TABLE, timeZone="Mars/Olympus_Mons").schema


# -- sourceTypes = false ------------------------------------------------------------------------


def test_source_types_off_keeps_text_as_sent(spark, zones):
    zone = zones["all-text"]
    df = read_table(spark, zone, TABLE, sourceTypes="false")
    assert {f.dataType for f in df.schema.fields[1:len(COLUMNS)]} == {StringType()}
    read = table_values(collect_plain(df))
    sent = [{name: m.data[name] for name in COLUMNS} for m in zone.messages_for(TABLE)]
    assert_same_rows([{name: row[name] for name in COLUMNS} for row in read], sent)
    assert {"00:00:00", "12:00:00.001000"} <= distinct(read, "T_EDGE")


def test_source_types_off_keeps_the_avro_types(spark, zones):
    zone = zones["logical"]
    schema = read_table(spark, zone, TABLE, sourceTypes="false").schema
    types = {f.name: f.dataType for f in schema.fields[:len(COLUMNS)]}
    by_name = {c.name: c for c in TYPES.columns}
    # Avro's logical types are Spark types already, but for a NUMERIC whose scale an Avro decimal
    # cannot hold: sent as unscaled bytes, it stays bytes.
    for name in COLUMNS:
        expected = BinaryType() if name in ("N_NEG", "N_NEG_WIDE", "N_SMALL") else spark_type(by_name[name])
        assert types[name] == expected, name
    text_types = {f.name: f.dataType for f in read_table(spark, zones["text"], TABLE, sourceTypes="false").schema}
    assert {text_types[name] for name in ("D", "T", "TS", "N", "N39", "U8")} == {StringType()}


# -- values that do not parse -------------------------------------------------------------------

CORRUPT = "_corrupt_record"
# (source type, a good value, one that does not parse as that type, how the zone sends values)
BAD_VALUES = {
    "INT4": (C("V", "INT4"), 5, "5x", "all-text"),
    "INT4-overflow": (C("V", "INT4"), -7, "2147483648", "all-text"),
    "INT8-overflow": (C("V", "INT8"), 1, "9223372036854775808", "all-text"),
    "UINT8-too-wide": (C("V", "UINT8"), 7, "123456789012345678901", "text"),
    "REAL8": (C("V", "REAL8"), 0.5, "1.5f", "all-text"),
    "BOOLEAN": (C("V", "BOOLEAN"), True, "yes", "all-text"),
    "BYTES": (C("V", "BYTES"), b"\x01\xab", "ABC", "all-text"),
    "DATE": (C("V", "DATE"), date(2023, 2, 28), "2023-02-30", "text"),
    "TIME": (C("V", "TIME"), time(1, 2, 3), "24:00:00", "text"),
    "DATETIME": (C("V", "DATETIME"), datetime(2023, 1, 1, 10), "2023-01-01 10:61:00", "text"),
    "NUMERIC-fraction": (C("V", "NUMERIC", precision=10, scale=2), "1.25", "1.234", "text"),
    "NUMERIC-text": (C("V", "NUMERIC", precision=10, scale=2), "1.25", "12,5", "text"),
    "NUMERIC-precision": (C("V", "NUMERIC", precision=4, scale=2), "1.25", "123.45", "text"),
}
_bad_zones: dict = {}


@pytest.fixture
def bad_value_zone(request, tmp_path_factory):
    """A table whose non-key column ``V`` holds a good value or one that does not parse."""
    case = request.param
    if case not in _bad_zones:
        column, good, bad, encoding = BAD_VALUES[case]
        table = TableDef("QA", "BAD", "bad", (C("ID", "INT8", pk_position=1),
                                              C(column.name, column.source_type, precision=column.precision,
                                                scale=column.scale, nullable=False, choices=(good, bad))))
        zone = generate_landing_zone(tmp_path_factory.mktemp("bad") / "landing", tables=[table], messages=40,
                                     seed=17, files_per_topic=1, before_images=False, **ENCODINGS[encoding])
        bad_messages = [m for m in zone.messages if m.data["V"] == bad]
        good_messages = [m for m in zone.messages if m.data["V"] != bad]
        assert bad_messages and good_messages
        _bad_zones[case] = zone, bad, bad_messages, good_messages
    return _bad_zones[case]


@pytest.mark.parametrize("bad_value_zone", BAD_VALUES, indirect=True)
def test_a_value_that_does_not_parse_fails_the_read_under_failfast(spark, bad_value_zone):
    zone, bad, _, _ = bad_value_zone
    with raises_replicate("REPLICATE_BAD_VALUE", "column `V`", bad):
        read_table(spark, zone, "QA.BAD", mode="FAILFAST").collect()


@pytest.mark.parametrize("bad_value_zone", BAD_VALUES, indirect=True)
def test_a_value_that_does_not_parse_is_a_corrupt_row_under_permissive(spark, bad_value_zone):
    zone, bad, bad_messages, good_messages = bad_value_zone
    rows = collect_plain(read_table(spark, zone, "QA.BAD", mode="PERMISSIVE"))
    metrics = read_metrics(spark)
    corrupt = [row for row in rows if row[CORRUPT] is not None]
    assert len(corrupt) == len(bad_messages) == metrics["malformed_REPLICATE_BAD_VALUE"] == metrics["malformed"]
    for row in corrupt:
        assert all(value is None for name, value in row.items() if name != CORRUPT), row
        assert row[CORRUPT]["reason"] == "REPLICATE_BAD_VALUE"
        assert "column `V`" in row[CORRUPT]["message"] and bad in row[CORRUPT]["message"]
    good = [{name: value for name, value in row.items() if name != CORRUPT} for row in rows if row[CORRUPT] is None]
    assert_same_rows(good, [expected_row(zone, m) for m in good_messages])


@pytest.mark.parametrize("bad_value_zone", BAD_VALUES, indirect=True)
def test_a_value_that_does_not_parse_is_dropped_and_counted_under_dropmalformed(spark, bad_value_zone):
    zone, _, bad_messages, good_messages = bad_value_zone
    rows = collect_plain(read_table(spark, zone, "QA.BAD", mode="DROPMALFORMED"))
    metrics = read_metrics(spark)
    assert metrics["dropped"] == metrics["malformed_REPLICATE_BAD_VALUE"] == len(bad_messages)
    assert_same_rows(rows, [expected_row(zone, m) for m in good_messages])
