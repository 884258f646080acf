"""Shared fixtures and helpers of the end-to-end tests.

Everything here goes through the real reader on a real (local) Spark: one SparkSession for the
whole run, landing zones generated once per session by ``spark_replicate.generate``, and the
expected output of every read derived from the generator's own record of what it wrote
(``LandingZone.messages``), never from the reader.

Helpers are plain functions (tests import them with ``from conftest import ...``); fixtures
build the expensive shared things.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

import pyspark
import pytest
from fastavro import block_reader
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import (BinaryType, BooleanType, DataType, DateType, DecimalType, DoubleType, FloatType,
                               IntegerType, LongType, StringType, TimestampType)

import spark_replicate
from _cluster import SESSION_JVM_OPTIONS, SHORT_JVM_OPTIONS, short_jvm_env, with_shared_classes
from spark_replicate._delta import DELTA_CATALOG, DELTA_EXTENSION, DELTA_PACKAGES, delta_package
from spark_replicate.generate import (ColumnDef, DataMessage, LandingZone, TableDef, decimal_type, default_tables,
                                      expected_value, generate_landing_zone, mask_ordinals)
from spark_replicate.kafka_connector import kafka_settings
from spark_replicate.session import CODEGEN_CACHE, CODEGEN_CACHE_ENTRIES, DELTA_SNAPSHOT_PARTITIONS

TESTS_DIR = Path(__file__).resolve().parent
DATA_DIR = TESTS_DIR / "data"

# README "Output columns", in output order after the table's own columns.
HEADER_COLUMNS = [
    "header__schema_id", "header__table_version", "header__operation", "header__change_seq",
    "header__timestamp", "header__stream_position", "header__transaction_id",
    "header__transaction_event_counter", "header__transaction_last_event",
    "header__external_schema_id", "header__change_mask", "header__column_mask",
]
MASK_COLUMNS = ["header__changed_columns", "header__present_columns"]
BEFORE_IMAGE = "header__before_image"
SOURCE = "header__source"
SOURCE_FIELDS = ["file", "position", "index", "topic", "partition", "offset", "timestamp", "key"]

def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: the subset `make smoke` runs on every other supported pyspark: "
                                       "one or two tests of each capability (README \"Tests\")")
    config.addinivalue_line("markers", "slow: takes a minute or more (`pytest -m 'not slow'` leaves these out)")
    config.addinivalue_line("markers", "connect: runs against a Spark Connect server (a JVM started for the "
                            "run); `-m 'not connect'` leaves them out")
    config.addinivalue_line("markers", "kafka: runs against an Apache Kafka broker (a JVM started for the run); "
                            "`-m 'not kafka'` leaves them out")
    # kafka-python loads its protocol schemas through importlib.resources calls Python deprecates.
    config.addinivalue_line("filterwarnings", "ignore:(read|open)_text is deprecated:DeprecationWarning")


# Spark's Kafka source is fetched from Maven Central for the running pyspark when a session starts
# (`configure_spark(kafka=True)`); the Maven Central these machines reach serves none for Spark 4.3
# yet, so there the Kafka tests are skipped, naming why.
KAFKA_SOURCE = not pyspark.__version__.startswith("4.3.")


def pytest_collection_modifyitems(config, items):
    if KAFKA_SOURCE:
        return
    skip = pytest.mark.skip(reason=f"no Kafka source (spark-sql-kafka) for pyspark {pyspark.__version__} "
                                   "is served by the Maven repository here")
    for item in items:
        if item.get_closest_marker("kafka"):
            item.add_marker(skip)


def smoke_cases(params: list, smoke: set[str]) -> list:
    """``params`` (``pytest.param``s with ids) with the ``smoke`` mark on those whose id is in
    ``smoke``: the representative cases of a parametrized test that `make smoke` runs on every
    other minor, where running all of them there would prove nothing more."""
    unknown = smoke - {param.id for param in params}
    assert not unknown, f"no such case: {sorted(unknown)}"
    return [pytest.param(*param.values, id=param.id,
                         marks=[*param.marks, *([pytest.mark.smoke] if param.id in smoke else [])])
            for param in params]


# --------------------------------------------------------------------------------------------
# Landing zones: one spec per zone, generated on first use and shared by the whole session.
# --------------------------------------------------------------------------------------------


def evolving_tables() -> list[TableDef]:
    """One table that gets two ``ALTER TABLE ADD`` during CDC, so it has versions 1, 2 and 3."""
    C = ColumnDef
    return [TableDef("INV", "ITEMS", "inventory", (
        C("ITEM_ID", "INT8", pk_position=1),
        C("SKU", "STRING", 20, nullable=False),
        C("QTY", "INT4"),
        C("PRICE", "NUMERIC", 0, 9, 2),
        C("WEIGHT", "REAL4"),
    ), added_columns=(C("COLOR", "WSTRING", 30), C("RATING", "REAL8")))]


ZONE_SPECS: dict[str, dict] = {
    # The main zone: Kafka Connect style container files of records with Kafka coordinates.
    "avro": dict(framing="avro", messages=1500, seed=101),
    "avro-bytes": dict(framing="avro", value_schema="bytes", messages=600, seed=102),
    "length-prefixed": dict(framing="length-prefixed", messages=600, seed=103),
    "message": dict(framing="message", messages=300, seed=104),
    # No schema topic needed: metadata messages are also published to the data topics.
    "md-in-data": dict(framing="avro", md_in_data_topics=True, messages=600, seed=105),
    # One large file per topic, many small container blocks: splittable at sync markers.
    "large-avro": dict(framing="avro", files_per_topic=1, sync_interval=2048, messages=6000, seed=106),
    "large-avro-deflate": dict(framing="avro", files_per_topic=1, sync_interval=2048, messages=6000,
                               codec="deflate", seed=107),
    # Schema evolution (three table versions) read from many small files.
    "evolving": dict(framing="message", tables=evolving_tables(), messages=400, seed=108),
    # Self-describing data messages (messageSchema embedded) with Replicate 6.3 headers.
    "self-describing-6.3": dict(framing="length-prefixed", embed_data_schema=True, headers_version="6.3",
                                messages=400, seed=109),
}

FRAMING_ZONES = ["avro", "avro-bytes", "length-prefixed", "message"]


@pytest.fixture(scope="session")
def landing_zone(tmp_path_factory):
    """``landing_zone(name)``: the generated zone of ``ZONE_SPECS[name]``, generated once."""
    zones: dict[str, LandingZone] = {}

    def get(name: str) -> LandingZone:
        if name not in zones:
            root = tmp_path_factory.mktemp("zone-" + name) / "landing"
            zones[name] = generate_landing_zone(root, **ZONE_SPECS[name])
        return zones[name]
    return get


@pytest.fixture(scope="session")
def avro_zone(landing_zone) -> LandingZone:
    return landing_zone("avro")


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------


# Delta Lake is on the test session where a delta-spark release serves the running Spark minor.
DELTA = ".".join(pyspark.__version__.split(".")[:2]) in DELTA_PACKAGES

def small_session_env() -> dict[str, str]:
    """The environment of a command whose session should be as small as the tests' own (the data
    is tiny: Spark's 200 shuffle partitions would cost more than the work)."""
    return short_jvm_env("spark.sql.shuffle.partitions=2", f"{DELTA_SNAPSHOT_PARTITIONS}=2")


