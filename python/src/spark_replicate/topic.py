"""Apply every table of a landed topic, each into its own Delta table (README "Applying changes").

``apply_topic`` applies each table with :func:`spark_replicate.apply_changes` into
``target/SCHEMA.TABLE``. With ``transactional=True`` a run applies only whole transactions, and
holds the rest beside the targets, in ``target/_spark_replicate/held/SCHEMA.TABLE`` (a Delta
table per table, of the reader's rows as read), for a later run:

1. *pending*: per table, the rows read now and the rows held, a transaction's event counters
   across all tables giving whether it is complete (counters 1 to the one marked
   ``header__transaction_last_event`` all there);
2. *boundary*: the first change sequence of the oldest incomplete transaction. Everything from
   it on is held, complete or not, so that each key's changes are applied in order, and every
   target shows its table as of the same commit (the last before the boundary). A transaction
   whose rows are all applied already (each not newer than its key's last applied change: a
   replay, or a run that died after applying it) neither holds anything back nor is held;
3. every table's rows before the boundary (and its full load) are applied, then each table's
   held rows are written anew (those from the boundary on).

The boundary is computed from what is durable (the input and the held rows) before anything is
written, and the applies are idempotent, so a run that dies anywhere is finished by the next,
which decides again from the same rows (and whatever landed since).

With ``continuous=True`` each table is a stream applied per micro-batch, run and supervised as
:mod:`spark_replicate.export` runs its streams. With both, a transaction spanning tables that
are separate streams, each cycle first appends every table's new files to its held rows (a
stream per table into the held table, exactly once), then applies the held rows of all tables as
a transactional run applies its input. Uses only the DataFrame API and SQL.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Callable

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession, functions as F
from pyspark.sql.streaming import DataStreamWriter

from spark_replicate.apply import (_ABSENT, LAST_APPLIED, STATE_DIR, ApplyResult, _apply_batch, applied_sequences,
                                   applied_since, micro_batch_applier)
from spark_replicate.cdc import OPERATION, SEQUENCE, table_layout
from spark_replicate.export import _TableExport, stream_tables
from spark_replicate.session import Paths, _option_name, _option_value, read_tables

__all__ = ["apply_topic", "ReplicateError"]

TRANSACTION_ID = "header__transaction_id"
EVENT_COUNTER = "header__transaction_event_counter"
LAST_EVENT = "header__transaction_last_event"
NO_TRANSACTION_HEADERS = "REPLICATE_NO_TRANSACTION_HEADERS"


class ReplicateError(ValueError):
    """A failure with a stable ``REPLICATE_*`` identifier (``getCondition()``), as the
    connector's JVM errors carry; the message starts with it."""

    def __init__(self, condition: str, detail: str):
        super().__init__(f"[{condition}] {detail}")
        self.condition = condition

    def getCondition(self) -> str:  # noqa: N802 (the name PySpark's errors use)
        return self.condition


