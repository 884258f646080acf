"""Export every table of a landed Replicate topic as Parquet, appending only new input on reruns.

Layout of the output directory ``DIR``:

- ``DIR/<SCHEMA.TABLE>/export_batch=<n>/``: the rows of batch ``n`` of that table (Parquet);
- ``DIR/_spark_replicate/batch-<n>.json``: batch ``n``'s exact input files (path, length,
  modification time), written before any of its data;
- ``DIR/_spark_replicate/batch-<n>.done.json``: written once every table of batch ``n`` is.

A run first writes again every batch that has no done marker (an interrupted run), with exactly
its recorded files; each batch overwrites only its own ``export_batch=<n>`` directories, so an
interrupted batch leaves no duplicates. Then the input files that no batch holds make a new
batch. The manifest and the listing go through Hadoop's FileSystem (local and remote paths
alike), and input files are listed as the connector lists them.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Callable

from pyspark.sql import SparkSession

from spark_replicate.session import Paths, _path_list, last_read_metrics, read, read_tables

MANIFEST_DIR = "_spark_replicate"
BATCH_COLUMN = "export_batch"
_BATCH_FILE = re.compile(r"^batch-(\d+)(\.done)?\.json$")


class ExportError(Exception):
    """The export cannot go on safely; the message says which file and what to do."""


@dataclass(frozen=True)
class InputFile:
    path: str
    length: int
    modification_time: int


@dataclass
class BatchResult:
    batch: int
    files: int
    rows: dict[str, int]
    redone: bool


class _Manifest:
    """``DIR/_spark_replicate`` through the JVM's Hadoop FileSystem. Every file is written under a
    hidden temporary name and renamed into place, so a crash never leaves a half-written entry."""

    def __init__(self, spark: SparkSession, output: str):
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self.output = self._jvm.org.apache.hadoop.fs.Path(output)
        self._dir = self._jvm.org.apache.hadoop.fs.Path(self.output, MANIFEST_DIR)
        self._fs = self._dir.getFileSystem(self._conf)

    def batches(self) -> tuple[dict[int, list[InputFile]], set[int]]:
        """(batch id -> its input files, ids of the batches marked done)."""
        files, done = {}, set()
        if not self._fs.exists(self._dir):
            return files, done
        for status in self._fs.listStatus(self._dir):
            match = _BATCH_FILE.match(status.getPath().getName())
            if match and match.group(2):
                done.add(int(match.group(1)))
            elif match:
                entry = json.loads(self._read(status.getPath()))
                files[int(match.group(1))] = [InputFile(**f) for f in entry["files"]]
        return files, done

    def begin(self, batch: int, files: list[InputFile]) -> None:
        self._write(f"batch-{batch:06d}.json", {"batch": batch, "files": [asdict(f) for f in files]})

    def finish(self, batch: int, rows: dict[str, int]) -> None:
        self._write(f"batch-{batch:06d}.done.json", {"batch": batch, "rows": rows})

    def table_dir(self, table: str, batch: int) -> str:
        return self._jvm.org.apache.hadoop.fs.Path(self.output, f"{table}/{BATCH_COLUMN}={batch}").toString()

    def list_input(self, paths: list[str]) -> list[InputFile]:
        listed = self._jvm.io.sparkreplicate.files.LandingFiles.listJava(paths, self._conf)
        return [InputFile(s.getPath().toString(), s.getLen(), s.getModificationTime()) for s in listed]

    def _read(self, path) -> str:
        stream = self._fs.open(path)
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)).decode("utf-8")
        finally:
            stream.close()

    def _write(self, name: str, value: dict) -> None:
        Path = self._jvm.org.apache.hadoop.fs.Path
        target, temporary = Path(self._dir, name), Path(self._dir, f".{name}.tmp")
        stream = self._fs.create(temporary, True)
        try:
            stream.write(bytearray(json.dumps(value, indent=1).encode("utf-8")))
        finally:
            stream.close()
        if not self._fs.rename(temporary, target):
            raise ExportError(f"could not rename {temporary} to {target}: does it exist already? "
                              "Two exports into one output directory at the same time are not supported")


def export(spark: SparkSession, input_paths: Paths, output: str, schema_topic: Paths | None = None,
           mode: str | None = None, log: Callable[[str], None] = print,
           progress: Callable[[str], None] = lambda line: None) -> list[BatchResult]:
    """Writes the tables of the input files no earlier run exported (see the module's doc).

    Without ``schema_topic`` the metadata comes from the metadata messages of all the input files,
    exported or not, since a table's metadata is usually announced once, long before later data.
    ``log`` receives the result lines; ``progress`` a line as each step starts.
    """
    manifest = _Manifest(spark, output)
    inputs = _path_list(input_paths)
    progress(f"listing {', '.join(inputs)}")
    listed = {f.path: f for f in manifest.list_input(inputs)}
    recorded, done = manifest.batches()
    for batch in sorted(recorded):
        _check_unchanged(recorded[batch], listed, interrupted=batch not in done)
    interrupted = sorted(set(recorded) - done)
    exported = {f.path for files in recorded.values() for f in files}
    new = [f for path, f in sorted(listed.items()) if path not in exported]
    if not interrupted and not new:
        log(f"no new input files in {', '.join(inputs)}: nothing written")
        return []
    options = {} if mode is None else {"mode": mode}
    progress(f"metadata of {', '.join(_path_list(schema_topic if schema_topic is not None else inputs))}")
    metadata = schema_topic if schema_topic is not None else _metadata_files(spark, inputs, options)
    results = [_write_batch(spark, manifest, batch, recorded[batch], metadata, options, progress, redone=True)
               for batch in interrupted]
    if new:
        batch = max(recorded, default=0) + 1
        manifest.begin(batch, new)
        results.append(_write_batch(spark, manifest, batch, new, metadata, options, progress, redone=False))
    for result in results:
        log(f"batch {result.batch}: {result.files} input file(s)"
            f"{' (written again: the run that began it was interrupted)' if result.redone else ''}")
        for table, rows in sorted(result.rows.items()):
            log(f"  {table}: {rows} row(s) written")
    return results


def _check_unchanged(files: list[InputFile], listed: dict[str, InputFile], interrupted: bool) -> None:
    """An exported file must not have changed; a file of an interrupted batch must still be there.
    (A fully exported file that is gone is fine: landing zones expire old files.)"""
    for f in files:
        now = listed.get(f.path)
        if now is None and interrupted:
            raise ExportError(f"{f.path} belongs to an interrupted export batch but is no longer listed; "
                              "restore it, or remove that batch's entry from the manifest and its directories")
        if now is not None and now.length != f.length:
            raise ExportError(f"{f.path} was exported with {f.length} bytes but now has {now.length}: landed "
                              "files must not change once written. Re-export into a new output directory")


def _metadata_files(spark: SparkSession, inputs: list[str], options: dict) -> list[str]:
    """The input files holding metadata messages, found through the metadata view."""
    view = read(spark, inputs, messages="metadata", include_source=True, **options)
    rows = view.where("schema_id IS NOT NULL").select("header__source.file").distinct().collect()
    if not rows:
        raise ExportError(f"no metadata (MD) message was found in {', '.join(inputs)}; pass --schema-topic "
                          "with the landed topic that holds Replicate's metadata messages")
    return sorted(row.file for row in rows)


def _write_batch(spark: SparkSession, manifest: _Manifest, batch: int, files: list[InputFile],
                 metadata: Paths, options: dict, progress: Callable[[str], None], redone: bool) -> BatchResult:
    tables = read_tables(spark, [f.path for f in files], schema_topic=metadata, **options)
    rows = {}
    for number, (table, df) in enumerate(tables.items(), 1):
        progress(f"batch {batch} ({len(files)} input file(s)): writing {table} ({number} of {len(tables)})")
        df.write.mode("overwrite").parquet(manifest.table_dir(table, batch))
        # Every row the read returned was written: its metrics count them without reading the Parquet back.
        rows[table] = last_read_metrics(spark)["rowsReturned"]
    manifest.finish(batch, rows)
    return BatchResult(batch, len(files), rows, redone)
