"""`make bench`: the connector against spark-avro, fastavro in mapInArrow, a Python Data Source and
the floor, on the same generated files in the same SparkSession; then scaling, memory and the JVM
decoder micro-benchmark. Writes benchmarks/results.json and benchmarks/RESULTS.md.

    python benchmarks/run.py                  # profile M at 2,000,000 messages, S and W too
    python benchmarks/run.py --quick          # a smoke run on small datasets
    python benchmarks/run.py --messages 500000 --profiles M
    python benchmarks/run.py --only streaming --quick    # steps alone, merged into results.json
    python benchmarks/run.py --only kafka,streaming --messages 20000

Every contender's row count and checksum are compared with the connector's before anything is
timed; a mismatch stops the run. Timings: one warm-up round (in the fresh JVMs that measure
scaling and take the CPU profile, `--fresh-warmups` rounds), then `--runs` rounds in which the
contenders take turns (so that machine noise hits them alike); the median is reported.
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR)]

DEFAULT_MESSAGES = 2_000_000
QUICK_MESSAGES = 50_000
# Peak live heap (after GC) at the largest input over the smallest: "flat" below this, allowing
# for a few MB of JVM noise.
MEMORY_FLAT_RATIO = 1.25
MEMORY_NOISE_MB = 32
MEMORY_REPEATS = 3  # fresh JVMs per input size


def log(*args) -> None:
    print(*args, flush=True)


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------


def fetched_jar(given: str | None, data_dir: str, pattern: str, option: str) -> str:
    """A jar `make bench` fetched with Maven into <data-dir>/jars, unless one is given."""
    if given:
        return given
    jars = sorted(glob.glob(str(Path(data_dir) / "jars" / pattern)))
    if not jars:
        sys.exit(f"no {pattern} in {data_dir}/jars: run `make bench`, which fetches it with Maven, "
                 f"or pass {option}")
    return jars[-1]


def make_session(master: str, avro_jar: str, java_options: str = "", driver_memory: str = "4g",
                 extra_jars: list[str] = (), kafka: bool = False, delta: bool = False):
    """One SparkSession with the connector and spark-avro; Python workers run this interpreter
    with the benchmark modules importable."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [str(BENCH_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark.sql import SparkSession

    import spark_replicate
    import pydecode

    builder = (SparkSession.builder.master(master).appName("spark-replicate-bench")
               .config("spark.driver.memory", driver_memory)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               # Spark's advice for HotSpot, which never JIT-compiles methods over 8000 bytes of
               # bytecode: fall back from whole-stage codegen rather than run such a method
               # interpreted. Without it from_avro's wide projection runs about 2x slower; the
               # other contenders are unaffected.
               .config("spark.sql.codegen.hugeMethodLimit", "8000")
               .config("spark.jars", ",".join([avro_jar, *extra_jars])))
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    spark = spark_replicate.configure_spark(builder, kafka=kafka, delta=delta).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(pydecode.FastavroReplicateSource)
    return spark


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def page_in(files: list[Path]) -> None:
    """Reads `files`, so that the read timed next finds its input in the page cache. This machine
    pages out file pages left untouched for about a minute (the kernel's DAMON reclaim), so without
    this a contender timed after the slow Python ones read part of its input from disk: the floor
    once took 6.9 s instead of 0.7 s."""
    chunk = bytearray(1 << 23)
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(chunk):
                pass


