"""Apply Replicate changes to a Delta Lake table, batch after batch (README "Applying changes").

Beside the target, under ``<target location>/_spark_replicate/`` (Delta keeps names starting with
``_`` out of the table, and VACUUM leaves them), two Delta tables and a directory keep what the
target's own columns cannot show:

- ``keys`` (Delta): one row per key ever applied: the change sequence of its last applied change
  ('' for a full-load row) and whether that change deleted it (a tombstone);
- ``staged`` (Parquet files): the batch being applied: its fresh changes replayed over the target's
  rows (type 1: each key's last event only);
- ``batches`` (Delta): a row when a batch is staged (unless it writes nothing) and one when it is
  applied, with its counts.

A batch is (1) staged: the input's changes newer than their key's last applied one, replayed
(:func:`spark_replicate.cdc.replay`; type 1: :func:`~spark_replicate.cdc.replay_last`) after the
row the target holds for the key, written to ``staged`` and logged; (2) merged from ``staged``
into the target, then into ``keys`` (inserted into a table that holds no file; a path target and
``keys`` are made by their first batch's write); (3) logged applied.
Both steps are idempotent (merging the same staged rows again leaves the table as it was), and
every call first finishes a batch that was staged but never logged applied (a run that died), from
``staged`` as it was, so a crash anywhere followed by a rerun leaves the table a clean run leaves.
Each write of step (2) is tagged with the batch (Delta's idempotent writes, ``txnAppId`` and
``txnVersion``), so finishing a batch skips the write a run that died had committed.
Uses only the DataFrame API and SQL, so it runs on Spark Connect too (with Delta on the server).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator, NamedTuple, Optional
from uuid import uuid4

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession, functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spark_replicate.cdc import (DELETE, DERIVED, END_AT, FULL, LAST, OPERATION, PARTIAL, RANK, SEQUENCE, START_AT,
                                 Layout, change_events, full_struct, quote, quoted, replay, replay_last,
                                 sql_names, sql_string, table_layout, windows)
from spark_replicate.session import jit_sized_methods, session_setting

__all__ = ["apply_changes", "ApplyResult"]

STATE_DIR = "_spark_replicate"
# Columns of the keys table beside the key columns, and of the staged table beside the table's.
_KEY_SEQUENCE, _DELETED = "__replicate_change_seq", "__replicate_deleted"
# Whether the target held the key before the batch, and whether the key was live before its event.
_EXISTED, _LIVE_BEFORE = "__replicate_existed", "__replicate_live_before"
# On each key's last event: how many of the batch's changes its key took (repeats and stale ones not),
# and how many change rows of the input it had (the input counted by the staging pass).
_APPLIED_CHANGES, _INPUT_ROWS = "__replicate_applied", "__replicate_input_rows"
_BASELINE = "BASELINE"
LAST_APPLIED = "__replicate_last_applied"
_STAGED, _APPLIED = "staged", "applied"
MERGE_MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"
# Delta's idempotent writes: a write tagged with a version its application already committed to the table is skipped.
TXN_APP_ID, TXN_VERSION = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"
APP_ID_PREFIX = "spark-replicate/"
# The log table's property that names the application its batches' writes are tagged with (its name and
# values hold no quote: TBLPROPERTIES takes literals only).
APP_ID_PROPERTY = "spark-replicate.appId"
# What creating a table that exists raises, by path and by name.
_EXISTS = ("DELTA_PATH_EXISTS", "TABLE_OR_VIEW_ALREADY_EXISTS")
# What reading a Delta table by path raises when it is not made yet: no directory; no log in it; a
# directory inside a Delta table (the target's), which Delta takes for a partition of that table.
_ABSENT = ("PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_INVALID_PARTITION_PATH")
# Staged rows are written once and read whole, a few times, never searched: Parquet's dictionaries
# (a hash lookup per value written) would only cost time, about a tenth of a batch's staging.
STAGED_WITHOUT_DICTIONARIES = ("parquet.enable.dictionary", "false")
# Every batch adds files to the ``batches`` and ``keys`` tables (two one-row appends; a MERGE), and
# every batch reads them whole: without compaction a stream applied for days would read thousands of
# small files per batch (400 appends to a log: its read took 0.56 s against 0.27 s after 10; on an
# object store each file costs a request). Delta's auto compaction joins them once 50 are small. It
# is set after a state's first batch: a first load leaves a file or two in each, and Delta's checks
# after the first commits to tables made with it ran jobs that cost a first load over 2 s of 10.
# The target is yours: its compaction is your choice (README "Applying changes").
AUTO_COMPACT = ("delta.autoOptimize.autoCompact", "true")
_AUTO_COMPACT_SQL = "'{}' = '{}'".format(*AUTO_COMPACT)  # (as TBLPROPERTIES lists it)


class _LogRow(NamedTuple):
    """One row of the ``batches`` table: a batch staged or applied, the micro-batch it came from
    (``stream`` is the query's checkpoint location), and its counts."""

    batch: int
    status: str
    stream: Optional[str]
    stream_batch: Optional[int]
    inserted: int
    updated: int
    deleted: int
    ignored: int


_LOG_SCHEMA = StructType([StructField(name, StringType() if name in ("status", "stream") else LongType())
                          for name in _LogRow._fields])


@dataclass(frozen=True)
class ApplyResult:
    """What one batch did. Type 1: ``inserted``, ``updated`` and ``deleted`` count the target's
    rows (keys); type 2: versions opened, versions closed, and keys deleted. ``ignored`` counts
    the input's change rows that were stale (not newer than their key's last applied change) or
    duplicates. ``batch`` is the batch's number in the target's log. ``held`` counts the change
    rows held for a later run, their transaction not complete (``apply_topic(transactional=True)``)."""

    batch: int
    inserted: int
    updated: int
    deleted: int
    ignored: int
    held: int = 0


def apply_changes(changes: DataFrame, target: str, keys: list[str] | None = None, scd_type: int = 1,
                  checkpoint_location: str | None = None):
    """MERGE the changes of one table (its flat layout, as read) into the Delta table ``target``
    (a path if it holds a ``/``, else a table name), created when absent with the table's columns.

    ``scd_type=1`` keeps the current state (one row per live key), ``scd_type=2`` the history
    (one row per version, with ``__START_AT`` and ``__END_AT``). A batch DataFrame is applied once
    and the call returns an :class:`ApplyResult`; a streaming one is applied per micro-batch
    (``foreachBatch``; ``checkpoint_location`` required) and the call returns the started
    ``StreamingQuery``.
    """
    _check_scd_type(scd_type)
    layout = table_layout(changes, keys)
    if not changes.isStreaming:
        if checkpoint_location is not None:
            raise ValueError("checkpoint_location is for a streaming DataFrame; a batch DataFrame is applied once")
        return _apply_batch(changes, target, layout, scd_type)
    if checkpoint_location is None:
        raise ValueError("a streaming DataFrame needs checkpoint_location: where the query keeps its progress")
    return (changes.writeStream.foreachBatch(micro_batch_applier(changes, target, scd_type, checkpoint_location, keys))
            .option("checkpointLocation", checkpoint_location).start())


def micro_batch_applier(changes: DataFrame, target: str, scd_type: int, checkpoint_location: str,
                        keys: list[str] | None = None) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function that applies each micro-batch of the stream ``changes`` (whose
    checkpoint is ``checkpoint_location``) once, however often Spark runs it."""
    layout = table_layout(changes, keys)

    def apply_micro_batch(batch: DataFrame, batch_id: int) -> None:
        _apply_batch(batch, target, layout, scd_type, stream=(checkpoint_location, batch_id))
    return apply_micro_batch


def applied_since(spark: SparkSession, target: str, batch: int) -> ApplyResult:
    """The batches applied to the Delta table at path ``target`` after ``batch``, summed; ``batch``
    is the last of them (the one given when there is none, 0 when the target has no log yet)."""
    counts = ("inserted", "updated", "deleted", "ignored")
    try:  # (Spark Connect analyses the read only when the row is asked for)
        row = (spark.read.format("delta").load(f"{target}/{STATE_DIR}/batches")
               .where((F.col("status") == _APPLIED) & (F.col("batch") > batch))
               .agg(F.max("batch"), *(F.sum(c) for c in counts)).first())
    except AnalysisException:  # not created yet: no batch applied
        return ApplyResult(batch, 0, 0, 0, 0)
    return ApplyResult(row[0] or batch, *(total or 0 for total in row[1:]))


def applied_sequences(changes: DataFrame, target: str, scd_type: int = 1) -> DataFrame:
    """Each key's last applied change sequence in ``target`` ('' for a full-load row): the key
    columns and ``LAST_APPLIED``, once a batch that a run which died left staged is
    finished (none before a first batch)."""
    state = _State(changes.sparkSession, target, changes, table_layout(changes, None), scd_type)
    state.finish_interrupted()
    return state.read_keys().select(*map(quoted, state.layout.keys), F.col(_KEY_SEQUENCE).alias(LAST_APPLIED))


def _apply_batch(changes: DataFrame, target: str, layout: Layout, scd_type: int,
                 stream: tuple[str, int] | None = None, read_once: bool = False) -> ApplyResult:
    """Applies one batch; ``read_once``: ``changes`` give the same rows however often they are
    evaluated (a local checkpoint), so the batch need not read them into one of its own."""
    _check_scd_type(scd_type)
    with jit_sized_methods(changes.sparkSession):
        state = _State(changes.sparkSession, target, changes, layout, scd_type)
        applied = {row.batch for row in state.log if row.status == _APPLIED}
        if stream is not None:
            # Spark runs a micro-batch again after a failure: it may have been applied, or staged.
            done = [row for row in state.log if (row.stream, row.stream_batch) == stream]
            if done:
                if done[0].batch not in applied:
                    state.finish(done[0])
                return _result(done[0])
        state.finish_interrupted()
        entry, writes = state.stage(changes, max((row.batch for row in state.log), default=0) + 1, stream,
                                    read_once)
        state.finish(entry, merge=writes)
        return _result(entry)


def _check_scd_type(scd_type: int) -> None:
    if scd_type not in (1, 2):
        raise ValueError(f"scd_type={scd_type!r}: 1 (current state) or 2 (history)")


def _result(row: _LogRow) -> ApplyResult:
    return ApplyResult(row.batch, row.inserted, row.updated, row.deleted, row.ignored)


class _State:
    """The target and the tables kept beside it; makes what is missing (a path target and the keys
    with their first batch's write)."""

    def __init__(self, spark: SparkSession, target: str, changes: DataFrame, layout: Layout, scd_type: int):
        self.spark, self.layout, self.scd_type = spark, layout, scd_type
        self._target_path = target if "/" in target else None
        if self._target_path and not (target.startswith("/") or ":" in target.split("/")[0]):
            # Delta's SQL names a table by path only when the path is absolute (delta.`/...`).
            raise ValueError(f"target {target!r} is a relative path: pass an absolute path or a URI "
                             "(file:/..., s3a://...), or a table name")
        self.target = _path_name(target) if self._target_path else target
        # Whether a table may hold files (False: certainly none, so an INSERT can stand for a MERGE
        # and the target has no baseline), as DESCRIBE DETAIL told (or the log, or creating the table:
        # below): each DESCRIBE costs Delta a snapshot, so it is asked at most once per table and
        # batch, and forgotten once the batch writes it.
        self._may_hold_files: dict[str, bool] = {}
        # Tables not made yet. A path target and the keys are made by their first batch's write,
        # which costs Delta no snapshot, where a write into a table made empty first costs one (about
        # a second per table on a first load).
        self._absent: set[str] = set()
        if not self._target_path:  # its location is needed first: created at once, if absent
            self._create_target(changes)
        location = self._target_path or self._described(self.target).location
        state = location.rstrip("/") + "/" + STATE_DIR
        self._keys_path, self._staged_path, self._batches_path = (f"{state}/{name}" for name in ("keys", "staged", "batches"))
        self.keys, self.staged, self._batches = (_path_name(self._keys_path), _path_name(self._staged_path, "parquet"),
                                                 _path_name(self._batches_path))
        # The keys as a batch that staged nothing leaves them (empty), for a state whose keys are not made.
        self._no_keys = changes.select(*map(quoted, layout.keys), F.lit("").alias(_KEY_SEQUENCE),
                                       F.lit(False).alias(_DELETED)).limit(0)
        try:  # the log is made first: where it logs a batch applied, the target and the keys are made
            self.log = [_LogRow(*row) for row in self._read(self._batches_path).collect()]
        except AnalysisException:
            columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in _LOG_SCHEMA.fields)
            spark.sql(f"CREATE TABLE IF NOT EXISTS {self._batches} ({columns}) USING delta "
                      f"TBLPROPERTIES ('{APP_ID_PROPERTY}' = '{APP_ID_PREFIX}{uuid4()}')")
            self.log = []
        # Only a batch's MERGE writes keys, once the batch is logged staged: with no batch logged there
        # are none; after one, they are merged, not described (a MERGE into no file is only slower).
        self._may_hold_files[self.keys] = bool(self.log)
        # A batch applied that inserted rows left the target with files: merged, not described.
        if any(row.status == _APPLIED and row.inserted for row in self.log):
            self._may_hold_files.setdefault(self.target, True)
        self._check_kind(target)
        self._check_keys()

    def _create_target(self, changes: DataFrame) -> None:
        """The target named by a table name, with the table's columns (type 2: and the version
        columns), unless it exists. A target created here holds no file, which spares the batch
        asking Delta (a snapshot)."""
        table_columns = changes.select(*map(quoted, self.layout.columns)).limit(0)
        if self.scd_type == 2:
            table_columns = table_columns.select("*", *(F.lit(None).cast("string").alias(c) for c in (START_AT, END_AT)))
        try:
            table_columns.write.format("delta").saveAsTable(self.target)
        except AnalysisException as error:
            if error.getCondition() not in _EXISTS:
                raise
        else:
            self._may_hold_files[self.target] = False

    # -- the batch

    def finish_interrupted(self) -> None:
        """Finishes, from what was staged, the batches a run that died logged staged but not applied."""
        applied = {row.batch for row in self.log if row.status == _APPLIED}
        for row in sorted((row for row in self.log if row.status == _STAGED and row.batch not in applied),
                          key=lambda row: row.batch):
            self.finish(row)

    def stage(self, changes: DataFrame, batch: int, stream: tuple[str, int] | None,
              read_once: bool) -> tuple[_LogRow, bool]:
        """Replays the batch's fresh changes after the target's rows into ``staged``. Returns the
        log's entry and whether the batch writes anything (rows staged, or a table to make): then
        it is logged staged, for a run that dies to be finished by the next; else only its entry
        logged applied is written (a commit less for a batch with nothing new)."""
        layout = self.layout
        if not read_once:
            changes = self._checkpointed(changes)
        events = change_events(changes, layout)
        # The keys and the target hold every key ever applied; a batch needs the rows of its own keys.
        # A semi-join with the batch's distinct keys, which Spark broadcasts when they are small (the
        # batch is checkpointed, so its size is known), filters a table as it is scanned, where a join
        # with the events shuffled and sorted all its rows (README: Speed).
        batch_keys = events.select(*map(quoted, layout.keys)).distinct()
        # Only a batch's MERGE writes keys: before the first batch there is none to be stale against.
        fresh = events if not self.log else (
            events.join(self.read_keys().join(batch_keys, layout.keys, "left_semi"), layout.keys, "left")
            .where(f"{_KEY_SEQUENCE} IS NULL OR coalesce({SEQUENCE}, '') > {_KEY_SEQUENCE}")
            .drop(_KEY_SEQUENCE, _DELETED))
        baseline = self._baseline(fresh, events, batch_keys)
        with_baseline = fresh if baseline is None else fresh.unionByName(baseline)
        over = windows(layout)
        input_rows = f"count_if({RANK} = 1 AND NOT {DERIVED}) OVER ({over.every_event}) AS {_INPUT_ROWS}"
        if self.scd_type == 1:
            # A current-state target takes each key's last event only. Its changes applied are its
            # distinct changes (not the baseline, nor the DELETEs of moved rows' old keys); both
            # flags are over all the key's events, the frame the fold is computed over already.
            existed = f"min({RANK}) OVER ({over.every_event}) = 0"
            change = f"CASE WHEN {RANK} = 1 AND NOT {DERIVED} THEN named_struct('s', {SEQUENCE}, 'p', {OPERATION}) END"
            applied = f"size(collect_set({change}) OVER ({over.every_event}))"
            staged = replay_last(with_baseline, layout, f"{existed} AS {_EXISTED}", f"{applied} AS {_APPLIED_CHANGES}",
                                 input_rows)
        else:
            # Windows over the replay's own order (or its keys alone) reuse its sort.
            per_key = f"PARTITION BY {sql_names(layout.keys)}"
            staged = replay(with_baseline, layout, input_rows).selectExpr(
                "*", f"min({RANK}) OVER ({per_key}) = 0 AS {_EXISTED}",
                f"coalesce(lag({OPERATION}) OVER ({over.order}) != '{DELETE}', false) AS {_LIVE_BEFORE}",
                f"count_if({RANK} = 1 AND NOT {DERIVED}) OVER ({per_key}) AS {_APPLIED_CHANGES}")
        # Plain Parquet, not Delta: staged rows are read whole, and only until the next batch
        # overwrites them, so a Delta table's snapshot (a state reconstruction of about a second per
        # version) and statistics would only cost time. A run that dies while writing them has not
        # logged the batch staged, so the next run stages it again; once logged, nothing rewrites them
        # before the batch is logged applied.
        self._write_staged(staged.withColumnRenamed(SEQUENCE, START_AT))
        # Before the first batch every change is fresh, and staged: the staging pass counted the
        # input. After it the stale ones are dropped first, and the input (read once) is counted.
        *counts, rows_staged = self._counts(changes if self.log else None)
        entry = _LogRow(batch, _STAGED, *(stream or (None, None)), *counts)
        writes = rows_staged > 0 or bool(self._absent)
        if writes:
            self._log(entry)
        return entry, writes

    def _checkpointed(self, changes: DataFrame) -> DataFrame:
        """The changes, read once (into a local checkpoint) where the batch reads them more than
        once: the baseline's joins take the keys of the changes from further scans, and after a
        first batch the counts read them again. Two scans of a Kafka read each plan its offsets up
        to the latest: one may read a record the other does not. A partial-mask UPDATE whose key
        the baseline's scan missed would lose the columns its mask leaves out, and the counts
        would not be those of the rows applied. (A first batch into a target without files reads
        the changes once: no baseline, and the staging pass counts them.)"""
        return changes.localCheckpoint() if self.log or self._may_hold(self.target) else changes

    def _baseline(self, fresh: DataFrame, events: DataFrame, batch_keys: DataFrame) -> DataFrame | None:
        """The row the target holds for each key with fresh changes (type 2: its open version), as
        an event of ``RANK`` 0 that sets every column, in the types of the batch's ``events``, whose
        distinct keys are ``batch_keys``; None when the target holds no file (a first load then
        spares the join's second pass over the changes; Delta's metadata tells it without a Spark
        job)."""
        if not self._may_hold(self.target):
            return None
        layout = self.layout
        rows = self._read(self._target_path) if self._target_path else self.spark.read.table(self.target)
        sequence = "CAST(NULL AS STRING)"
        if self.scd_type == 2:
            rows, sequence = rows.where(f"{END_AT} IS NULL"), START_AT
        present = set(rows.columns)
        full = full_struct([quote(c) if c in present else "NULL" for c in layout.values])
        # The batch's keys first (broadcast), then those of its fresh changes: a key all of whose
        # changes are stale takes no baseline.
        return (rows.join(batch_keys, layout.keys, "left_semi")
                .join(fresh.select(*map(quoted, layout.keys)).distinct(), layout.keys, "left_semi")
                .selectExpr(*map(quote, layout.keys), f"{sequence} AS {SEQUENCE}", f"'{_BASELINE}' AS {OPERATION}",
                            f"0 AS {RANK}", f"false AS {DERIVED}",
                            f"CAST({full} AS {events.schema[FULL].dataType.simpleString()}) AS {FULL}",
                            f"NULL AS {PARTIAL}"))

    def _counts(self, changes: DataFrame | None) -> tuple[int, int, int, int, int]:
        """The batch's counts from ``staged`` and its input's rows (``changes``, or None: as the
        staging pass counted them), in one job; then the rows staged."""
        live = f"{OPERATION} != '{DELETE}'"
        last_delete = f"{LAST} AND NOT ({live})"
        if self.scd_type == 1:
            counted = (f"{LAST} AND {live} AND NOT {_EXISTED}", f"{LAST} AND {live} AND {_EXISTED}",
                       f"{last_delete} AND {_EXISTED}")
        else:
            counted = (f"{RANK} = 1 AND {live}", f"{RANK} = 0", f"{last_delete} AND {_LIVE_BEFORE}")
        staged = self._read_staged().selectExpr(*(f"count_if({c}) AS c{i}" for i, c in enumerate(counted)),
                                                f"sum(CASE WHEN {LAST} THEN {_APPLIED_CHANGES} END) AS c3",
                                                f"sum(CASE WHEN {LAST} THEN {_INPUT_ROWS} END) AS staged_input",
                                                "count(1) AS staged")
        row = (staged if changes is None else staged.crossJoin(changes.selectExpr("count(1) AS input"))).first()
        given = row.staged_input if changes is None else row.input
        return row.c0, row.c1, row.c2, (given or 0) - (row.c3 or 0), row.staged

    def finish(self, entry: _LogRow, merge: bool = True) -> None:
        """MERGE ``staged`` into the target and the keys, then log the batch applied. Without
        ``merge`` (nothing staged: every change was stale or a duplicate, as in a rerun over the
        same input, its tables made) only the log is written: two MERGEs of nothing would cost
        seconds of Delta's. A table not made yet is made by the batch's write, empty when it staged
        nothing."""
        if merge:
            self._merge_staged(entry.batch)
        self._log(entry._replace(status=_APPLIED))

    def _merge_staged(self, batch: int) -> None:
        """The staged rows into the target, then into the keys: a MERGE, or an INSERT into a table
        that holds no file (a first load), which has nothing to match and so takes every row the
        MERGE would insert, without its join and its pass to find the files it touches. Either is
        idempotent: after an INSERT the table has files, and merging the same rows again changes
        nothing."""
        self._add_new_columns()
        self._compacted()
        staged, layout = self.staged, self.layout
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in layout.keys)
        names = sql_names(layout.columns)
        values = ", ".join(f"s.{quote(c)}" for c in layout.columns)
        if self.scd_type == 1:
            source = f"(SELECT * FROM {staged} WHERE {LAST})"
            updates = ", ".join(f"{quote(c)} = s.{quote(c)}" for c in layout.values) or \
                ", ".join(f"{quote(k)} = s.{quote(k)}" for k in layout.keys)
            columns, rows = names, f"SELECT {names} FROM {source} WHERE {OPERATION} != '{DELETE}'"
            merge = (f"MERGE INTO {self.target} t USING {source} s ON {on} "
                     f"WHEN MATCHED AND s.{OPERATION} = '{DELETE}' THEN DELETE "
                     f"WHEN MATCHED THEN UPDATE SET {updates} "
                     f"WHEN NOT MATCHED AND s.{OPERATION} != '{DELETE}' THEN INSERT ({names}) VALUES ({values})")
        else:
            source = f"(SELECT * FROM {staged} WHERE {OPERATION} != '{DELETE}')"
            columns = f"{names}, {START_AT}, {END_AT}"
            rows = f"SELECT {columns} FROM {source}"
            merge = (f"MERGE INTO {self.target} t USING {source} s "
                     f"ON {on} AND t.{START_AT} <=> s.{START_AT} "
                     f"WHEN MATCHED THEN UPDATE SET {END_AT} = s.{END_AT} "
                     f"WHEN NOT MATCHED THEN INSERT ({names}, {START_AT}, {END_AT}) "
                     f"VALUES ({values}, s.{START_AT}, s.{END_AT})")
        self._write(self.target, self._target_path, columns, rows, merge, batch)
        key_names = sql_names(layout.keys)
        key_rows = (f"(SELECT {key_names}, coalesce({START_AT}, '') AS {_KEY_SEQUENCE}, "
                    f"{OPERATION} = '{DELETE}' AS {_DELETED} FROM {staged} WHERE {LAST})")
        self._write(self.keys, self._keys_path, f"{key_names}, {_KEY_SEQUENCE}, {_DELETED}",
                    f"SELECT * FROM {key_rows}",
                    f"MERGE INTO {self.keys} t USING {key_rows} s ON {on} "
                    f"WHEN MATCHED THEN UPDATE SET {_KEY_SEQUENCE} = s.{_KEY_SEQUENCE}, {_DELETED} = s.{_DELETED} "
                    f"WHEN NOT MATCHED THEN INSERT *", batch)

    def _write(self, table: str, path: str | None, columns: str, rows: str, merge: str, batch: int) -> None:
        """The batch's ``merge`` into ``table`` (at ``path``, for one that is not made yet), or its
        ``rows`` (a query of its ``columns``) appended when the table holds no file, or making it
        when it is not made; tagged with the batch: Delta skips the write, without a job, when the
        table holds it already (a run died after it, before the batch was logged applied)."""
        with self._tagged(batch):
            if table in self._absent:
                writer = self.spark.sql(rows).write.format("delta").mode("append")
                compacts = table == self.keys and AUTO_COMPACT[0] in self._log_properties
                (writer.option(*AUTO_COMPACT) if compacts else writer).save(path)
                self._absent.discard(table)
            elif self._may_hold(table):
                # Delta copies a MERGE's source first unless it reads Delta tables only, lest the source
                # change between its two passes; the staged files do not change while a batch is
                # applied, so the copy would only cost time (README: Speed).
                with session_setting(self.spark, MERGE_MATERIALIZE_SOURCE, "none"):
                    self._execute(merge)
            else:
                self._execute(f"INSERT INTO {table} ({columns}) {rows}")
        self._may_hold_files.pop(table, None)

    @contextmanager
    def _tagged(self, batch: int) -> Iterator[None]:
        """Runs the block's writes tagged with ``batch`` (Delta's idempotent writes)."""
        with session_setting(self.spark, TXN_APP_ID, self._app_id), \
                session_setting(self.spark, TXN_VERSION, str(batch)):
            yield

    @cached_property
    def _log_properties(self) -> dict[str, str]:
        """The log table's properties, which Delta reads without the snapshot of the table's files
        that DESCRIBE DETAIL costs (a second)."""
        return {row.key: row.value for row in self.spark.sql(f"SHOW TBLPROPERTIES {self._batches}").collect()}

    @cached_property
    def _app_id(self) -> str:
        """The application the batches' writes are tagged with: an id made with the log table, so
        that state made anew beside a target (its directory deleted) never meets the batch numbers
        of the state before it. A property of the log table; state made before the property has the
        log table's Delta id."""
        return self._log_properties.get(APP_ID_PROPERTY) or APP_ID_PREFIX + self._described(self._batches).id

    def _compacted(self) -> None:
        """Gives the log and the keys ``AUTO_COMPACT`` from the first batch that writes after a first
        one (state made before the property included); keys made later take it from the log."""
        if not self.log or AUTO_COMPACT[0] in self._log_properties:
            return
        for table in [self._batches] + ([] if self.keys in self._absent else [self.keys]):
            self.spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({_AUTO_COMPACT_SQL})")
        self._log_properties[AUTO_COMPACT[0]] = AUTO_COMPACT[1]

    def _execute(self, statement: str) -> None:
        self.spark.sql(statement).collect()

    def _add_new_columns(self) -> None:
        """Columns the source added since the target was created (a dropped one stays)."""
        present = self._columns_of(self.target)
        if present is None:  # (made by the batch's write, with the staged columns)
            return
        staged = self._read_staged()
        added = [f for f in staged.schema.fields if f.name in self.layout.columns and f.name not in present]
        if added:
            self.spark.sql(f"ALTER TABLE {self.target} ADD COLUMNS ("
                           + ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in added) + ")")

    # -- the tables

    def read_keys(self) -> DataFrame:
        return self._no_keys if self.keys in self._absent else self._read(self._keys_path)

    def _write_staged(self, rows: DataFrame) -> None:
        rows.write.mode("overwrite").option(*STAGED_WITHOUT_DICTIONARIES).parquet(self._staged_path)

    def _read_staged(self) -> DataFrame:
        return self.spark.read.parquet(self._staged_path)

    def _log(self, entry: _LogRow) -> None:
        # A statement, not createDataFrame, which on a classic session sends the row through
        # Python's serializer: a one-row append took 0.8 s that way, 0.44 s this way.
        values = ", ".join(map(_sql_value, entry))
        self.spark.sql(f"INSERT INTO {self._batches} SELECT {values}").collect()

    def _read(self, path: str) -> DataFrame:
        return self.spark.read.format("delta").load(path)

    def _columns_of(self, table: str) -> list[str] | None:
        """The table's columns; None when it is not made yet (then known as such)."""
        if table in self._absent:
            return None
        try:
            return self.spark.sql(f"SELECT * FROM {table} LIMIT 0").columns
        except AnalysisException as error:
            if error.getCondition() not in _ABSENT:
                raise
            self._absent.add(table)
            return None

    def _check_kind(self, target: str) -> None:
        columns = self._columns_of(self.target)
        if columns is None:
            return
        history = START_AT in columns
        if history != (self.scd_type == 2):
            raise ValueError(f"{target} is {'a history (SCD type 2)' if history else 'a current-state (SCD type 1)'} "
                             f"table: apply with scd_type={2 if history else 1}, or choose another target")

    def _check_keys(self) -> None:
        columns = self._columns_of(self.keys)
        known = [c for c in columns or () if c not in (_KEY_SEQUENCE, _DELETED)]
        if columns is not None and known != self.layout.keys:
            raise ValueError(f"{self.target} was applied with the keys {', '.join(known)}, not "
                             f"{', '.join(self.layout.keys)}: pass keys={known!r}, or choose another target")

    def _may_hold(self, table: str) -> bool:
        if table in self._absent:
            return False
        if table not in self._may_hold_files:
            self._described(table)
        return self._may_hold_files[table]

    def _described(self, table: str) -> Row:
        detail = self.spark.sql(f"DESCRIBE DETAIL {table}").first()
        self._may_hold_files[table] = detail.numFiles > 0
        return detail


def _sql_value(value: int | str | None) -> str:
    """``value`` as a SQL literal (not a named parameter: those are left unbound in an INSERT into a
    Delta table on Spark 4.1 and 4.2)."""
    if value is None:
        return "NULL"
    return str(value) if isinstance(value, int) else sql_string(value)


def _path_name(path: str, file_format: str = "delta") -> str:
    """The SQL name of the table of ``file_format`` files at ``path``."""
    return f"{file_format}.{quote(path)}"
