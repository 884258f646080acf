"""The streaming step of `make bench`: `Trigger.AvailableNow` over a profile's files against the
batch read of the same files, and the end-to-end latency of a stream with a processing-time trigger
(a file landed -> its rows committed in a Parquet sink)."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

LATENCY_TRIGGER = "1 second"
# How often the sink's commit log is looked at while a landing waits: well below the trigger.
POLL_SECONDS = 0.01


def stream(spark, ds, path: Path):
    """The connector's batch read of the profile (contenders.connector) as a stream over `path`."""
    return (spark.readStream.format("replicate")
            .option("schemaTopic", str(ds.schema_dir))
            .option("table", ds.profile.table_name)
            .option("expandMasks", "true")
            .option("sourceTypes", "false")
            .load(str(path)))


def bench_streaming(spark, ds, runs: int, landings: int, page_in: Callable[[list[Path]], None],
                    log: Callable[..., None]) -> dict:
    import contenders as C

    work = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    try:
        inputs = sorted(p for folder in ds.inputs for p in folder.rglob("*") if p.is_file())

        def batch() -> float:
            page_in(inputs)
            started = time.perf_counter()
            C.connector(spark, ds).write.format("noop").mode("overwrite").save()
            return time.perf_counter() - started

        def available_now(n: int) -> float:
            page_in(inputs)
            started = time.perf_counter()
            query = (stream(spark, ds, ds.data_dir).writeStream.format("noop").trigger(availableNow=True)
                     .option("checkpointLocation", str(work / f"checkpoint-{n}")).start())
            query.awaitTermination()
            took = time.perf_counter() - started
            rows = sum(p["numInputRows"] for p in query.recentProgress)
            if rows != sum(ds.counts.values()):
                raise SystemExit(f"the AvailableNow stream read {rows} rows, expected {sum(ds.counts.values())}")
            return took

        log(f"  AvailableNow against the batch read ({runs} rounds after a warm-up, taking turns) ...")
        times = {"batch": [], "available_now": []}
        for r in range(runs + 1):
            took = {"batch": batch(), "available_now": available_now(r)}
            if r:
                for key, seconds in took.items():
                    times[key].append(round(seconds, 4))
            log(f"    {'warm-up' if not r else f'round {r}/{runs}'}: batch {took['batch']:.2f}, "
                f"AvailableNow {took['available_now']:.2f}")
        median = {k: statistics.median(v) for k, v in times.items()}
        log(f"  latency: {landings} landings under a {LATENCY_TRIGGER} processing-time trigger ...")
        latency = landing_latency(spark, ds, work, landings)
        log(f"    median {latency['median_s']} s, p95 {latency['p95_s']} s")
        return {
            "profile": ds.profile.name,
            "messages": sum(ds.counts.values()),
            "data_files": len(ds.data_files),
            "times_s": times,
            "median_s": {k: round(v, 4) for k, v in median.items()},
            "available_now_vs_batch": round(median["available_now"] / median["batch"], 3),
            "latency": latency,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def landing_latency(spark, ds, work: Path, landings: int) -> dict:
    """Lands the profile's data files one at a time (copies under new names, written under a
    `_`-name and renamed, as a sink lands them) into a folder a stream reads with a processing-time
    trigger into a Parquet sink; each latency is from the rename to the sink's commit of its batch
    (a new entry in the sink's `_spark_metadata` log), the next file landing after that commit."""
    landing, sink = work / "landing", work / "sink"
    landing.mkdir()
    query = (stream(spark, ds, landing).writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(work / "checkpoint-latency"))
             .trigger(processingTime=LATENCY_TRIGGER).start())
    log_dir = sink / "_spark_metadata"

    def committed() -> int:
        return sum(1 for p in log_dir.iterdir() if p.name.split(".")[0].isdigit()) if log_dir.exists() else 0

    files = ds.data_files
    latencies = []
    try:
        for n in range(landings):
            before = committed()
            source = files[n % len(files)]
            staged = landing / f"_part-{n:05d}.avro"
            shutil.copyfile(source, staged)
            landed = time.perf_counter()
            staged.rename(landing / f"part-{n:05d}.avro")
            while committed() == before:
                if query.exception() is not None:
                    raise SystemExit(f"the latency stream failed: {query.exception()}")
                time.sleep(POLL_SECONDS)
            latencies.append(round(time.perf_counter() - landed, 4))
    finally:
        query.stop()
    rows = spark.read.parquet(str(sink)).count()
    expected = sum(ds.counts.values()) * (landings // len(files)) + _messages_in(spark, ds, files[:landings % len(files)])
    if rows != expected:
        raise SystemExit(f"the latency stream's sink holds {rows} rows, expected {expected}")
    ordered = sorted(latencies)
    return {
        "trigger": LATENCY_TRIGGER, "landings": landings, "sink": "parquet",
        "file_messages": round(sum(ds.counts.values()) / len(files)),
        "file_bytes": round(ds.data_bytes / len(files)),
        "latencies_s": latencies,
        "median_s": round(statistics.median(latencies), 3),
        "p95_s": round(ordered[max(0, -(-95 * len(ordered) // 100) - 1)], 3),
    }


def _messages_in(spark, ds, files: list[Path]) -> int:
    if not files:
        return 0
    return (spark.read.format("replicate").option("schemaTopic", str(ds.schema_dir))
            .option("table", ds.profile.table_name).load([str(f) for f in files]).count())