def jit_seconds(spark):
    """A clock of the driver JVM's JIT compilation so far, in seconds (summed over compiler threads)."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getCompilationMXBean()
    return lambda: bean.getTotalCompilationTime() / 1000


@dataclass
class Rounds:
    """Each contender's wall seconds in the timed rounds (and in the warm-up rounds), and the JIT
    compilation (seconds) in every round by phase, "warm-up" and "timed": how far the JVM had
    settled when timing began."""
    times: dict[str, list[float]]
    warm_up_times: dict[str, list[float]]
    jit_s: dict[str, list[float]]


def measure(spark, contenders, inputs: list[Path], runs: int, warmups: int = 1, before_timing=None) -> Rounds:
    """`warmups` rounds, then `before_timing()` if given, then `runs` timed rounds; in each, every
    contender runs once, in turn, each run after the files under the folders `inputs` are paged in."""
    jit = jit_seconds(spark)
    input_files = sorted(p for folder in inputs for p in folder.rglob("*") if p.is_file())
    rounds = []  # (seconds per contender, JIT seconds)
    for r in range(warmups + runs):
        if r == warmups and before_timing:
            before_timing()
        compiled = jit()
        took = {}
        for c in contenders:
            page_in(input_files)
            took[c.key] = timed(c.run)
        rounds.append((took, round(jit() - compiled, 3)))
        label = f"warm-up {r + 1}/{warmups}" if r < warmups else f"round {r - warmups + 1}/{runs}"
        log(f"    {label}: " + ", ".join(f"{k} {v:.2f}" for k, v in took.items()) + f"; JIT {rounds[-1][1]:.1f} s")

    def by_contender(phase):
        return {c.key: [took[c.key] for took, _ in phase] for c in contenders}
    warm_up_rounds, timed_rounds = rounds[:warmups], rounds[warmups:]
    return Rounds(by_contender(timed_rounds), by_contender(warm_up_rounds),
                  {"warm-up": [jit_s for _, jit_s in warm_up_rounds], "timed": [jit_s for _, jit_s in timed_rounds]})


# --------------------------------------------------------------------------------------------
# The contenders on one profile
# --------------------------------------------------------------------------------------------


def bench_profile(spark, ds, runs: int, with_diagnostics: bool = False) -> dict:
    import contenders as C
    import pydecode
    import report
    import spark_replicate

    info = pydecode.table_info(str(ds.schema_dir), ds.profile.table_name)
    schema = C.connector(spark, ds).schema
    all_contenders = C.contenders(spark, ds, info, schema)
    messages = sum(ds.counts.values())

    log(f"  checking that every contender returns the same rows ({messages:,} messages) ...")
    reference = None
    checks = {}
    for c in all_contenders:
        if c.is_floor:
            row = c.build().first()
            checks[c.key] = {"rows": row["messages"], "value_bytes": row["bytes"]}
            if row["messages"] != messages:
                raise SystemExit(f"floor read {row['messages']} records, expected {messages}")
            continue
        df = c.build()
        if not C.same_types(df.schema, schema):
            raise SystemExit(f"{c.key}: schema differs from the connector's:\n{df.schema}\n{schema}")
        result = C.checksum(df)
        checks[c.key] = {"rows": result["rows"], "checksum": result["checksum"]}
        if reference is None:
            reference = result
            if result["rows"] != messages:
                raise SystemExit(f"connector returned {result['rows']} rows, expected {messages}")
        elif result["rows"] != reference["rows"] or result["checksum"] != reference["checksum"]:
            differing = [k for k, v in result["columns"].items() if reference["columns"][k] != v]
            raise SystemExit(f"{c.key} disagrees with the connector: rows {result['rows']} vs "
                             f"{reference['rows']}, differing columns {differing}")
        log(f"    {c.key}: {result['rows']:,} rows, checksum {result['checksum']}")
    groups = C.diagnostics(spark, ds, info) if with_diagnostics else []
    for group in groups:
        sums = [C.checksum(c.build()) for c in group]
        # A group of one is checked against the connector's full output.
        expected, against = (sums[0], "") if len(group) > 1 else (reference, " with the connector")
        if any((s["rows"], s["checksum"]) != (expected["rows"], expected["checksum"]) for s in sums):
            raise SystemExit(f"the diagnostic contenders {[c.key for c in group]} disagree{against}")
        for c, result in zip(group, sums):
            checks[c.key] = {"rows": result["rows"], "checksum": result["checksum"]}
        log(f"    {' and '.join(c.key for c in group)} agree{against} "
            f"({sums[0]['rows']:,} rows, checksum {sums[0]['checksum']})")
    extra = [c for group in groups for c in group]
    all_contenders[0].run()
    metrics = spark_replicate.last_read_metrics(spark)
    if metrics["rowsReturned"] != messages or metrics["messagesRead"] != messages:
        raise SystemExit(f"connector metrics disagree with the dataset: {metrics}")

    log(f"  timing ({runs} rounds after a warm-up) ...")
    rounds = measure(spark, all_contenders + extra, ds.inputs + ([C.decoded_dir(ds)] if extra else []), runs)
    times = rounds.times
    median = {k: statistics.median(v) for k, v in times.items()}
    connector = median["connector"]
    ratios = {f"connector_vs_{c.key}": round(report.contender_ratio(c.key, connector, median[c.key]), 3)
              for c in all_contenders if c.key != "connector"}
    if "connector_typed" in median:
        ratios[report.TYPED_RATIO] = round(median["from_avro_typed"] / median["connector_typed"], 3)
    return {
        "profile": ds.profile.name,
        "columns": len(ds.profile.table.columns),
        "messages": messages,
        "operations": ds.counts,
        "data_files": len(ds.data_files),
        "data_bytes": ds.data_bytes,
        "avg_message_bytes": round(checks["floor"]["value_bytes"] / messages, 1),
        "checks": checks,
        "connector_metrics": metrics,
        "contenders": {c.key: {"label": c.label, "times_s": [round(t, 4) for t in times[c.key]],
                               "median_s": round(median[c.key], 4),
                               "rows_per_s": round(messages / median[c.key]),
                               "mb_per_s": round(ds.data_bytes / median[c.key] / 1e6, 1)}
                       for c in all_contenders + extra},
        "diagnostics": [c.key for c in extra],
        "jit_s": rounds.jit_s,
        "ratios": ratios,
    }


# --------------------------------------------------------------------------------------------
# Workers: a fresh JVM per measurement that needs its own master or JVM flags
# --------------------------------------------------------------------------------------------


def run_worker(kind: str, args: argparse.Namespace, **params) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        spec = {"kind": kind, "out": out.name, "avro_jar": args.avro_jar, **params}
        subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], check=True)
        return json.loads(Path(out.name).read_text())


def worker(spec: dict) -> None:
    import contenders as C
    from profiles import PROFILES, dataset

    ds = dataset(PROFILES[spec["profile"]], spec["messages"], spec["seed"], Path(spec["data_dir"]))

    def chosen(spark, *keys):
        import pydecode
        info = pydecode.table_info(str(ds.schema_dir), ds.profile.table_name)
        return [c for c in C.contenders(spark, ds, info, None) if c.key in keys]

    if spec["kind"] == "scaling":
        spark = make_session(spec["master"], spec["avro_jar"])
        rounds = measure(spark, chosen(spark, "connector", "floor"), ds.inputs, spec["runs"], spec["warmups"])
        result = {"times": rounds.times, "jit_s": rounds.jit_s}
    elif spec["kind"] == "memory":
        gc_log = spec["gc_log"]
        # A small young generation makes G1 collect every 64 MB allocated, so the live heap after
        # GC is sampled often even on small inputs.
        spark = make_session("local[2]", spec["avro_jar"], f"-Xmn64m -Xlog:gc:file={gc_log}:uptime",
                             driver_memory=spec["heap"])
        jvm = spark._jvm
        runtime = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
        C.connector(spark, ds).limit(1000).write.format("noop").mode("overwrite").save()  # load classes
        jvm.java.lang.System.gc()
        start_ms = runtime.getUptime()
        seconds = timed(lambda: C.connector(spark, ds).write.format("noop").mode("overwrite").save())
        end_ms = runtime.getUptime()
        jvm.java.lang.System.gc()
        time.sleep(0.5)
        pid = jvm.java.lang.ProcessHandle.current().pid()
        status = Path(f"/proc/{pid}/status").read_text()
        hwm_kb = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
        result = {"seconds": seconds, "start_s": start_ms / 1000, "end_s": end_ms / 1000, "vm_hwm_mb": hwm_kb / 1024}
        spark.stop()
        result.update(parse_gc_log(Path(gc_log).read_text(), result["start_s"], result["end_s"]))
    elif spec["kind"] == "profile":
        spark = make_session("local[2]", spec["avro_jar"], extra_jars=[spec["profiler_jar"]])
        # async-profiler's Java API, in the driver JVM, which runs local[2]'s task threads; the
        # native library comes out of the jar. `cpu` samples every millisecond of a thread's CPU
        # time through perf events; where the machine bars them (often in containers), `ctimer`
        # samples each thread's CPU clock at the kernel's tick (4 ms here) instead.
        profiler = spark._jvm.one.profiler.AsyncProfiler.getInstance()
        engine = None

        def start_profiler():
            nonlocal engine
            from py4j.protocol import Py4JJavaError
            for candidate in ("cpu", "ctimer"):
                try:
                    profiler.execute(f"start,event={candidate},interval=1ms")
                    engine = candidate
                    return
                except Py4JJavaError as e:
                    log(f"  async-profiler cannot use `{candidate}`: {e.java_exception}")
            raise SystemExit("async-profiler could not start; pass --skip-profile to do without the CPU profile")

        rounds = measure(spark, chosen(spark, "connector"), ds.inputs, spec["runs"], spec["warmups"], start_profiler)
        profiler.execute(f"stop,collapsed,file={spec['collapsed']}")
        spark.stop()
        import cpu_profile
        result = ({"engine": engine, "warm_ups_s": rounds.warm_up_times["connector"], "times_s": rounds.times["connector"]}
                  | cpu_profile.split(Path(spec["collapsed"])))
    else:
        raise SystemExit(f"unknown worker {spec['kind']}")
    Path(spec["out"]).write_text(json.dumps(result))


_GC_LINE = re.compile(r"\[(\d+\.\d+)s\].*?Pause (Young|Full|Remark|Cleanup)[^\n]*?(\d+)M->(\d+)M\((\d+)M\)")


def parse_gc_log(text: str, start_s: float, end_s: float) -> dict:
    """Peak heap after GC (the live set the JVM keeps) during the read, from -Xlog:gc output."""
    during, after_read = [], []
    for match in _GC_LINE.finditer(text):
        at, kind, before, after, total = float(match[1]), match[2], int(match[3]), int(match[4]), int(match[5])
        if start_s <= at <= end_s:
            during.append(after)
        elif at > end_s and kind == "Full":
            after_read.append(after)
    return {"gc_pauses_during_read": len(during), "peak_heap_after_gc_mb": max(during) if during else None,
            "heap_after_full_gc_mb": after_read[0] if after_read else None}


# --------------------------------------------------------------------------------------------
# The JVM micro-benchmark (scala/test/io/sparkreplicate/bench/DecoderBench.scala)
# --------------------------------------------------------------------------------------------


def micro_benchmark(ds, messages: int, seconds: float) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        command = ["bin/sbt", f"Test/runMain io.sparkreplicate.bench.DecoderBench {ds.root} "
                              f"{ds.profile.table_name} {messages} {seconds} {out.name}"]
        log("  " + " ".join(command[:1]) + f' "{command[1]}"')
        for attempt in range(6):
            completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
            if completed.returncode == 0:
                break
            text = completed.stdout + completed.stderr
            if re.search(r"(?i)server is already booting|waiting for lock|another instance", text) and attempt < 5:
                log("  sbt is busy (another build is running); retrying in 60 s")
                time.sleep(60)
                continue
            raise SystemExit(f"the micro-benchmark failed:\n{text[-4000:]}")
        result = json.loads(Path(out.name).read_text())
        result["command"] = " ".join(command[:1]) + f' "{command[1]}"'
        return result


# --------------------------------------------------------------------------------------------
# The environment
# --------------------------------------------------------------------------------------------


def _run(command: list[str], **kwargs) -> str:
    try:
        completed = subprocess.run(command, capture_output=True, text=True, **kwargs)
        return (completed.stdout + completed.stderr).strip()
    except OSError as e:
        return f"unavailable: {e}"


def environment(avro_jar: str) -> dict:
    import fastavro
    import pyarrow
    import pyspark

    import spark_replicate
    cpu = re.search(r"model name\s*:\s*(.*)", Path("/proc/cpuinfo").read_text())
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    status = _run(["git", "--no-optional-locks", "status", "--porcelain"], cwd=REPO)
    changed = [line[3:] for line in status.splitlines() if line.strip()]
    jar = spark_replicate.jar_path()
    try:
        import pandas
        pandas_version = pandas.__version__
    except ImportError:
        pandas_version = None
    return {
        "git_commit": _run(["git", "rev-parse", "HEAD"], cwd=REPO),
        "git_uncommitted": changed,
        "connector_sources_clean": not any(p.startswith(("scala/main", "build.sbt", "project/")) for p in changed),
        "connector_jar": str(jar),
        "connector_jar_sha256": hashlib.sha256(Path(jar).read_bytes()).hexdigest(),
        "machine": {
            "cpu": cpu.group(1) if cpu else platform.processor(),
            "cores": os.cpu_count(),
            "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
            "os": f"{platform.system()} {platform.release()}",
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": {
            "java": _run(["java", "-version"]).splitlines()[0],
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
            "spark_avro": re.sub(r".*spark-avro_2\.13-(.*)\.jar", r"\1", avro_jar),
            "fastavro": fastavro.__version__,
            "pyarrow": pyarrow.__version__,
            "pandas": pandas_version,
        },
    }


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_MESSAGES:,} messages for M")
    parser.add_argument("--messages", type=int, help=f"messages of profile M (and S; W gets an eighth); "
                                                     f"default {DEFAULT_MESSAGES:,}")
    parser.add_argument("--profiles", default="M,S,W", help="comma-separated, M first is the headline")
    parser.add_argument("--runs", type=int, help="timed rounds after the warm-up (median reported); "
                                                 "default 5, 3 with --quick")
    parser.add_argument("--fresh-warmups", type=int, default=3,
                        help="warm-up rounds of the fresh JVMs that measure scaling and the CPU profile; default 3")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default=str(BENCH_DIR / "data"))
    parser.add_argument("--out-dir", default=str(BENCH_DIR))
    parser.add_argument("--spark-avro-jar")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-micro", action="store_true")
    parser.add_argument("--async-profiler-jar", help="async-profiler's jar from Maven Central, for the CPU "
                                                       "profile of the connector (make bench fetches it)")
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--skip-kafka", action="store_true")
    parser.add_argument("--skip-streaming", action="store_true")
    parser.add_argument("--streaming-landings", type=int, default=20,
                        help="files landed one at a time to measure the stream's latency; default 20")
    parser.add_argument("--skip-apply", action="store_true")
    parser.add_argument("--only", metavar="STEP[,STEP]", type=only_steps,
                        help=f"run only these steps ({', '.join(ONLY_STEPS)}), on the first of --profiles, and "
                             "merge their results into --out-dir's results.json (RESULTS.md is written again "
                             "from it when a full run wrote it there)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return

    from profiles import PROFILES, dataset
    import report

    args.avro_jar = fetched_jar(args.spark_avro_jar, args.data_dir, "spark-avro_2.13-*.jar", "--spark-avro-jar")
    if args.only:
        run_only(args)
        return
    if not args.skip_profile:
        args.profiler_jar = fetched_jar(args.async_profiler_jar, args.data_dir, "async-profiler-*.jar",
                                        "--async-profiler-jar (or --skip-profile)")
    m_messages = args.messages or (QUICK_MESSAGES if args.quick else DEFAULT_MESSAGES)
    args.runs = args.runs or (3 if args.quick else 5)
    # S has as many (smaller) messages as M; W's messages are 2.4x M's, so it gets an eighth of them.
    sizes = {"M": m_messages, "S": m_messages, "W": max(1, m_messages // 8)}
    profiles = [p.strip().upper() for p in args.profiles.split(",") if p.strip()]
    data_dir = Path(args.data_dir)
    command = " ".join(["python", "benchmarks/run.py"] + sys.argv[1:])
    started = time.time()
    env = environment(args.avro_jar)
    log(f"spark-replicate benchmark at {env['git_commit'][:12]}; load average {env['machine']['load_average_at_start']}")

    # The 1-minute load average every 30 s during the run: how busy the shared machine was.
    import threading
    load_samples: list[float] = []
    stop_sampling = threading.Event()

    def sample_load() -> None:
        while not stop_sampling.is_set():
            load_samples.append(round(os.getloadavg()[0], 2))
            stop_sampling.wait(30)
    threading.Thread(target=sample_load, daemon=True).start()

    datasets = {p: dataset(PROFILES[p], sizes[p], args.seed, data_dir, log) for p in profiles}
    results = {"command": os.environ.get("BENCH_COMMAND", command), "quick": args.quick, "runs": args.runs,
               "seed": args.seed, "master": "local[2]", "environment": env, "profiles": {}}

    for p in profiles:
        log(f"profile {p} ({PROFILES[p].description}, {sizes[p]:,} messages)")
        # A session per profile: its Python workers (reused by every Python contender) start fresh.
        # One session for all profiles once lost a worker to a crash in the last profile, after
        # about 50 minutes of runs, which did not recur in a fresh session.
        spark = make_session("local[2]", args.avro_jar)
        results["profiles"][p] = bench_profile(spark, datasets[p], args.runs, with_diagnostics=p == profiles[0])
        spark.stop()

    headline = "M" if "M" in profiles else profiles[0]
    results["headline"] = headline
    results["ratios"] = dict(results["profiles"][headline]["ratios"])
    ds = datasets[headline]
    worker_params = {"profile": headline, "seed": args.seed, "data_dir": str(data_dir)}

    if not args.skip_scaling:
        log(f"scaling: the connector (and the floor) on {headline} in local[1] and local[2] ...")
        # Two fresh JVMs per master, in the order 2, 1, 1, 2, so that a drift in the machine's
        # load hits both alike; medians over all their timed runs. A fresh JVM compiles for seconds
        # over its first reads, which under local[2] takes CPU from the task threads and under
        # local[1] runs on the idle core: each warms up for `--fresh-warmups` rounds first.
        runs = {"local[1]": {"connector": [], "floor": []}, "local[2]": {"connector": [], "floor": []}}
        jit = {"local[1]": [], "local[2]": []}
        for master in ("local[2]", "local[1]", "local[1]", "local[2]"):
            result = run_worker("scaling", args, master=master, runs=args.runs, warmups=args.fresh_warmups,
                                messages=sizes[headline], **worker_params)
            for key in ("connector", "floor"):
                runs[master][key] += result["times"][key]
            jit[master].append(result["jit_s"])
        median = {m: {k: statistics.median(v) for k, v in by.items()} for m, by in runs.items()}
        results["scaling"] = {
            "profile": headline, "messages": sizes[headline], "jvms_per_master": 2,
            "connector_s": {m: round(v["connector"], 3) for m, v in median.items()},
            "floor_s": {m: round(v["floor"], 3) for m, v in median.items()},
            "connector_speedup": round(median["local[1]"]["connector"] / median["local[2]"]["connector"], 3),
            "floor_speedup": round(median["local[1]"]["floor"] / median["local[2]"]["floor"], 3),
            "times_s": runs,
            "warmup_rounds": args.fresh_warmups,
            "jit_s": jit,
        }
        log(f"  connector speed-up {results['scaling']['connector_speedup']}, floor {results['scaling']['floor_speedup']}")

    if not args.skip_memory:
        log(f"memory: the connector's live heap on {headline} as the input grows (fresh JVM, 2 GiB heap, "
            "64 MiB young generation, 8 files each) ...")
        points = []
        for fraction in (4, 2, 1):
            n = max(1, sizes[headline] // fraction)
            grown = dataset(PROFILES[headline], n, args.seed, data_dir, log)
            # One JVM's peak is at the mercy of when G1 happens to collect (a sample of 107 MB among
            # runs of 58 MB was seen): the point is the run with the median peak, all peaks are kept.
            runs = []
            for _ in range(MEMORY_REPEATS):
                with tempfile.TemporaryDirectory() as tmp:
                    runs.append(run_worker("memory", args, messages=n, heap="2g", gc_log=f"{tmp}/gc.log",
                                           **worker_params))
            runs.sort(key=lambda run: run["peak_heap_after_gc_mb"] or 0)
            point = runs[len(runs) // 2] | {"peaks_after_gc_mb": [run["peak_heap_after_gc_mb"] for run in runs]}
            point.update({"messages": n, "data_bytes": grown.data_bytes,
                          "file_bytes": max(f.stat().st_size for f in grown.data_files)})
            points.append(point)
            log(f"  {n:,} messages: peak heap after GC {point['peak_heap_after_gc_mb']} MB "
                f"(runs: {point['peaks_after_gc_mb']}), "
                f"{point['gc_pauses_during_read']} GCs, RSS peak {point['vm_hwm_mb']:.0f} MB")
        results["memory"] = report.memory_summary(points, MEMORY_FLAT_RATIO, MEMORY_NOISE_MB)

    if not args.skip_kafka:
        results["kafka"] = step_in_own_process("kafka", args, ds)
        results["ratios"].update(results["kafka"]["ratios"])

    if not args.skip_micro:
        results["micro"] = micro_step(args, datasets.get("M", ds))
        results["ratios"].update(results["micro"]["ratios"])

    if not args.skip_profile:
        log(f"profile: where the connector's CPU time goes on {headline} (async-profiler, {args.runs} reads) ...")
        collapsed = data_dir / f"connector-{headline}.collapsed"
        results["cpu_profile"] = run_worker("profile", args, messages=sizes[headline], runs=args.runs,
                                            warmups=args.fresh_warmups,
                                            profiler_jar=args.profiler_jar, collapsed=str(collapsed),
                                            **worker_params)
        results["cpu_profile"].update({"profile": headline, "collapsed_stacks": str(collapsed)})
        log(f"  {results['cpu_profile']['samples']:,} samples: {results['cpu_profile']['parts']} ({collapsed})")

    if not args.skip_streaming:
        results["streaming"] = streaming_step(args, ds)
        results["ratios"].update(results["streaming"]["ratios"])
    if not args.skip_apply:
        results["apply"] = step_in_own_process("apply", args, ds)
        results["ratios"].update(results["apply"]["ratios"])
    carry_over_steps_run_alone(results, Path(args.out_dir) / "results.json")

    stop_sampling.set()
    results["environment"]["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["environment"]["machine"]["load_1min_during_run"] = {
        "samples": len(load_samples), "min": min(load_samples), "median": statistics.median(load_samples),
        "max": max(load_samples)}
    results["elapsed_s"] = round(time.time() - started)
    results["targets"] = report.targets(results)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "RESULTS.md").write_text(report.markdown(results))
    log(f"wrote {out / 'results.json'} and {out / 'RESULTS.md'} in {results['elapsed_s']} s")
    for name, target in results["targets"].items():
        log(f"  {name}: {target['value']} (target {target['target']}) {'met' if target['met'] else 'MISSED'}")


def carry_over_steps_run_alone(results: dict, stored: Path) -> None:
    """A step this run skipped keeps its results from ``stored`` when they were measured by
    ``--only`` (they name their own command and commit, which the report shows), so that a full
    run need not repeat a step whose code it did not change. Results a full run wrote name no
    commit of their own and are not carried over."""
    previous = json.loads(stored.read_text()) if stored.exists() else {}
    for step in ONLY_STEPS:
        if step not in results and "git_commit" in previous.get(step, {}):
            results[step] = previous[step]
            results["ratios"].update(previous[step]["ratios"])


def step_in_own_process(step: str, args: argparse.Namespace, ds) -> dict:
    """``--only step`` in a Python process of its own, for a step whose session needs packages
    (Kafka's source, Delta Lake): Spark resolves ``spark.jars.packages`` only when its JVM starts,
    and this process's JVM started for the sessions before it, without them."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, "--only", step, "--profiles", ds.profile.name,
                        "--messages", str(ds.messages), "--runs", str(args.runs), "--seed", str(args.seed),
                        "--data-dir", args.data_dir, "--spark-avro-jar", args.avro_jar, "--out-dir", tmp], check=True)
        result = json.loads((Path(tmp) / "results.json").read_text())[step]
    for alone in ("command", "git_commit"):  # (the full run's own)
        result.pop(alone)
    return result