def session_builder(master: str, kafka: bool = False) -> SparkSession.Builder:
    """The connector's documented set-up, with settings that keep a test session small (Delta
    reconstructs a table's state in 50 tasks by default)."""
    builder = (SparkSession.builder.master(master).appName("spark-replicate-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config(DELTA_SNAPSHOT_PARTITIONS, "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1"))
    return spark_replicate.configure_spark(builder, kafka=kafka, delta=DELTA)


# The run's archive of Spark's classes, kept by the controller of a run of several workers.
_CLASS_ARCHIVE = pytest.StashKey["ClassArchive"]()


def pytest_sessionstart(session):
    """With several workers (pytest-xdist), starts the run's first session before they start: it
    resolves the Maven packages their sessions need, then makes the run's archive of Spark's
    classes in the background (_class_archive.py)."""
    workers = session.config.getoption("numprocesses", None)
    if hasattr(session.config, "workerinput") or workers in (None, 0, 1):
        return
    from _class_archive import ClassArchive
    session.config.stash[_CLASS_ARCHIVE] = ClassArchive(kafka=KAFKA_SOURCE)


def pytest_unconfigure(config):
    archive = config.stash.get(_CLASS_ARCHIVE, None)
    if archive is not None:
        archive.stop()


# Fewer tests than this in a run: its session's JVM is short-lived (SHORT_JVM_OPTIONS).
FEW_TESTS = 200


@pytest.fixture(scope="session")
def spark(tmp_path_factory, request):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    kafka = _runs_kafka_tests(request)
    # The catalog's warehouse (SQL tests create tables) goes to a temporary folder, not the cwd.
    builder = session_builder("local[2]", kafka=kafka).config("spark.sql.warehouse.dir",
                                                              str(tmp_path_factory.mktemp("warehouse")))
    # A run of few tests (`make smoke`, a file) is mostly its session's start and first queries,
    # short-lived work; a whole run's sessions run hundreds of jobs each, where C2 pays off for
    # what stays hot (SESSION_JVM_OPTIONS).
    few = len(request.session.items) < FEW_TESTS
    builder = builder.config("spark.driver.extraJavaOptions",
                             with_shared_classes(SHORT_JVM_OPTIONS if few else SESSION_JVM_OPTIONS))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    """The bootstrap servers of an Apache Kafka broker started once for the run, stopped at its end."""
    from _kafka import kafka_broker
    with kafka_broker(tmp_path_factory.mktemp("kafka-broker")) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def kafka_zone(tmp_path_factory, kafka_bootstrap) -> LandingZone:
    """A task landed as files and published to Kafka (topics prefixed ``read-``): several tables on
    one topic (hr), a table of three versions (inventory), before-images and masks, three
    partitions per topic, metadata also in the data topics."""
    from _kafka import PREFIX
    return generate_landing_zone(tmp_path_factory.mktemp("kafka-zone") / "landing", messages=1500, seed=117,
                                 tables=default_tables() + evolving_tables(), files_per_topic=3,
                                 md_in_data_topics=True, kafka=kafka_bootstrap, kafka_topic_prefix=PREFIX)


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory, request):
    """The ``sc://`` URL of a Spark Connect server started once for the run, with the connector
    on its class path (``--jars``) as the README says, Delta Lake where the minor has it, and
    Spark's Kafka source when Kafka tests run (the settings ``configure_spark(kafka=True)`` adds);
    stopped at the end of the run."""
    from _connect import connect_server
    conf = {"spark.jars.packages": delta_package(pyspark.__version__), "spark.sql.extensions": DELTA_EXTENSION,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
            DELTA_SNAPSHOT_PARTITIONS: "2", CODEGEN_CACHE: str(CODEGEN_CACHE_ENTRIES)} if DELTA else {}
    if _runs_kafka_tests(request):
        conf.update(kafka_settings(pyspark.__version__, conf))
    with connect_server(tmp_path_factory.mktemp("connect-server"), jars=[str(spark_replicate.jar_path())],
                        conf=conf) as url:
        yield url


def _runs_kafka_tests(request) -> bool:
    """Spark's Kafka source is resolved from Maven Central when a session starts: only when Kafka
    tests run."""
    return KAFKA_SOURCE and any(item.get_closest_marker("kafka") for item in request.session.items)


@pytest.fixture
def remote(connect_url):
    """A client session of the run's Spark Connect server, closed after the test."""
    from _connect import connect_session
    session = connect_session(connect_url)
    yield session
    session.stop()


@pytest.fixture(params=["classic", pytest.param("connect", marks=pytest.mark.connect)])
def session(request):
    """The run's classic session, then a client session of its Connect server."""
    return request.getfixturevalue("spark" if request.param == "classic" else "remote")


@contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]):
    """Sets SQL configuration for the block and restores the previous values afterwards."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def table_def(zone: LandingZone, table: str) -> TableDef:
    return next(t for t in zone.tables if t.name == table)


def replicate_options(zone: LandingZone, table: str) -> str:
    """The reader's options for ``table`` of ``zone``, as SQL's ``OPTIONS (...)`` takes them."""
    return f"path '{zone.topics[table_def(zone, table).topic]}', schemaTopic '{zone.schema_topic}', table '{table}'"


def source_row(zone: LandingZone, table: str, row: dict) -> dict:
    """A row of the simulated source (``LandingZone.final_state`` or ``history``) as the reader
    returns its values, in the output's column order; a column the row lacks is null."""
    return {c.name: expected_value(c, row.get(c.name)) for c in layout_columns(zone, table)}


