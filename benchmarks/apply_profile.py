"""The apply step of `make bench`: `apply_changes` and `latest_state` against the hand-written way,
in the same session, where each way's time goes, and where each way's table differs from the truth.

The changes are profile M's table (30 columns, its mix of operations, no full load) with UPDATEs
whose column mask leaves unchanged columns out (``PARTIAL_MASKS``, as Oracle without full
supplemental logging sends them) and UPDATEs that move a row to a new key (``KEY_CHANGES``). The
hand-written way is what users write: the last change of each key by ``row_number`` over the change
sequence, then one ``MERGE`` with a delete clause. The truth is the table the generator's simulated
source database holds at the end (``LandingZone.final_state``), never the reader's.
"""

from __future__ import annotations

import functools
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

PARTIAL_MASKS = 0.2
KEY_CHANGES = 0.02
# The later batch: the last changes by change sequence, applied into a target the others made.
LATER_BATCH = 20_000

# Where each way's time goes: its Spark jobs, by the step that ran them, and the rest (planning,
# Delta's commits and the driver's other work between jobs). Delta describes its MERGE's jobs
# itself; the steps of `apply_changes` are described by hooks this benchmark puts on the Python
# implementation's steps (as the crash tests hook them).
OUR_STEPS = {"_write_staged": "stage: the replay into the staged Parquet", "_counts": "count the batch",
             "_log": "log the batch"}
TARGET_WRITE, KEYS_WRITE = "write the target", "write the keys"
DELTA_STEPS = {"materialize source": "the last change per key (MERGE materializes its source)",
               "scanning files for matches": "MERGE: find the files it touches",
               "writing new files": TARGET_WRITE}
OTHER_JOBS, DRIVER = "other jobs", "driver: planning, commits, between jobs"


def handwritten_latest(changes, keys: list[str], columns: list[str]):
    """The last change of each key, by change sequence: what a hand-written MERGE takes."""
    from pyspark.sql import Window, functions as F

    last = Window.partitionBy(*keys).orderBy(F.col("header__change_seq").desc_nulls_last())
    return (changes.withColumn("__n", F.row_number().over(last)).where("__n = 1")
            .select(*columns, "header__operation"))


def handwritten_merge(spark, changes, target: str, keys: list[str], columns: list[str], create: bool = True) -> None:
    """MERGEs the last change of each key into the Delta table ``target``, deletes included, having
    created it (``create``)."""
    if create:
        handwritten_latest(changes, keys, columns).limit(0).drop("header__operation").write.format("delta").save(target)
    handwritten_latest(changes, keys, columns).createOrReplaceTempView("bench_latest")
    quote = lambda name: f"`{name}`"  # noqa: E731
    on = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in keys)
    spark.sql(f"MERGE INTO delta.`{target}` t USING bench_latest s ON {on} "
              "WHEN MATCHED AND s.header__operation = 'DELETE' THEN DELETE "
              f"WHEN MATCHED THEN UPDATE SET {', '.join(f'{quote(c)} = s.{quote(c)}' for c in columns)} "
              f"WHEN NOT MATCHED AND s.header__operation != 'DELETE' THEN INSERT ({', '.join(map(quote, columns))}) "
              f"VALUES ({', '.join(f's.{quote(c)}' for c in columns)})").collect()


def bench_later_batch(spark, changes, keys: list[str], columns: list[str], runs: int, work: Path,
                      log: Callable[..., None]) -> dict:
    """A later batch into a large target, the steady state of a stream applied: the last
    ``LATER_BATCH`` changes by `apply_changes` and by the hand-written MERGE, each round into a
    copy of the target `apply_changes` made of the other changes (its state beside it; the
    hand-written way's copy without), taking turns after a warm-up. Outside the targets."""
    import spark_replicate
    from pyspark.sql import functions as F

    sequence = F.col("header__change_seq")
    cut = changes.select(sequence).orderBy(sequence.desc()).limit(LATER_BATCH).agg(F.min(sequence)).first()[0]
    base = str(work / "later-base")
    log(f"  a later batch: the changes from {cut} on into a target of the others ...")
    first = spark_replicate.apply_changes(changes.where(sequence < cut), base)
    batch = changes.where(sequence >= cut).persist()
    batch_rows = batch.count()
    ways = {"apply_changes": lambda target: spark_replicate.apply_changes(batch, target),
            "handwritten_merge": lambda target: handwritten_merge(spark, batch, target, keys, columns, create=False)}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for round_number in range(runs + 1):  # the first round warms up
        for name, apply in (ways.items() if round_number % 2 == 0 else reversed(ways.items())):
            target = str(work / f"later-{name}")
            ignored = None if name == "apply_changes" else shutil.ignore_patterns("_spark_replicate")
            shutil.copytree(base, target, ignore=ignored)
            started = time.perf_counter()
            apply(target)
            elapsed = time.perf_counter() - started
            shutil.rmtree(target)
            if round_number:
                times[name].append(round(elapsed, 3))
    batch.unpersist()
    shutil.rmtree(base)
    medians = {name: statistics.median(t) for name, t in times.items()}
    return {"target_rows": first.inserted, "change_rows": batch_rows, "times_s": times,
            "median_s": {name: round(m, 3) for name, m in medians.items()},
            "later_batch_vs_handwritten": round(medians["handwritten_merge"] / medians["apply_changes"], 2)}


