"""Export every table of a landed Replicate topic as Parquet, one streaming query per table.

Layout of the output directory ``DIR``:

- ``DIR/<SCHEMA.TABLE>/``: the table's rows, a Parquet file sink (its ``_spark_metadata`` log
  lists the files of committed batches, which is what ``spark.read.parquet`` of the folder reads);
- ``DIR/_spark_replicate/checkpoints/<SCHEMA.TABLE>/``: that table's streaming checkpoint (the
  input files each batch took, and the batches committed).

Each table is a flat ``spark.readStream.format("replicate")`` query with that checkpoint, so a
rerun exports only the files landed since, once, and a run that died part-way is redone exactly
by the next (README "Streaming"). A table whose new version adds columns stops its query with
``REPLICATE_SCHEMA_CHANGED``; the query is started again from its checkpoint, with the columns.
Only the DataFrame API is used (streaming queries), no py4j.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from spark_replicate.session import MetadataSource, Paths, _is_kafka, _path_list, list_tables

STATE_DIR = "_spark_replicate"
SCHEMA_CHANGED = "REPLICATE_SCHEMA_CHANGED"


class ExportError(Exception):
    """The export cannot go on; the message says which table, why, and what to do."""


@dataclass
class TableResult:
    table: str
    files: int = 0
    rows: int = 0
    restarts: int = 0


class _TableExport:
    """One table's streaming query, started again from its checkpoint when its schema changed.
    Subclasses write somewhere else than Parquet files (``writer``) under the same layout."""

    action = "exporting"

    def __init__(self, spark: SparkSession, inputs: list[str], output: str, table: str, options: dict[str, str],
                 trigger: dict[str, object]):
        self.spark, self.inputs, self.table, self.options, self.trigger = spark, inputs, table, options, trigger
        self.path = f"{output}/{table}"
        self.checkpoint = f"{output}/{STATE_DIR}/checkpoints/{table}"
        self.result = TableResult(table)
        self.query: StreamingQuery | None = None
        self._counted = -1  # the last batch added to the result (batch ids go on across restarts)
        self._last_change = ""

    def start(self) -> None:
        reader = (self.spark.readStream.format("replicate").options(**self.options).option("table", self.table)
                  .option("layout", "flat"))
        if self.inputs:  # (none: Kafka topics, among the options)
            # `paths` as spark.read.load(list) sets it: a stream's load() takes one path only.
            reader = reader.option("paths", json.dumps(self.inputs))
        df = reader.load()
        self.query = (self.writer(df).option("checkpointLocation", self.checkpoint).trigger(**self.trigger)
                      .queryName(f"spark-replicate {self.action} {self.table}").start())

    def writer(self, df: DataFrame) -> DataStreamWriter:
        return df.writeStream.format("parquet").option("path", self.path)

    def stop(self) -> None:
        """Stops the query between batches: once the batch it runs, if any, is done."""
        while self.query is not None and self.query.isActive and self.query.status["isTriggerActive"]:
            time.sleep(0.2)
        if self.query is not None and self.query.isActive:
            self.query.stop()

    def batch_line(self, files: int, rows: int) -> str:
        return f"{self.table}: {rows} row(s) written from {files} new input file(s)"

    def count_progress(self) -> list[tuple[int, int]]:
        """(files, rows) of each batch finished since the last call, added to the result."""
        batches = []
        for report in self.query.recentProgress:
            files, rows = int(report["sources"][0].get("metrics", {}).get("filesRead", 0)), report["numInputRows"]
            if report["batchId"] > self._counted and (files or rows):
                self._counted = report["batchId"]
                self.result.files += files
                self.result.rows += rows
                batches.append((files, rows))
        return batches

    def restart_after(self, failure: Exception) -> None:
        """Starts the query again when ``failure`` is a schema change; any other failure ends the export."""
        message = _replicate_message(failure)
        if SCHEMA_CHANGED not in message:
            raise ExportError(f"{self.table}: {message}") from failure
        if message == self._last_change:  # the restart did not pick the columns up: it would loop
            raise ExportError(f"{self.table}: {message}") from failure
        self._last_change = message
        self.result.restarts += 1
        self.start()


def _replicate_message(failure: Exception) -> str:
    """The connector's own error line out of a streaming failure's text (which holds a stack trace)."""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    return next((line for line in lines if "[REPLICATE_" in line), lines[0] if lines else repr(failure))


def export(spark: SparkSession, input_paths: Paths, output: str, schema_topic: Paths | None = None,
           mode: str | None = None, continuous: bool = False, interval_seconds: float = 60,
           log: Callable[[str], None] = print, progress: Callable[[str], None] = lambda line: None,
           should_stop: Callable[[], bool] = lambda: False) -> list[TableResult]:
    """Exports the input files no earlier run exported, every table (see the module's doc).

    Without ``continuous`` each table's query runs with ``Trigger.AvailableNow`` (the files landed
    when it starts) and stops; with it, every table's query keeps running with a processing-time
    trigger of ``interval_seconds``, and tables whose metadata lands later get their own (looked
    for as often), until ``should_stop()`` is true or the process is interrupted. ``log`` receives
    the result lines, ``progress`` a line per step and per batch written.
    """
    return stream_tables(spark, input_paths, output, _TableExport, schema_topic, {} if mode is None else {"mode": mode},
                         continuous, interval_seconds, log, progress, should_stop)


def stream_tables(spark: SparkSession, input_paths: Paths, output: str, table_type: Callable[..., _TableExport],
                  schema_topic: Paths | None, reading: dict[str, str], continuous: bool, interval_seconds: float,
                  log: Callable[[str], None], progress: Callable[[str], None],
                  should_stop: Callable[[], bool]) -> list[TableResult]:
    """:func:`export` with each table's query made by ``table_type`` and read with the ``reading`` options."""
    output = output.rstrip("/")
    options = reading if schema_topic is None else {**reading, "schemaTopic": ",".join(_path_list(schema_topic))}
    inputs = [] if input_paths is None else _path_list(input_paths)  # (none: Kafka topics, among the options)
    metadata = MetadataSource.of(inputs, schema_topic, reading)
    if _is_kafka(reading) and not any(name.lower() == "startingoffsets" for name in options):
        # A Kafka stream starts at the latest offsets by default, past every change already published.
        options = {**options, "startingOffsets": "earliest"}
    exports: dict[str, _TableExport] = {}

    def new_tables() -> list[_TableExport]:
        tables = [t for t in list_tables(spark, metadata.source, **metadata.listing) if t not in exports]
        trigger = {"processingTime": f"{interval_seconds} seconds"} if continuous else {"availableNow": True}
        for table in tables:
            exports[table] = table_type(spark, inputs, output, table, options, trigger)
        return [exports[t] for t in tables]

    progress(f"listing the tables of {metadata.where}")
    if not new_tables():
        raise ExportError(f"no metadata (MD) message was found in {metadata.where}; pass --schema-topic "
                          "with the topic that holds Replicate's metadata messages")
    try:
        _supervise(exports, new_tables if continuous else None, interval_seconds, progress, should_stop)
    finally:
        for table in exports.values():
            table.stop()
    results = [exports[name].result for name in sorted(exports)]
    _log_results(results, inputs, log)
    return results