def apply_topic(spark: SparkSession, path: Paths, target: str, schema_topic: Paths | None = None, scd_type: int = 1,
                transactional: bool = False, continuous: bool = False, interval_seconds: float = 60,
                **reader_options: object) -> dict[str, ApplyResult]:
    """Applies every table of a landed topic (the tables its metadata announces, as
    :func:`spark_replicate.read_tables` reads them, with ``reader_options``) to its own Delta table
    ``target/SCHEMA.TABLE``; returns ``{"SCHEMA.TABLE": ApplyResult}``. Over Kafka
    (``kafka.bootstrap.servers`` and ``subscribe``, ``subscribePattern`` or ``assign`` among
    ``reader_options``) ``path`` is None and ``schema_topic`` the Kafka topic of the metadata.

    Each table's state is kept beside its Delta table, so a rerun, after a crash or once more
    files have landed, finishes what was interrupted and applies only the changes not applied yet
    (it reads the input again: the ones applied already are counted as ignored). With
    ``transactional=True`` only whole transactions are applied (see the module's doc); the rows
    held for a later run are counted in ``ApplyResult.held``.

    With ``continuous=True`` each table is a streaming read of the landed files (over Kafka, of
    the Kafka topics, from the earliest offsets unless ``startingOffsets`` says otherwise),
    applied per micro-batch (a trigger every ``interval_seconds``) with its checkpoint under
    ``target/_spark_replicate/checkpoints/SCHEMA.TABLE``, as ``spark-replicate export
    --continuous`` runs: new tables are picked up, and a table that gains columns is restarted
    with them. With ``transactional=True`` too, every ``interval_seconds`` a cycle holds each
    table's new files and applies the whole transactions held (see the module's doc). It runs
    until interrupted (KeyboardInterrupt), stops every query between batches and returns what the
    run applied per table (its counts summed; ``batch`` the last; ``held`` after the last cycle).
    """
    target = target.rstrip("/")
    if continuous:
        return apply_continuously(spark, path, target, schema_topic, scd_type, transactional, interval_seconds,
                                  reader_options)
    tables = read_tables(spark, path, schema_topic=schema_topic, **reader_options)
    if transactional:
        return _apply_transactions(spark, tables, target, scd_type)
    return {name: _apply_table(changes, target, name, scd_type) for name, changes in tables.items()}


def apply_continuously(spark: SparkSession, path: Paths, target: str, schema_topic: Paths | None, scd_type: int,
                       transactional: bool, interval_seconds: float, reader_options: dict,
                       progress: Callable[[str], None] = lambda line: None,
                       should_stop: Callable[[], bool] = lambda: False) -> dict[str, ApplyResult]:
    """``apply_topic(continuous=True)``, until ``should_stop()``; ``progress`` gets a line per step and batch."""
    options = {_option_name(name): _option_value(value) for name, value in reader_options.items()}
    if transactional:
        return _apply_transactions_continuously(spark, path, target, schema_topic, scd_type, interval_seconds, options,
                                                progress, should_stop)
    started = {}

    def table_apply(spark, inputs, output, table, options, trigger) -> _TableApply:
        started[table] = applied_since(spark, f"{output}/{table}", 0).batch
        return _TableApply(spark, inputs, output, table, options, trigger, scd_type)
    # The result lines are the ApplyResults returned; progress has a line per batch.
    stream_tables(spark, path, target, table_apply, schema_topic, options, True, interval_seconds, lambda line: None,
                  progress, should_stop)
    return {table: applied_since(spark, f"{target}/{table}", batch) for table, batch in sorted(started.items())}


def _apply_transactions_continuously(spark: SparkSession, path: Paths, target: str, schema_topic: Paths | None,
                                     scd_type: int, interval_seconds: float, options: dict[str, str],
                                     progress: Callable[[str], None],
                                     should_stop: Callable[[], bool]) -> dict[str, ApplyResult]:
    """``apply_topic(transactional=True, continuous=True)``: a cycle every ``interval_seconds`` until
    ``should_stop()`` (or KeyboardInterrupt), each (1) appending every table's files landed since
    the last cycle to the rows it holds, once (a stream per table with ``Trigger.AvailableNow`` into
    its held Delta table, whose sink commits a micro-batch once however often it runs), then (2)
    applying the held rows of all tables as a transactional batch run applies what it reads. A
    cycle that dies is finished by the next, as a batch run is: the held rows are durable. A cycle
    that landed no row after one that applied skips (2): the held rows are what that one held, and
    applying them again would only log an empty batch per table."""
    started: dict[str, int] = {}
    held: dict[str, int] = {}
    settled = False  # whether the held rows are as the last cycle that applied left them
    try:
        while True:
            cycle = time.monotonic()
            landed = stream_tables(spark, path, target, _TableHold, schema_topic, options, False, interval_seconds,
                                   lambda line: None, progress, lambda: False)
            settled = settled and not any(r.rows for r in landed)
            pending = {} if settled else {
                r.table: rows for r in landed if (rows := _held_rows(spark, target, r.table)) is not None}
            for table in pending:
                started.setdefault(table, applied_since(spark, f"{target}/{table}", 0).batch)
            if pending:
                _check_transaction_headers(pending)
                results = _apply_pending(spark, pending, target, scd_type)
                held.update({table: result.held for table, result in results.items()})
                settled = True
                progress("applied the whole transactions held: " + ", ".join(
                    f"{table} ({result.held} row(s) still held)" for table, result in sorted(results.items())))
            while not should_stop() and time.monotonic() - cycle < interval_seconds:
                time.sleep(min(0.2, interval_seconds))
            if should_stop():
                break
    except KeyboardInterrupt:
        progress("interrupted: what the cycles applied stays applied, and what they held stays held")
    return {table: dataclasses.replace(applied_since(spark, f"{target}/{table}", batch), held=held.get(table, 0))
            for table, batch in sorted(started.items())}


