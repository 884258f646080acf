"""Session set-up and the typed reader shorthand."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager, nullcontext
from typing import ContextManager, Iterable, Iterator, NamedTuple, Union

import pyspark
from pyspark.sql import DataFrame, SparkSession

from spark_replicate._delta import DELTA_CATALOG, DELTA_EXTENSION, delta_package
from spark_replicate._jar import ReplicateSetupError, check_spark_version, jar_path
from spark_replicate.kafka_connector import kafka_settings

Paths = Union[str, Iterable[str]]
# Registers the connector's SQL functions (``from_replicate``) in the session.
EXTENSIONS = "io.sparkreplicate.ReplicateExtensions"
# HotSpot never JIT-compiles a method of over 8,000 bytes of bytecode, and Spark's whole-stage code
# for a wide projection (the apply helpers' events carry a value per column) outgrows that and
# runs interpreted: latest_state over 400,000 changes of a 30-column table took 1.4x as long. At this
# limit Spark splits such a stage instead: its own advice for HotSpot, which its default (65535, the
# largest method Java allows) does not follow.
HUGE_METHOD_LIMIT, JIT_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit", 8000
# Delta replays a table's log in this many tasks each time it reads a new version: 50 by default,
# sized for a cluster. On local[N] they queue on N cores, and every apply batch reads several new
# versions: 400,000 changes applied in 52-56 s at 50, 42 s at 2 (local[2]).
DELTA_SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
# Spark keeps the classes it generated for this many plans, and compiles a plan it evicted again. An
# apply batch alone runs about 200 distinct ones (its own and Delta's queries), so at the default of
# 100 every batch compiled them all anew: six batches of 100 rows, applied a second time in one
# session, compiled 732 plans again (6.4 s in Janino, then the JIT's share) at 100 and none at 1000.
CODEGEN_CACHE, CODEGEN_CACHE_ENTRIES = "spark.sql.codegen.cache.maxEntries", 1000


def configure_spark(builder: SparkSession.Builder, kafka: bool = False, delta: bool = False) -> SparkSession.Builder:
    """Adds the bundled connector jar and its SQL functions (``spark.sql.extensions``) to ``builder``
    and returns it.

    Call it before the first ``getOrCreate()``: a JVM cannot take the jars once it runs, so a
    running SparkContext without them is an error rather than a silent no-op. A builder for a Spark
    Connect server is refused: the jar belongs on the server.

    With ``kafka=True`` it also adds Spark's own Kafka source (spark-sql-kafka-0-10) for the
    installed pyspark through ``spark.jars.packages``, which Spark resolves from Maven Central when
    the session starts: ``format("replicate")`` reads Kafka through it. With ``delta=True``, Delta
    Lake (the delta-spark jars built for the running Spark minor, its SQL extension and its
    catalog), as ``apply_changes`` needs, and room for 1000 plans' generated classes instead of 100
    (``spark.sql.codegen.cache.maxEntries``); on a ``local[N]`` master, also Delta's log replay in N
    tasks instead of 50 (``spark.databricks.delta.snapshotPartitions``). Each is set unless the
    builder has a value.
    """
    _refuse_remote(builder)
    check_spark_version(pyspark.__version__, jar_path())
    package = delta_package(pyspark.__version__) if delta else None
    jar = str(jar_path())
    active = pyspark.SparkContext._active_spark_context
    if active is not None:
        jars = active.getConf().get("spark.jars", "")
        if jar not in jars.split(",") or (delta and not _loadable(active._jvm, DELTA_EXTENSION)):
            raise ReplicateSetupError(
                f"a SparkSession without the spark-replicate jar{' or Delta Lake' if delta else ''} is already "
                f"running; call spark_replicate.configure_spark(SparkSession.builder{', delta=True' if delta else ''}) "
                "before the first getOrCreate() of the process"
            )
        return builder
    if pyspark.SparkContext._jvm is not None and not _loadable(pyspark.SparkContext._jvm, _CONNECTOR_CLASS):
        # A stopped session keeps its JVM, whose class path is fixed: a new session would start
        # but could not find the `replicate` format.
        raise ReplicateSetupError(
            "this Python process already started a Spark JVM without the spark-replicate jar "
            "(stopping a session does not stop its JVM); call spark_replicate.configure_spark "
            "before the first getOrCreate() of the process, or use a new process"
        )
    if kafka:
        for key, value in kafka_settings(pyspark.__version__, getattr(builder, "_options", {})).items():
            builder = builder.config(key, value)
    builder = _append_setting(_append_setting(builder, "spark.jars", jar), "spark.sql.extensions", EXTENSIONS)
    if HUGE_METHOD_LIMIT not in getattr(builder, "_options", {}):
        builder = builder.config(HUGE_METHOD_LIMIT, str(JIT_METHOD_LIMIT))
    if package is not None:
        builder = _append_setting(_append_setting(builder, "spark.jars.packages", package),
                                  "spark.sql.extensions", DELTA_EXTENSION)
        builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        options = getattr(builder, "_options", {})
        if CODEGEN_CACHE not in options:
            builder = builder.config(CODEGEN_CACHE, str(CODEGEN_CACHE_ENTRIES))
        cores = local_cores(options.get("spark.master"))
        if cores is not None and DELTA_SNAPSHOT_PARTITIONS not in options:
            builder = builder.config(DELTA_SNAPSHOT_PARTITIONS, str(cores))
    return builder


def local_cores(master: str | None) -> int | None:
    """The cores of a ``local``, ``local[N]``, ``local[*]`` or ``local[N, retries]`` master; None
    for any other (a cluster's), or when the builder names none."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", (master or "").strip())
    if match is None:
        return None
    return (os.cpu_count() or 1) if match.group(1) == "*" else int(match.group(1) or 1)


def jit_sized_methods(spark: SparkSession) -> ContextManager[None]:
    """Runs the block with ``HUGE_METHOD_LIMIT`` at most ``JIT_METHOD_LIMIT`` (a session that
    ``configure_spark`` did not set up has Spark's default), then restores the session's value."""
    if int(spark.conf.get(HUGE_METHOD_LIMIT)) <= JIT_METHOD_LIMIT:
        return nullcontext()
    return session_setting(spark, HUGE_METHOD_LIMIT, str(JIT_METHOD_LIMIT))


def register_functions(spark: SparkSession) -> None:
    """Registers the connector's SQL functions on a classic session started without its
    ``spark.sql.extensions`` (``configure_spark`` sets them); a Spark Connect server needs them set."""
    if getattr(spark, "_jsparkSession", None) is None:  # Spark Connect
        return
    if not _loadable(spark._jvm, _REPLAY_FUNCTIONS_CLASS):
        raise ReplicateSetupError("applying changes needs the spark-replicate jar on the session: build it with "
                                  "spark_replicate.configure_spark, or add the jar to spark.jars")
    spark._jvm.io.sparkreplicate.cdc.ReplayFunctions.register(spark._jsparkSession)


@contextmanager
def session_setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Runs the block with the session's setting ``key`` at ``value``, then restores the session's
    own value (or unsets it, when the session had not set it)."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def _append_setting(builder: SparkSession.Builder, key: str, value: str) -> SparkSession.Builder:
    """Adds ``value`` to a comma-separated setting, keeping what the builder already has."""
    existing = getattr(builder, "_options", {}).get(key)
    if existing and value in existing.split(","):
        return builder
    return builder.config(key, f"{existing},{value}" if existing else value)


def _refuse_remote(builder: SparkSession.Builder) -> None:
    """A Spark Connect client cannot put a jar on the server's class path: say where it goes.
    ``remote("local...")`` is let through, as pyspark then starts its own server with the
    builder's ``spark.jars``."""
    from pyspark.util import is_remote_only

    remote = getattr(builder, "_options", {}).get("spark.remote", os.environ.get("SPARK_REMOTE"))
    if not is_remote_only() and (remote is None or remote.startswith("local")):
        return
    raise ReplicateSetupError(
        f"configure_spark cannot add the spark-replicate jar to a Spark Connect server "
        f"({remote or 'pyspark-connect client'}): the jar belongs on the server. Start the server with "
        f"--jars {jar_path()} (or set spark.jars to it; spark_replicate.jar_path() is its path), or "
        "upload it from this client with spark.addArtifacts(spark_replicate.jar_path()), then use "
        'spark.read.format("replicate") and the spark_replicate helpers as usual'
    )


_CONNECTOR_CLASS = "io.sparkreplicate.v2.ReplicateDataSource"
_REPLAY_FUNCTIONS_CLASS = "io.sparkreplicate.cdc.ReplayFunctions"


def _loadable(jvm, class_name: str) -> bool:
    from py4j.protocol import Py4JJavaError

    try:
        jvm.java.lang.Class.forName(class_name, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Py4JJavaError:
        return False


def last_read_metrics(spark: SparkSession) -> dict[str, int]:
    """Counts of the last replicate scan this session executed, exact once its action returned;
    empty before the first read.

    Keys: ``messagesRead``, ``rowsReturned``, ``metadataMessages``, ``filteredOut`` (messages of
    other tables), ``malformed``, ``dropped``, ``filesSkipped``, ``maskBitsIgnored`` (rows whose
    masks set bits past the table's last column), ``tombstones`` (Kafka records without a value:
    no message, so not in ``messagesRead``), ``metadataWaits`` and ``metadataWaitMillis`` (waits
    for metadata that had not arrived yet, and their time) and ``malformed_<REASON>`` per ``REPLICATE_*``
    reason. Invariant: messagesRead = rowsReturned + metadataMessages + filteredOut + dropped.
    Read through the ``replicate-metrics`` source, so it works on a Spark Connect session too.
    """
    rows = spark.read.format("replicate-metrics").load().collect()
    return rows[0].asDict() if rows else {}


def _option_name(name: str) -> str:
    """Accepts Python-style names too: ``expand_masks`` is the option ``expandMasks``."""
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def read(
    spark: SparkSession,
    path: Paths,
    schema_topic: Paths | None = None,
    table: str | None = None,
    **options: object,
) -> DataFrame:
    """Reads landed Replicate topics: ``spark.read.format("replicate")`` with typed arguments.

    ``path`` and ``schema_topic`` take one path or glob or several; ``table`` is ``SCHEMA.TABLE``;
    other options (``mode``, ``framing``, ``expand_masks``/``expandMasks``, ...) pass through.
    Over Kafka (``kafka.bootstrap.servers`` and ``subscribe``... among the options) ``path`` is
    None and ``schema_topic`` the Kafka topic of the metadata messages.
    """
    reader = spark.read.format("replicate")
    if schema_topic is not None:
        reader = reader.option("schemaTopic", _option_value(_path_list(schema_topic)))
    if table is not None:
        reader = reader.option("table", table)
    for name, value in options.items():
        reader = reader.option(_option_name(name), _option_value(value))
    return reader.load() if path is None else reader.load(path if isinstance(path, str) else list(path))


def _path_list(paths: Paths) -> list[str]:
    return [paths] if isinstance(paths, str) else list(paths)


def list_tables(spark: SparkSession, path: Paths, **options: object) -> list[str]:
    """The ``SCHEMA.TABLE`` names announced by the metadata messages of ``path``, sorted, read
    through the metadata view (``messages`` = ``metadata``); ``options`` as for :func:`read`."""
    view = read(spark, path, **{**options, "messages": "metadata"})
    rows = view.where("table_name IS NOT NULL").select("schema_name", "table_name").collect()
    return sorted({f"{row.schema_name}.{row.table_name}" for row in rows})


def read_tables(spark: SparkSession, path: Paths, schema_topic: Paths | None = None,
                **options: object) -> dict[str, DataFrame]:
    """Every table of a landed topic: ``{"SCHEMA.TABLE": DataFrame}``, one flat typed read each.

    The tables are those the metadata messages of ``schema_topic`` announce (of ``path`` when
    ``schema_topic`` is None), listed through the metadata view; ``options`` are :func:`read`'s
    (``mode``, ``framing``, ``expand_masks``, ...) and apply to every table's read. Over Kafka
    (``kafka.bootstrap.servers`` among the options, with ``subscribe``, ``subscribePattern`` or
    ``assign``) ``path`` is None and ``schema_topic`` the Kafka topic of the metadata messages
    (None: those of the subscribed topics), read whole whatever the offset options say.
    """
    named = {_option_name(name): value for name, value in options.items()}
    if any(name.lower() in ("table", "schematopic", "messages") for name in named):
        raise TypeError("read_tables reads every table of the metadata: pass neither `table`, `messages` "
                        "nor `schemaTopic` (use the schema_topic argument)")
    if _is_kafka(named) and path is not None:
        raise TypeError("over Kafka the data topics are the options `subscribe`, `subscribePattern` or "
                        "`assign`: pass None as the path")
    metadata = MetadataSource.of(path, schema_topic, named)
    tables = list_tables(spark, metadata.source, **metadata.listing)
    if not tables:
        raise ValueError(f"no metadata (MD) message was found in {metadata.where}; pass schema_topic= the topic "
                         "that holds Replicate's metadata messages")
    return {name: read(spark, path, schema_topic=schema_topic, table=name, **named) for name in tables}


class MetadataSource(NamedTuple):
    """Where the tables of landed or Kafka topics are listed: the metadata view of ``source`` (None:
    Kafka's, given by the options) read with ``listing``; ``where`` names it in messages."""

    source: Paths | None
    listing: dict[str, object]
    where: str

    @staticmethod
    def of(path: Paths | None, schema_topic: Paths | None, options: dict[str, object]) -> "MetadataSource":
        if _is_kafka(options):
            where = f"Kafka topic {schema_topic}" if schema_topic is not None else "the subscribed Kafka topics"
            return MetadataSource(None, _kafka_metadata_options(options, schema_topic), where)
        # `framing` describes the data paths; the schema topic's framing is always detected.
        listing = options if schema_topic is None else {n: v for n, v in options.items() if n.lower() != "framing"}
        source = path if schema_topic is None else schema_topic
        return MetadataSource(source, listing, ", ".join(_path_list(source)))


_KAFKA_SUBSCRIPTIONS = ("subscribe", "subscribepattern", "assign")
# Where a Kafka read starts and ends: the metadata is read from all of its topic instead.
_KAFKA_OFFSETS = ("startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
                  "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy")


def _is_kafka(options: dict[str, object]) -> bool:
    return any(name.lower() == "kafka.bootstrap.servers" and str(value).strip() for name, value in options.items())


def _kafka_metadata_options(options: dict[str, object], schema_topic: Paths | None) -> dict[str, object]:
    """The options of the metadata view of ``schema_topic`` (None: of the subscribed topics), whole."""
    listing = {name: value for name, value in options.items() if name.lower() not in _KAFKA_OFFSETS and
               (schema_topic is None or name.lower() not in _KAFKA_SUBSCRIPTIONS)}
    if schema_topic is not None:
        listing["subscribe"] = _option_value(_path_list(schema_topic))
    return {**listing, "startingOffsets": "earliest", "endingOffsets": "latest"}