@contextmanager
def described_steps(spark) -> Iterator[None]:
    """Each job `apply_changes` runs described by its step, while the block runs."""
    from spark_replicate import apply

    originals = {name: getattr(apply._State, name) for name in (*OUR_STEPS, "_write")}

    def described(name: str, method):
        def run(self, *args, **kwargs):
            step = OUR_STEPS.get(name) or (TARGET_WRITE if args[0] == self.target else KEYS_WRITE)
            spark.sparkContext.setJobDescription(step)
            try:
                return method(self, *args, **kwargs)
            finally:
                spark.sparkContext.setJobDescription(None)
        return run

    for name, method in originals.items():
        setattr(apply._State, name, described(name, method))
    try:
        yield
    finally:
        for name, method in originals.items():
            setattr(apply._State, name, method)


def finished_jobs(spark) -> list:
    """Spark's jobs as its status store holds them once it has heard of every job's end, by id."""
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty(10_000)  # (the store learns of a job's end from its events)
    listed = sc.statusStore().jobsList(None).iterator()
    jobs = []
    while listed.hasNext():
        jobs.append(listed.next())
    return sorted(jobs, key=lambda job: job.jobId())


def last_job(spark) -> int:
    """The id of the newest job Spark has run, -1 before any."""
    return max((job.jobId() for job in finished_jobs(spark)), default=-1)


def seconds_by_step(spark, after: int, elapsed: float) -> dict[str, float]:
    """The seconds of the jobs after job ``after`` by step, in the order they ran, and the rest of
    ``elapsed``: the driver's."""
    steps: dict[str, float] = {}
    for job in finished_jobs(spark):
        if job.jobId() <= after or not job.completionTime().isDefined():
            continue
        step = step_of(job.description().get() if job.description().isDefined() else "")
        seconds = (job.completionTime().get().getTime() - job.submissionTime().get().getTime()) / 1000
        steps[step] = steps.get(step, 0.0) + seconds
    steps[DRIVER] = elapsed - sum(steps.values())
    return {step: round(seconds, 3) for step, seconds in steps.items()}


def step_of(description: str) -> str:
    """The step a job of this description ran for: Delta's MERGE steps by what Delta says they do,
    the hooked steps of `apply_changes` by their name, any other job as one."""
    delta = next((step for key, step in DELTA_STEPS.items() if key in description), None)
    ours = description if description in (*OUR_STEPS.values(), TARGET_WRITE, KEYS_WRITE) else None
    return delta or ours or OTHER_JOBS