def read_table(spark: SparkSession, zone: LandingZone, table: str | None, *, paths=None,
               schema_topic: bool = True, **options) -> DataFrame:
    """The long form, ``spark.read.format("replicate")``: ``table`` read from its own topic (or
    ``paths``), with the zone's schema topic unless ``schema_topic=False``."""
    reader = spark.read.format("replicate")
    if schema_topic:
        reader = reader.option("schemaTopic", str(zone.schema_topic))
    if table is not None:
        reader = reader.option("table", table)
    for name, value in options.items():
        reader = reader.option(name, value)
    if paths is None:
        paths = [zone.topics[table_def(zone, table).topic]]
    paths = [str(p) for p in paths]
    return reader.load(paths[0] if len(paths) == 1 else paths)


# --------------------------------------------------------------------------------------------
# What the reader must return, derived from the generator's record of each message
# --------------------------------------------------------------------------------------------


def latest_version(zone: LandingZone, table: str) -> int:
    return max(entry.version for entry in zone.metadata if entry.table == table)


def version_columns(table: TableDef, version: int) -> list[ColumnDef]:
    """The columns of one table version in ordinal order: version n follows n-1 schema changes."""
    return list(table.version_columns(version))


def layout_columns(zone: LandingZone, table: str, schema_evolution: str = "merge") -> list[ColumnDef]:
    """The output's table columns (README "Output columns" and "Schema evolution"): the newest version's in ordinal order, then, under
    ``schemaEvolution`` = merge, columns that later versions dropped, newest drop first; each as
    the newest version that has it defines it."""
    versions = sorted({entry.version for entry in zone.metadata if entry.table == table}, reverse=True)
    columns: dict[str, ColumnDef] = {}
    for version in versions[:1] if schema_evolution == "latest" else versions:
        for column in version_columns(table_def(zone, table), version):
            columns.setdefault(column.name, column)
    return list(columns.values())


