"""Landing paths that grow while a streaming query reads them, and the helpers that compare a
stream's sink with a batch read of the same landing (shared by the streaming and export tests)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame, SparkSession, functions as F

from spark_replicate.generate import AddColumn, AlterColumn, ColumnDef, DataMessage, DropColumn, LandingZone, TableDef


class Landing:
    """Landing paths that grow: files of a generated zone (``staged``) are landed as a sink lands
    them, each whole and once, metadata before the data that needs it."""

    def __init__(self, staged: LandingZone, root: Path):
        self.staged, self.root = staged, root
        self.schema_topic = root / staged.schema_topic.name
        self.landed: set[Path] = set()

    def land(self, files) -> None:
        for source in files:
            if source in self.landed:
                continue
            target = self.root / source.relative_to(self.staged.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            in_progress = target.parent / f"_{target.name}"  # skipped by the reader until renamed
            shutil.copyfile(source, in_progress)
            os.replace(in_progress, target)
            self.landed.add(source)

    def land_messages(self, messages: list[DataMessage]) -> None:
        """The data files of ``messages``, after the schema-topic files of their table versions
        (one file per message: the staged zones are landed with the ``message`` framing)."""
        self.land(self.metadata_of(messages) + [m.file for m in messages])

    def metadata_of(self, messages: list[DataMessage]) -> list[Path]:
        """The schema-topic files announcing the table versions of ``messages``."""
        versions = {(m.table, m.table_version) for m in messages}
        return [self.staged.schema_topic / f"part-00000-{i:010d}.msg"
                for i, entry in enumerate(self.staged.metadata) if (entry.table, entry.version) in versions]

    def land_all(self) -> None:
        self.land(sorted(self.staged.files, key=lambda p: (p.parent != self.staged.schema_topic, p)))


def checkpoint_batches(checkpoint: Path, log: str) -> set[int]:
    """The batches in a query checkpoint's ``offsets`` (planned) or ``commits`` log."""
    folder = checkpoint / log
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def kill_when(process: subprocess.Popen, ready: Callable[[], bool], log: Path, what: str) -> None:
    """SIGKILL to the process's group as soon as ``ready()`` holds, as a crash would strike it;
    fails if the process exits first or ``what`` has not happened within three minutes."""
    deadline = time.monotonic() + 180
    try:
        while not ready():
            assert process.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, f"{what} in time"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def reader(landing: Landing, **options) -> dict:
    """The options every query here uses, the landing's schema topic and each row's source;
    ``schemaTopic=None`` leaves the metadata to the data files."""
    given = {"schemaTopic": str(landing.schema_topic), "includeSource": "true", **options}
    return {name: value for name, value in given.items() if value is not None}


def stream(spark: SparkSession, landing: Landing, **options) -> DataFrame:
    return spark.readStream.format("replicate").options(**reader(landing, **options)).load(str(landing.root))


def batch(spark: SparkSession, landing: Landing, **options) -> DataFrame:
    return spark.read.format("replicate").options(**reader(landing, **options)).load(str(landing.root))


def as_json(df: DataFrame) -> DataFrame:
    """Each row as JSON of its columns in name order, nulls left out: the same text for a row
    whichever schema a run chose (a column a run did not have, or an int a later run widened)."""
    table = F.col("header__table_name") if "header__table_name" in df.columns else F.lit("")
    columns = [sorted_struct(df, name) if name == "header__before_image" else F.col(name) for name in sorted(df.columns)]
    return df.select(table.alias("table"), "header__operation", F.to_json(F.struct(*columns)).alias("row"))


def sorted_struct(df: DataFrame, name: str):
    """A struct column with its fields in name order (the flat layout's before-image), else as it is."""
    fields = getattr(df.schema[name].dataType, "names", None)
    if fields is None:
        return F.col(name)
    return F.when(F.col(name).isNotNull(), F.struct(*[F.col(name)[f].alias(f) for f in sorted(fields)])).alias(name)


def rows(df: DataFrame) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def evolving_table() -> TableDef:
    """INV.ITEMS: version 2 adds COLOR, version 3 drops WEIGHT, version 4 widens QTY to INT8."""
    C = ColumnDef
    return TableDef("INV", "ITEMS", "inventory", (
        C("ITEM_ID", "INT8", pk_position=1), C("SKU", "STRING", 20), C("QTY", "INT4"), C("WEIGHT", "REAL4"),
    ), changes=(AddColumn(C("COLOR", "WSTRING", 30)), DropColumn("WEIGHT"), AlterColumn(C("QTY", "INT8"))))