def median_steps(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each step's median over the rounds (0 in a round it did not run in)."""
    names = dict.fromkeys(step for r in rounds for step in r)
    return {step: round(statistics.median(r.get(step, 0.0) for r in rounds), 3) for step in names}


def differences(table, truth, keys: list[str], columns: list[str]) -> dict:
    """Keys the table lacks, keys it has that the source does not, and rows with another value."""
    from pyspark.sql import functions as F

    value_columns = [c for c in columns if c not in keys]
    joined = truth.alias("truth").join(table.alias("table"), keys, "full_outer").select(
        F.col("truth.__present").alias("in_truth"), F.col("table.__present").alias("in_table"),
        *((~F.col(f"truth.`{c}`").eqNullSafe(F.col(f"table.`{c}`"))).alias(f"differs_{i}")
          for i, c in enumerate(value_columns)))
    differs = functools.reduce(lambda a, b: a | b, (F.col(f"differs_{i}") for i in range(len(value_columns))))
    both = F.col("in_truth").isNotNull() & F.col("in_table").isNotNull()
    row = joined.agg(F.count_if(F.col("in_table").isNull()), F.count_if(F.col("in_truth").isNull()),
                     F.count_if(both & differs)).first()
    return {"keys_missing": row[0], "keys_extra": row[1], "rows_with_other_values": row[2]}


def bench_apply(spark, table_def, messages: int, seed: int, runs: int, files: int,
                operation_mix: tuple[float, float, float], log: Callable[..., None]) -> dict:
    import spark_replicate
    from spark_replicate import generate as gen

    work = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    try:
        log(f"  generating {messages:,} changes of {table_def.name} with partial masks and key changes ...")
        zone = gen.generate_landing_zone(work / "landing", tables=[table_def], messages=messages, seed=seed,
                                         files_per_topic=files, operation_mix=operation_mix, full_load=False,
                                         keep_messages=False, partial_masks=PARTIAL_MASKS, key_changes=KEY_CHANGES)
        changes = spark_replicate.read(spark, str(zone.topics[table_def.topic]), schema_topic=str(zone.schema_topic),
                                       table=table_def.name)
        changes = changes.persist()
        rows = changes.count()
        columns = [c.name for c in table_def.columns]
        keys = [c.name for c in table_def.key_columns]
        targets = iter(range(10 ** 6))

        def ours() -> str:
            target = str(work / f"ours-{next(targets)}")
            spark_replicate.apply_changes(changes, target)
            return target

        def handwritten() -> str:
            target = str(work / f"handwritten-{next(targets)}")
            handwritten_merge(spark, changes, target, keys, columns)
            return target

        def latest_ours() -> None:
            spark_replicate.latest_state(changes).write.format("noop").mode("overwrite").save()

        def latest_handwritten() -> None:
            handwritten_latest(changes, keys, columns).write.format("noop").mode("overwrite").save()

        contenders = {"apply_changes": ours, "handwritten_merge": handwritten,
                      "latest_state": latest_ours, "handwritten_latest": latest_handwritten}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        split = ("apply_changes", "handwritten_merge")
        steps: dict[str, list[dict[str, float]]] = {name: [] for name in split}
        made: dict[str, str] = {}
        for round_number in range(runs + 1):  # the first round warms up
            for name, action in contenders.items():
                before = last_job(spark)
                started = time.perf_counter()
                with described_steps(spark):
                    result = action()
                elapsed = time.perf_counter() - started
                if round_number:
                    times[name].append(round(elapsed, 3))
                    if name in split:
                        steps[name].append(seconds_by_step(spark, before, elapsed))
                if result is not None:
                    made[name] = result
        later = bench_later_batch(spark, changes, keys, columns, runs, work, log)
        # The cached changes are not read again: their memory goes to the truth's rows, which
        # createDataFrame keeps in the driver (a 4 GB driver ran out of heap with both).
        changes.unpersist()
        truth_rows = [tuple(gen.expected_value(c, row.get(c.name)) for c in table_def.columns) + (True,)
                      for row in zone.final_state(table_def.name).values()]
        schema = spark.read.format("delta").load(made["apply_changes"]).schema.add("__present", "boolean")
        truth = spark.createDataFrame(truth_rows, schema)
        marked = {name: spark.read.format("delta").load(path).selectExpr("*", "true AS __present")
                  for name, path in made.items()}
        medians = {name: statistics.median(t) for name, t in times.items()}
        result = {
            "profile": "M", "table": table_def.name, "messages": messages, "change_rows": rows,
            "keys": len(truth_rows), "partial_masks": PARTIAL_MASKS, "key_changes": KEY_CHANGES, "runs": runs,
            "times_s": times, "median_s": {name: round(m, 3) for name, m in medians.items()},
            "apply_vs_handwritten": round(medians["handwritten_merge"] / medians["apply_changes"], 2),
            "latest_state_vs_handwritten": round(medians["handwritten_latest"] / medians["latest_state"], 2),
            "steps_median_s": {name: median_steps(rounds) for name, rounds in steps.items()},
            "differences_from_truth": {name: differences(table, truth, keys, columns)
                                       for name, table in marked.items()},
            "later_batch": later,
        }
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