_SPARK_TYPES = {
    **dict.fromkeys(("INT1", "INT2", "INT4", "UINT1", "UINT2"), IntegerType()),
    **dict.fromkeys(("INT8", "UINT4"), LongType()),
    **dict.fromkeys(("STRING", "WSTRING", "CLOB", "NCLOB", "TIME"), StringType()),
    **dict.fromkeys(("BYTES", "BLOB"), BinaryType()),
    "REAL4": FloatType(), "REAL8": DoubleType(), "BOOLEAN": BooleanType(), "DATE": DateType(),
    "DATETIME": TimestampType(),
}


def spark_type(column: ColumnDef) -> DataType:
    """The Spark type the reader gives a column, whatever the encoding (README "Types"): TIME as
    text, NUMERIC and UINT8 as decimals, or text beyond 38 digits."""
    if column.source_type in ("NUMERIC", "UINT8"):
        fitting = decimal_type(column)
        return DecimalType(*fitting) if fitting else StringType()
    return _SPARK_TYPES[column.source_type]


def utc_from_header(text: str) -> datetime | None:
    """A Replicate header timestamp (UTC, ``yyyy-MM-dd HH:mm:ss.ffffff``); empty means none."""
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)


def utc_from_millis(millis: int) -> datetime:
    return datetime.fromtimestamp(millis // 1000, tz=timezone.utc).replace(microsecond=millis % 1000 * 1000)


def _image(values: dict | None, names: list[str], columns: dict[str, ColumnDef], time_zone: str) -> dict | None:
    """A row image as read: typed as its own version's columns say, null in columns it lacks."""
    if values is None:
        return None
    return {name: expected_value(columns[name], values[name], time_zone) if name in values else None
            for name in names}


def _mask_names(mask: bytes | None, columns: list[ColumnDef]) -> list[str] | None:
    """The columns a mask names; a bit past the last column names none (README "Output columns")."""
    return None if mask is None else [columns[o - 1].name for o in mask_ordinals(mask) if o <= len(columns)]


def expected_row(zone: LandingZone, message: DataMessage, *, expand_masks: bool = True,
                 source: dict | None = None, time_zone: str = "UTC", schema_evolution: str = "merge") -> dict:
    """The output row of one generated data message, as a dict in output column order; DATETIME
    text is read in ``time_zone`` (the reader's ``timeZone``)."""
    table = table_def(zone, message.table)
    names = [c.name for c in layout_columns(zone, message.table, schema_evolution)]
    headers = message.headers
    message_columns = version_columns(table, message.table_version)
    by_name = {c.name: c for c in message_columns}
    row = _image(message.data if message.data is not None else message.before, names, by_name, time_zone)
    row.update({
        "header__schema_id": message.schema_id,
        "header__table_version": message.table_version,
        "header__operation": message.operation,
        "header__change_seq": headers["changeSequence"] or None,
        "header__timestamp": utc_from_header(headers["timestamp"]),
        "header__stream_position": headers["streamPosition"] or None,
        "header__transaction_id": headers["transactionId"] or None,
        "header__transaction_event_counter": headers.get("transactionEventCounter"),
        "header__transaction_last_event": headers.get("transactionLastEvent"),
        "header__external_schema_id": headers.get("externalSchemaId") or None,
        "header__change_mask": message.change_mask,
        "header__column_mask": message.column_mask,
    })
    if expand_masks:
        row["header__changed_columns"] = _mask_names(message.change_mask, message_columns)
        row["header__present_columns"] = _mask_names(message.column_mask, message_columns)
    row[BEFORE_IMAGE] = _image(message.before, names, by_name, time_zone)
    if source is not None:
        row[SOURCE] = source
    return row


def expected_rows(zone: LandingZone, table: str, **kwargs) -> list[dict]:
    return [expected_row(zone, m, **kwargs) for m in zone.messages_for(table)]


def record_positions(path: Path, framing: str) -> list[tuple[int, int]]:
    """(position, index) of every landed record of one file, in file order, worked out
    independently of the reader: container block start and index in block; frame start; 0."""
    if framing == "avro":
        with open(path, "rb") as stream:
            return [(block.offset, i) for block in block_reader(stream) for i in range(block.num_records)]
    if framing == "length-prefixed":
        data, positions, at = path.read_bytes(), [], 0
        while at < len(data):
            positions.append((at, 0))
            at += 4 + int.from_bytes(data[at:at + 4], "big")
        return positions
    return [(0, 0)]


def expected_source(zone: LandingZone, message: DataMessage, framing: str, value_schema: str,
                    positions: dict) -> dict:
    """``header__source`` of one message. ``positions`` caches :func:`record_positions` per file.
    A topic's offset is the record's number in its partition file (MD messages included)."""
    if message.file not in positions:
        positions[message.file] = record_positions(message.file, framing)
    file_positions = positions[message.file]
    position, index = file_positions[message.offset if framing != "message" else 0]
    kafka = framing == "avro" and value_schema == "record"
    return {"file": str(message.file), "position": position, "index": index,
            "topic": message.topic if kafka else None, "partition": message.partition if kafka else None,
            "offset": message.offset if kafka else None,
            "timestamp": utc_from_millis(message.timestamp_ms) if kafka else None,
            "key": message.key if kafka else None}


def expected_rows_with_source(zone: LandingZone, table: str, framing: str, value_schema: str = "record",
                              **kwargs) -> list[dict]:
    positions: dict = {}
    return [expected_row(zone, m, source=expected_source(zone, m, framing, value_schema, positions), **kwargs)
            for m in zone.messages_for(table)]


# --------------------------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------------------------


def plain(value):
    """A collected Spark value as a plain Python value: bytes for binary, dicts for structs,
    timezone-aware UTC datetimes for timestamps (PySpark hands back naive local times), and
    ``file:`` URIs as local paths."""
    if isinstance(value, Row):
        return {name: plain(v) for name, v in value.asDict(recursive=False).items()}
    if isinstance(value, dict):
        return {name: plain(v) for name, v in value.items()}
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc)
    return value