def _supervise(exports: dict[str, _TableExport], new_tables: Callable[[], list[_TableExport]] | None,
               interval_seconds: float, progress: Callable[[str], None], should_stop: Callable[[], bool]) -> None:
    """Runs every table's query at once, restarting those whose schema changed, until all have
    stopped (``Trigger.AvailableNow``), or with ``new_tables`` (continuous) until ``should_stop()``,
    starting the queries of the tables it finds every ``interval_seconds``."""
    for number, table in enumerate(exports.values(), 1):
        progress(f"{table.action} {table.table} ({number} of {len(exports)})")
        table.start()
    listed = time.monotonic()
    try:
        while not should_stop():
            for table in exports.values():
                active = table.query.isActive  # before its progress is counted: a stopped query's is all there
                for files, rows in table.count_progress():
                    progress(table.batch_line(files, rows))
                if not active:
                    failure = table.query.exception()
                    if failure is not None:
                        table.restart_after(failure)
                    elif new_tables is not None:
                        raise ExportError(f"{table.table}: its query stopped; run the command again")
            if new_tables is None and not any(t.query.isActive for t in exports.values()):
                return
            if new_tables is not None and time.monotonic() - listed >= interval_seconds:
                listed = time.monotonic()
                for table in new_tables():
                    progress(f"new table {table.table}: {table.action} it")
                    table.start()
            time.sleep(min(0.5, interval_seconds))
    except KeyboardInterrupt:
        progress("interrupted: stopping every table's query (what they committed stays exported)")


def _log_results(results: list[TableResult], inputs: list[str], log: Callable[[str], None]) -> None:
    if not any(r.files for r in results):
        log(f"no new input files in {', '.join(inputs)}: nothing written")
        return
    for r in results:
        restarted = f" (restarted {r.restarts} time(s) for new columns)" if r.restarts else ""
        log(f"{r.table}: {r.rows} row(s) written from {r.files} new input file(s){restarted}")