def _held_rows(spark: SparkSession, target: str, table: str) -> DataFrame | None:
    """The rows ``table`` holds, or None before a run or a cycle first held its rows (any other
    failure to read them is raised: rows held are never taken for none)."""
    try:
        rows = spark.read.format("delta").load(_held_path(target, table))
        rows.schema  # (Spark Connect analyses a read only when asked)
        return rows
    except AnalysisException as error:
        if error.getCondition() not in _ABSENT:
            raise
        return None


class _TableHold(_TableExport):
    """One table's files landed since its last cycle, appended once to the rows it holds."""

    action = "holding the new rows of"

    def __init__(self, spark, inputs, output, table, options, trigger):
        super().__init__(spark, inputs, output, table, options, trigger)
        self.path = _held_path(output, table)
        # Not the checkpoints of continuous apply without transactions: each mode has its own progress.
        self.checkpoint = f"{output}/{STATE_DIR}/held-checkpoints/{table}"

    def writer(self, df: DataFrame) -> DataStreamWriter:
        return df.writeStream.format("delta").option("path", self.path).option("mergeSchema", "true")

    def batch_line(self, files: int, rows: int) -> str:
        return f"{self.table}: {rows} row(s) of {_new_input(files)} held for the next apply"


class _TableApply(_TableExport):
    """One table's stream applied per micro-batch to its Delta table ``target/SCHEMA.TABLE``."""

    action = "applying"

    def __init__(self, spark, inputs, output, table, options, trigger, scd_type: int):
        super().__init__(spark, inputs, output, table, options, trigger)
        self.scd_type = scd_type

    def writer(self, df: DataFrame) -> DataStreamWriter:
        return df.writeStream.foreachBatch(micro_batch_applier(df, self.path, self.scd_type, self.checkpoint))

    def batch_line(self, files: int, rows: int) -> str:
        # Spark counts a micro-batch's rows once per job that reads them, and applying runs several.
        return f"{self.table}: {_new_input(files)} applied"


def _new_input(files: int) -> str:
    """What a micro-batch read: new files, or (none: reading Kafka) new records."""
    return f"{files} new input file(s)" if files else "new Kafka records"


def _apply_table(changes: DataFrame, target: str, name: str, scd_type: int, read_once: bool = False) -> ApplyResult:
    """``read_once``: ``changes`` are the same however often they are read, so the batch need
    not read them into a local checkpoint of its own."""
    try:
        return _apply_batch(changes, f"{target}/{name}", table_layout(changes, None), scd_type, read_once=read_once)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from error


def _apply_transactions(spark: SparkSession, tables: dict[str, DataFrame], target: str,
                        scd_type: int) -> dict[str, ApplyResult]:
    pending = {name: _with_held(changes, target, name) for name, changes in tables.items()}
    # (Of the rows read once: rows held passed this check when they were held.)
    _check_transaction_headers(pending)
    return _apply_pending(spark, pending, target, scd_type)