def kafka_step(args: argparse.Namespace, ds) -> dict:
    """The Kafka profile, on a broker and in a session of its own."""
    import kafka_profile

    log(f"kafka: {ds.profile.name} published to a local broker, read through Spark's Kafka source ...")
    with tempfile.TemporaryDirectory() as tmp:
        result = kafka_profile.bench_kafka(lambda: make_session("local[2]", args.avro_jar, kafka=True), measure,
                                           ds, args.runs, Path(tmp), log)
    log(f"  {result['ratios']}")
    return result


def streaming_step(args: argparse.Namespace, ds) -> dict:
    """The streaming measurements in a session of their own."""
    import streaming

    log(f"streaming: AvailableNow and landing latency on {ds.profile.name} ...")
    spark = make_session("local[2]", args.avro_jar)
    try:
        result = streaming.bench_streaming(spark, ds, args.runs, args.streaming_landings, page_in, log)
    finally:
        spark.stop()
    return result | {"ratios": {"streaming_available_now_vs_batch": result["available_now_vs_batch"]}}


def micro_step(args: argparse.Namespace, ds) -> dict:
    """The JVM decoder micro-benchmark (one thread, sbt's JVM) on the messages of ``ds``, profile M's
    in a full run."""
    import report

    log("micro-benchmark: ChangeRowDecoder against GenericDatumReader + a generic converter ...")
    result = micro_benchmark(ds, min(20_000 if args.quick else 200_000, ds.messages), 2.0 if args.quick else 10.0)
    log(f"  {result['summary']}")
    return result | {"ratios": report.decoder_ratios(result)}