def collect_plain(df: DataFrame) -> list[dict]:
    rows = [plain(row) for row in df.collect()]
    for row in rows:
        source = row.get(SOURCE)
        if isinstance(source, dict) and isinstance(source.get("file"), str):
            source["file"] = source["file"].removeprefix("file:")
    return rows


def frozen(value):
    """A hashable form of a plain value, so that rows can be counted as a multiset."""
    if isinstance(value, dict):
        return tuple((k, frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("list",) + tuple(frozen(v) for v in value)
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def assert_same_rows(actual: Iterable[dict], expected: Iterable[dict]) -> None:
    """The two multisets of rows are equal: nothing lost, nothing duplicated, nothing changed;
    column order included. On failure, shows a few rows of each side of the difference."""
    actual_counts = Counter(frozen(r) for r in actual)
    expected_counts = Counter(frozen(r) for r in expected)
    missing = expected_counts - actual_counts
    unexpected = actual_counts - expected_counts
    if missing or unexpected:
        def show(counter):
            return "\n".join(f"  {dict(row)!r}" for row in list(counter.elements())[:3])
        pytest.fail(f"{sum(missing.values())} expected row(s) missing, {sum(unexpected.values())} "
                    f"unexpected row(s) returned (of {sum(expected_counts.values())} expected)\n"
                    f"{_closest_differences(list(missing), list(unexpected))}"
                    f"missing, e.g.:\n{show(missing)}\nunexpected, e.g.:\n{show(unexpected)}")


def _closest_differences(missing: list[tuple], unexpected: list[tuple]) -> str:
    """For a few missing rows, the columns in which the most similar returned row differs."""
    if not missing or not unexpected:
        return ""
    lines = []
    for row in missing[:3]:
        expected = dict(row)
        closest = dict(max(unexpected[:5000], key=lambda other: sum(
            1 for name, value in other if expected.get(name) == value)))
        diff = {name: (closest.get(name), value) for name, value in expected.items() if closest.get(name) != value}
        lines.append(f"  closest returned row differs in (read, expected): {diff!r}")
    return "\n".join(lines) + "\n"


def project(rows: Iterable[dict], columns: list[str]) -> list[dict]:
    """``SELECT columns`` done in Python, with ``struct.field`` for a nested field."""
    def pick(row, column):
        top, _, field = column.partition(".")
        value = row[top]
        return value if not field or value is None else value[field]
    return [{column.split(".")[-1]: pick(row, column) for column in columns} for row in rows]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def error_text(error: BaseException) -> str:
    """The message of a failure raised through py4j, without the Java stack trace."""
    java = getattr(error, "java_exception", None)
    if java is not None:
        messages = []
        while java is not None:
            messages.append(str(java.getMessage()))
            java = java.getCause()
        return "\n".join(messages)
    return str(error)


@contextmanager
def raises_replicate(error_id: str, *fragments: str):
    """Expects the block to fail with the connector error ``error_id`` whose message contains
    every one of ``fragments``; yields a list that receives the message."""
    seen: list[str] = []
    with pytest.raises(Exception) as info:
        yield seen
    text = error_text(info.value)
    seen.append(text)
    assert f"[{error_id}]" in text, f"expected {error_id}, got: {text[:2000]}"
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} is not in the error message: {text[:2000]}"


# --------------------------------------------------------------------------------------------
# Subprocesses (for what must not touch the session's JVM)
# --------------------------------------------------------------------------------------------


class LogWatch:
    """For a test that polls tables while another process writes them: whether a check of each
    table has held, made again only once the table's commit log (the files matching ``pattern``
    in ``log_dir``) has a commit it had not at the last check, and not after it held. Reading the
    tables every second took a core from the writer on a two-core machine. One watch per wait:
    what held for an earlier expectation is not carried over."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._commits: dict[Path, int] = {}
        self._held: set[Path] = set()

    def holds(self, log_dir: Path, check: Callable[[], bool]) -> bool:
        commits = len(list(log_dir.glob(self.pattern)))
        if log_dir not in self._held and commits and self._commits.get(log_dir) != commits:
            self._commits[log_dir] = commits
            if check():
                self._held.add(log_dir)
        return log_dir in self._held


def run_python(code: str, *, timeout: float = 180, env: dict | None = None):
    """Runs ``code`` in a fresh interpreter (this one's, in this environment with ``env`` added, its
    JVMs short-lived: :func:`_cluster.short_jvm_env`); returns the CompletedProcess with text
    stdout/stderr."""
    import textwrap
    from _cluster import dies_with_parent
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=short_jvm_env(**(env or {})), preexec_fn=dies_with_parent())


# --------------------------------------------------------------------------------------------
# Accounting (README "Decoding and accounting")
# --------------------------------------------------------------------------------------------

OUTCOME_COUNTERS = ("rowsReturned", "metadataMessages", "filteredOut", "dropped")


def assert_accounted(metrics: dict[str, int]) -> None:
    """Nothing lost silently: every message read has exactly one outcome
    (``messagesRead = rowsReturned + metadataMessages + filteredOut + dropped``), and every
    malformed message exactly one reason (``malformed = sum of malformed_<REASON>``)."""
    assert metrics["messagesRead"] == sum(metrics[name] for name in OUTCOME_COUNTERS), metrics
    reasons = {name: n for name, n in metrics.items() if name.startswith("malformed_")}
    assert reasons, f"no per-reason counters in {metrics}"
    assert metrics["malformed"] == sum(reasons.values()), metrics


def read_metrics(spark: SparkSession) -> dict[str, int]:
    """The counts of the last read, checked to balance."""
    metrics = spark_replicate.last_read_metrics(spark)
    assert_accounted(metrics)
    return metrics