def _apply_pending(spark: SparkSession, pending: dict[str, DataFrame], target: str,
                   scd_type: int) -> dict[str, ApplyResult]:
    """Applies each table's ``pending`` rows up to the boundary and holds the rest (the module's doc).
    The rows are the same however often they are read: a local checkpoint's (:func:`_with_held`), or
    a held table's, which nothing writes before they are applied."""
    boundary = _boundary(pending, target, scd_type)
    before = F.col(SEQUENCE).isNull() | (F.col(SEQUENCE) < boundary) if boundary is not None else F.lit(True)
    results = {name: _apply_table(rows.where(before), target, name, scd_type, read_once=True)
               for name, rows in pending.items()}
    for name, rows in pending.items():
        # Every row from the boundary on is a change: (transaction, event counter) is its identity.
        (rows.where(~before).dropDuplicates([TRANSACTION_ID, EVENT_COUNTER]).write.format("delta").mode("overwrite")
         .option("overwriteSchema", "true").save(_held_path(target, name)))
        held = spark.read.format("delta").load(_held_path(target, name)).count()
        results[name] = dataclasses.replace(results[name], held=held)
    return results


def _held_path(target: str, table: str) -> str:
    return f"{target}/{STATE_DIR}/held/{table}"


def _with_held(changes: DataFrame, target: str, table: str) -> DataFrame:
    """The rows read and the rows ``table`` holds (the columns read first: they carry the keys'
    metadata), read once.

    The run's steps (the check of the headers, the boundary, the table's apply, the rows held anew)
    take these rows from a local checkpoint, not from the input: a Kafka read evaluated again reads
    up to the latest offsets again, and a transaction published between two steps would be applied
    in part (the boundary knew nothing of it). Each table is read once rather than once per step."""
    held = _held_rows(changes.sparkSession, target, table)
    return (changes if held is None else changes.unionByName(held, allowMissingColumns=True)).localCheckpoint()


def _boundary(pending: dict[str, DataFrame], target: str, scd_type: int) -> str | None:
    """The first change sequence of the oldest incomplete transaction not applied yet, or None.
    A transaction is applied when none of its rows is newer than its key's last applied change."""
    events = []
    for name, rows in pending.items():
        applied = applied_sequences(rows, f"{target}/{name}", scd_type)
        last_applied = F.col(LAST_APPLIED)
        changes = rows.where(F.col(OPERATION) != "REFRESH").join(applied, table_layout(rows, None).keys, "left")
        events.append(changes.select(TRANSACTION_ID, EVENT_COUNTER, LAST_EVENT, SEQUENCE,
                                     (last_applied.isNull() | (F.col(SEQUENCE) > last_applied)).alias("fresh")))
    transactions = functools.reduce(DataFrame.unionByName, events).groupBy(TRANSACTION_ID).agg(
        F.count_distinct(EVENT_COUNTER).alias("events"),
        F.max(F.when(F.col(LAST_EVENT), F.col(EVENT_COUNTER))).alias("last"),
        F.max(EVENT_COUNTER).alias("highest"), F.min(SEQUENCE).alias("first"), F.max("fresh").alias("live"))
    complete = F.coalesce((F.col("events") == F.col("last")) & (F.col("highest") == F.col("last")), F.lit(False))
    return transactions.agg(F.min(F.when(F.col("live") & ~complete, F.col("first")))).first()[0]


def _check_transaction_headers(tables: dict[str, DataFrame]) -> None:
    """Every change read carries its transaction's id, event counter and last-event flag."""
    unheaded = F.col(TRANSACTION_ID).isNull() | F.col(EVENT_COUNTER).isNull() | F.col(LAST_EVENT).isNull()
    counts = functools.reduce(DataFrame.unionByName, (
        changes.where((F.col(OPERATION) != "REFRESH") & unheaded).select(F.lit(name).alias("table"))
        for name, changes in tables.items())).groupBy("table").count().orderBy("table").collect()
    if counts:
        where = ", ".join(f"{row['table']} ({row['count']})" for row in counts)
        raise ReplicateError(NO_TRANSACTION_HEADERS, (
            f"transactional apply needs every change's {TRANSACTION_ID}, {EVENT_COUNTER} and {LAST_EVENT}, which older "
            f"Replicate versions do not send; change rows without them: {where}. Apply without transactional=True "
            "(each table's changes as they come), or from a Replicate version that sends them"))