def only_steps(value: str) -> list[str]:
    steps = [step.strip() for step in value.split(",") if step.strip()]
    unknown = [step for step in steps if step not in ONLY_STEPS]
    if unknown or not steps:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or value!r}: the steps are {', '.join(ONLY_STEPS)}")
    return steps


def apply_step(args: argparse.Namespace, ds) -> dict:
    """The apply measurements on the profile's table and size, in a session of their own with Delta Lake."""
    import apply_profile
    from profiles import FILES, OPERATION_MIX

    log(f"apply: apply_changes and latest_state against the hand-written way on {ds.profile.name}'s table ...")
    spark = make_session("local[2]", args.avro_jar, delta=True)
    try:
        result = apply_profile.bench_apply(spark, ds.profile.table, ds.messages, args.seed, args.runs, FILES,
                                           OPERATION_MIX, log)
    finally:
        spark.stop()
    return result | {"ratios": {"apply_vs_handwritten": result["apply_vs_handwritten"]}}


# The steps `--only` runs alone; each returns its results, with the `ratios` they add to the headline's.
ONLY_STEPS = {"kafka": kafka_step, "streaming": streaming_step, "apply": apply_step, "micro": micro_step}


def run_only(args: argparse.Namespace) -> None:
    """`--only STEP[,STEP]`: those steps alone, their results merged into the existing results.json."""
    from profiles import PROFILES, dataset
    import report

    name = args.profiles.split(",")[0].strip().upper()
    args.runs = args.runs or (3 if args.quick else 5)
    messages = args.messages or (QUICK_MESSAGES if args.quick else DEFAULT_MESSAGES)
    ds = dataset(PROFILES[name], messages, args.seed, Path(args.data_dir), log)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stored = out / "results.json"
    results = json.loads(stored.read_text()) if stored.exists() else {"ratios": {}}
    alone = {"command": " ".join(["python", "benchmarks/run.py"] + sys.argv[1:]),
             "git_commit": environment(args.avro_jar)["git_commit"]}
    for step in args.only:
        run = ONLY_STEPS[step] if len(args.only) == 1 else functools.partial(step_in_own_process, step)
        results[step] = run(args, ds) | alone
        results["ratios"].update(results[step]["ratios"])
    if "environment" in results:
        results["targets"] = report.targets(results)
        (out / "RESULTS.md").write_text(report.markdown(results))
    stored.write_text(json.dumps(results, indent=2) + "\n")
    log(f"wrote {stored}" + (" and RESULTS.md" if "environment" in results else
                             " (no full run there yet: RESULTS.md is written by a full run)"))


if __name__ == "__main__":
    main()
