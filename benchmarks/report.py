"""results.json → the verdicts on the targets, and benchmarks/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

import cpu_profile
import kafka_profile

ORDER = ("connector", "from_avro", "fastavro_mapinarrow", "python_datasource", "floor")


def memory_summary(points: list[dict], flat_ratio: float, noise_mb: int) -> dict:
    smallest, largest = points[0], points[-1]
    low, high = smallest["peak_heap_after_gc_mb"], largest["peak_heap_after_gc_mb"]
    flat = None if low is None or high is None else high <= low * flat_ratio + noise_mb
    return {
        "points": points,
        "input_growth": round(largest["data_bytes"] / smallest["data_bytes"], 2),
        "peak_heap_after_gc_growth": None if not low or high is None else round(high / low, 3),
        "flat": flat,
        "rule": f"peak heap after GC at the largest input <= {flat_ratio} x the smallest + {noise_mb} MB",
    }


# The issues' targets for the headline profile: (comparison, bound) per ratio.
TARGETS = {
    "connector_vs_fastavro_mapinarrow": (">=", 10.0),
    "connector_vs_from_avro": (">=", 6.0),
    "connector_vs_floor": ("<=", 2.5),
    "connector_typed_vs_from_avro_cast": (">=", 6.0),
    "decoder_ns_per_message": ("<=", 500.0),
    "decoder_bytes_per_message": ("<=", 400.0),
    "scaling_local1_to_local2": (">=", 1.7),
    "streaming_available_now_vs_batch": ("<=", 1.15),
    "kafka_connector_vs_from_avro": (">=", 3.0),
    "kafka_from_replicate_vs_from_avro": (">=", 3.0),
    "kafka_connector_vs_floor": ("<=", 2.0),
    "apply_vs_handwritten": (">=", 1.0),
}
# The default read (`sourceTypes=true`) against from_avro twice then CAST: the diagnostic pair
# `connector_typed` and `from_avro_typed`.
TYPED_RATIO = "connector_typed_vs_from_avro_cast"


def decoder_ratios(micro: dict) -> dict:
    """The JVM micro-benchmark's connector case (profile M, one thread): ns and bytes per message."""
    connector = next(c for c in micro["cases"] if c["key"] == "connector")
    return {"decoder_ns_per_message": connector["ns_per_message"],
            "decoder_bytes_per_message": connector["bytes_per_message"]}


def contender_ratio(key: str, connector_s: float, contender_s: float) -> float:
    """A headline ratio: contender time / connector time; for the floor, connector time / floor time."""
    return connector_s / contender_s if key == "floor" else contender_s / connector_s


def meets(value: float, op: str, bound: float) -> bool:
    return value >= bound if op == ">=" else value <= bound


def targets(results: dict) -> dict:
    out = {}
    for name, (op, bound) in TARGETS.items():
        if name == "scaling_local1_to_local2":
            value = results.get("scaling", {}).get("connector_speedup")
        else:
            value = results["ratios"].get(name)
        if value is None:
            continue
        out[name] = {"value": value, "target": f"{op} {bound}",
                     "met": meets(value, op, bound)}
    if "memory" in results and results["memory"]["flat"] is not None:
        out["memory_flat"] = {"value": results["memory"]["peak_heap_after_gc_growth"],
                              "target": results["memory"]["rule"], "met": results["memory"]["flat"]}
    return out


def best_rounds_ratio(results: dict, name: str) -> float | None:
    """A headline ratio from each side's fastest timed round rather than its median."""
    if name == "scaling_local1_to_local2":
        if "scaling" not in results:
            return None
        runs = results["scaling"]["times_s"]
        return min(runs["local[1]"]["connector"]) / min(runs["local[2]"]["connector"])
    if name in kafka_profile.RATIOS:
        kafka = results.get("kafka")
        if not kafka:
            return None
        return kafka_profile.ratios({k: min(c["times_s"]) for k, c in kafka["contenders"].items()})[name]
    contenders = results["profiles"][results["headline"]]["contenders"]
    if name == TYPED_RATIO:
        if "connector_typed" not in contenders:
            return None
        return min(contenders["from_avro_typed"]["times_s"]) / min(contenders["connector_typed"]["times_s"])
    if not name.startswith("connector_vs_"):
        return None
    key = name.removeprefix("connector_vs_")
    return contender_ratio(key, min(contenders["connector"]["times_s"]), min(contenders[key]["times_s"]))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{x:.1f}" for x in values)


def _jit_lines(s: dict) -> list[str]:
    """Why the scaling JVMs warm up, and how much their JIT still compiled once timing began."""
    lines = [f"Each JVM warms up with {s['warmup_rounds']} rounds (both read once per round) before its timed "
             "rounds: a fresh JVM's JIT compiles for seconds over its first reads, which under local[2] takes CPU "
             "from the task threads and under local[1] runs on the idle core. JIT compilation in each round, seconds "
             "summed over the compiler threads:", "",
             "| JVM | warm-up rounds | timed rounds |", "|---|---|---|"]
    for master in ("local[2]", "local[1]"):
        for n, jvm in enumerate(s["jit_s"][master], 1):
            lines.append(f"| {master} #{n} | {_seconds(jvm['warm-up'])} | {_seconds(jvm['timed'])} |")
    return lines


def _peaks(point: dict) -> str:
    """The point's peak heap after GC, and every run's when it was measured more than once."""
    runs = point.get("peaks_after_gc_mb", [])
    return f"{point['peak_heap_after_gc_mb']}" + (f" ({', '.join(map(str, runs))})" if len(runs) > 1 else "")


def _fmt_int(n) -> str:
    return f"{n:,}"


def markdown(r: dict) -> str:
    env = r["environment"]
    m = env["machine"]
    v = env["versions"]
    lines = [
        "# spark-replicate benchmark results",
        "",
        f"Generated by `{r['command']}` in {r['elapsed_s']} s. "
        + ("**Quick (smoke) run: sizes too small for the ratios to mean much.**" if r["quick"] else ""),
        "",
        f"- commit `{env['git_commit']}`; connector sources (scala/main, build) "
        + ("unmodified at that commit" if env["connector_sources_clean"] else
           "**modified in the working tree** (see `git_uncommitted` in results.json)")
        + f"; jar sha256 `{env['connector_jar_sha256'][:16]}…`",
        f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}; load average "
        f"{m['load_average_at_start']} at the start, {m.get('load_average_at_end')} at the end; 1-minute load "
        "during the run (every 30 s, this benchmark included) "
        + (f"min {m['load_1min_during_run']['min']}, median {m['load_1min_during_run']['median']}, "
           f"max {m['load_1min_during_run']['max']}" if "load_1min_during_run" in m else "not sampled")
        + ". The machine is shared: other jobs may have run.",
        f"- versions: {v['java']}; Python {v['python']}; pyspark {v['pyspark']}; spark-avro {v['spark_avro']}; "
        f"fastavro {v['fastavro']}; pyarrow {v['pyarrow']}; pandas {v['pandas']}",
        f"- SparkSession `{r['master']}`, driver memory 4g, session time zone UTC; one warm-up, then "
        f"{r['runs']} rounds with the contenders taking turns; medians. Times are wall-clock seconds of "
        "`df.write.format(\"noop\")` (the floor: collecting `sum(length(value))`). Before every read "
        "the harness reads the input files itself, untimed, so that each read finds them in the page "
        "cache: this machine pages out file pages left untouched for a minute.",
        "",
        "Each contender returns the connector's full output (table columns, `header__*` columns with "
        "`changed`/`present` column lists, the before-image struct); its row count and an "
        "order-independent checksum (sum of `xxhash64` over every column of every row) equal the "
        "connector's, checked before timing.",
        "",
        f"## Headline ratios (profile {r.get('headline', 'M')})",
        "",
        "| ratio | medians | best rounds | target | |",
        "|---|---:|---:|---|---|",
    ]
    for name, t in r["targets"].items():
        best = best_rounds_ratio(r, name)
        best_met = None if best is None else meets(best, *TARGETS[name])
        verdict = "met" if t["met"] else "**missed**"
        if best_met is not None and best_met != t["met"]:
            verdict = ("**unsettled**: met by the medians, missed by the best rounds" if t["met"] else
                       "**unsettled**: missed by the medians, met by the best rounds")
        lines.append(f"| {name} | {t['value']} | {'' if best is None else f'{best:.3f}'} | {t['target']} | {verdict} |")
    lines += ["", "(ratio = contender time / connector time; for the floor, connector time / floor time; for the typed "
              "pair, from_avro then CAST / the connector's default read; for scaling, local[1] time / local[2] time; "
              "decoder_* are the JVM micro-benchmark's connector case, ns and bytes allocated per message. The best rounds take each side's fastest time instead of its median: "
              "noise on this shared machine only ever adds time, so where the two disagree, stalls moved the medians "
              "and the run does not settle the target.)", ""]

    avro_note = ("" if v["spark_avro"] == v["pyspark"] else
                 f" spark-avro {v['spark_avro']} is used because spark-avro_2.13:{v['pyspark']} is not published "
                 "on the Maven Central this machine reaches; it runs unchanged on Spark " + v["pyspark"] + ".")
    lines += [
        "## The contenders",
        "",
        "1. **connector**: `spark.read.format(\"replicate\")` with `schemaTopic`, `table` and `expandMasks=true`.",
        "2. **from_avro twice**: `spark.read.format(\"avro\")`, `from_avro(value, envelope)`, a filter on "
        "`type = 'DT'` and the schema id, `from_avro(message, data schema)`, then SQL for the output columns; the "
        "masks are expanded with codegen-friendly SQL (60-bit chunks of the hex, one `IF` per column, "
        "`array_except` to drop the rest). The session sets `spark.sql.codegen.hugeMethodLimit=8000` (Spark's advice "
        "for HotSpot): without it this projection runs interpreted and about 2x slower. Spark pushes the filter below "
        "the projection, so the envelope is decoded by the filter and again for `message` (about 5% on M)." + avro_note,
        "3. **fastavro in mapInArrow**: `spark.read.format(\"avro\").select(\"value\").mapInArrow(f, schema)`; `f` "
        "decodes each envelope and payload with `fastavro.schemaless_reader` (schemas parsed once per task, other "
        "tables skipped before their payload), caches mask expansions, and builds each column as one Arrow array.",
        "4. **Python Data Source**: a `pyspark.sql.datasource.DataSource`, one partition per file, reading with "
        "`fastavro.reader` (a `value`-only reader schema) and yielding 10,000-row Arrow batches from the same decoder.",
        "5. **floor**: `spark.read.format(\"avro\")` and `sum(length(value))`: reading the bytes, no decoding.",
        "",
    ]
    for name, p in r["profiles"].items():
        ops = ", ".join(f"{k} {_fmt_int(n)}" for k, n in sorted(p["operations"].items()))
        lines += [
            f"## Profile {name}: {p['columns']} columns",
            "",
            f"{_fmt_int(p['messages'])} messages ({ops}), {p['data_files']} Avro container files, "
            f"{p['data_bytes'] / 1e6:.1f} MB, {p['avg_message_bytes']} bytes per message on average.",
            "",
            "| contender | median s | min s | max s | rows/s | MB/s | contender / connector |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        connector = p["contenders"]["connector"]["median_s"]
        for key in ORDER:
            c = p["contenders"][key]
            ratio = c["median_s"] / connector
            lines.append(f"| {c['label']} | {c['median_s']:.3f} | {min(c['times_s']):.3f} | {max(c['times_s']):.3f} "
                         f"| {_fmt_int(c['rows_per_s'])} | {c['mb_per_s']} | {ratio:.2f} |")
        for key in p.get("diagnostics", []):
            c = p["contenders"][key]
            lines.append(f"| *diagnostic: {c['label']}* | {c['median_s']:.3f} | {min(c['times_s']):.3f} "
                         f"| {max(c['times_s']):.3f} | {_fmt_int(c['rows_per_s'])} | {c['mb_per_s']} "
                         f"| {c['median_s'] / connector:.2f} |")
        if p.get("diagnostics"):
            lines += ["", "The compared contenders return the Avro types (the connector with `sourceTypes=false`). "
                      "The diagnostic rows are timed in the same rounds but are not part of the ratios; the "
                      "contenders of each pair agree with each other, and the Parquet reader of the same rows with the "
                      "connector (count and checksum). The `no_masks` pair leaves out "
                      "`header__changed_columns` and `header__present_columns`; the `typed` pair returns the "
                      "connector's default output, the columns typed by the metadata (from_avro by `CAST`). The "
                      "Parquet rows read the connector's output, written in this run as uncompressed Parquet, with "
                      "Spark's vectorized reader: Spark's own columnar path for rows that need no decoding at all. "
                      "The top-level pair keeps only the columns that are neither arrays nor structs (the connector "
                      "then neither expands masks nor decodes into the before-image)."]
        lines += ["", "JIT compilation in the driver JVM, seconds per round (summed over the compiler threads): "
                  f"warm-up {_seconds(p['jit_s']['warm-up'])}; timed rounds {_seconds(p['jit_s']['timed'])}.", ""]

    if "scaling" in r:
        s = r["scaling"]
        lines += [
            f"## Scaling (profile {s['profile']}, {_fmt_int(s['messages'])} messages; two fresh JVMs per master, "
            "run in the order local[2], local[1], local[1], local[2]; medians of their timed runs)",
            "",
            "| | local[1] s | local[2] s | speed-up |",
            "|---|---:|---:|---:|",
            f"| connector | {s['connector_s']['local[1]']} | {s['connector_s']['local[2]']} | {s['connector_speedup']} |",
            f"| floor (control) | {s['floor_s']['local[1]']} | {s['floor_s']['local[2]']} | {s['floor_speedup']} |",
            "",
            "The floor's speed-up shows how much of the second core the machine actually gave.",
            "",
        ]
        lines += _jit_lines(s) + [""]
    if "memory" in r:
        mem = r["memory"]
        lines += [
            "## Executor memory as the input grows (connector, profile M, 8 files each time; a fresh JVM with a "
            "2 GiB heap and a 64 MiB young generation, so that G1 collects, and samples the live heap, every 64 MB "
            "allocated)",
            "",
            "Each size runs in several fresh JVMs; the row is the run with the median peak, and the peaks of all "
            "runs are listed after it.",
            "",
            "| messages | input MB | largest file MB | read s | GCs during read | peak heap after GC, MB (all runs) | heap after full GC, MB | JVM RSS peak, MB |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for pt in mem["points"]:
            lines.append(f"| {_fmt_int(pt['messages'])} | {pt['data_bytes'] / 1e6:.1f} | {pt['file_bytes'] / 1e6:.1f} "
                         f"| {pt['seconds']:.2f} | {pt['gc_pauses_during_read']} | {_peaks(pt)} "
                         f"| {pt['heap_after_full_gc_mb']} | {pt['vm_hwm_mb']:.0f} |")
        lines += ["", f"Input grew {mem['input_growth']}x; peak live heap grew {mem['peak_heap_after_gc_growth']}x: "
                  + ("flat" if mem["flat"] else "**not flat**") + f" ({mem['rule']}). The RSS peak mostly "
                  "reflects how far G1 let the heap grow before collecting, not what the reader keeps.", ""]
    if "micro" in r:
        mi = r["micro"]
        lines += [
            "## JVM micro-benchmark: decoding one message into a row",
            "",
            f"{_fmt_int(mi['messages'])} messages of profile M held in memory, each decoded into the row Spark "
            f"would receive, single thread, {mi['seconds_per_case']} s per case after "
            f"{mi['warmup_seconds']} s of warm-up; allocation from "
            "`com.sun.management.ThreadMXBean.getThreadAllocatedBytes`; ns/message is the median pass in wall-clock "
            "time, CPU ns/message in the thread's CPU time, which waiting for a core on the shared machine does not "
            "inflate. Command: "
            f"`{mi['command']}`" + (f" at commit `{mi['git_commit'][:12]}` (measured alone)." if "git_commit" in mi else "."),
            "",
            "| decoder | ns/message | CPU ns/message | bytes allocated/message | messages/s (one core) |",
            "|---|---:|---:|---:|---:|",
        ]
        for case in mi["cases"]:
            cpu = case.get("cpu_ns_per_message")
            lines.append(f"| {case['label']} | {case['ns_per_message']:.0f} | {'' if cpu is None else f'{cpu:.0f}'} "
                         f"| {case['bytes_per_message']:.0f} | {_fmt_int(round(1e9 / case['ns_per_message']))} |")
        lines += ["", mi["summary"], ""]
    lines += kafka(r)
    lines += streaming(r)
    lines += applying(r)
    lines += time_budget(r)
    return "\n".join(lines) + "\n"


def kafka(r: dict) -> list[str]:
    """The Kafka profile: the connector and from_replicate against from_avro twice and the floor."""
    k = r.get("kafka")
    if not k:
        return []
    floor = k["contenders"]["kafka_floor"]["median_s"]
    lines = [
        f"## Kafka (profile {k['profile']}, {_fmt_int(k['messages'])} messages, {k['partitions']} partitions)",
        "",
        *([f"Measured alone by `{k['command']}` at commit `{k['git_commit'][:12]}`.", ""] if "command" in k else []),
        "The profile's messages published to a local Apache Kafka broker (one KRaft node) and read in one session "
        "through Spark's Kafka source, taking turns after a warm-up; medians. Every decoding contender returns the "
        "same rows (count and checksum), checked before timing.",
        "",
        "| contender | median s | rows/s | x floor | rounds s |",
        "|---|---:|---:|---:|---|",
    ]
    for c in k["contenders"].values():
        lines.append(f"| {c['label']} | {c['median_s']:.3f} | {_fmt_int(c['rows_per_s'])} "
                     f"| {c['median_s'] / floor:.2f} | {_seconds(c['times_s'])} |")
    lines += ["", "Ratios (other's time / ours; ours / the floor's): "
              + ", ".join(f"{name} **{value}**" for name, value in k["ratios"].items()) + ".", ""]
    if "alike_ratios" in k:
        lines += [f"A batch read of the connector gives Spark's Kafka source, unless told otherwise, "
                  f"{kafka_profile.RANGES_PER_CORE} offset ranges per core (Spark's default: one task per topic "
                  f"partition) and `kafka.max.poll.records` {kafka_profile.POLL_RECORDS} (the consumer's default: "
                  "500). The same ratios with Spark's Kafka source given the same for every contender (outside the "
                  "targets): "
                  + ", ".join(f"{name} **{value}**" for name, value in k["alike_ratios"].items()) + ".", ""]
    return lines


def streaming(r: dict) -> list[str]:
    """The stream against the batch read, and its latency from landing to sink."""
    st = r.get("streaming")
    if not st:
        return []
    lat = st["latency"]
    lines = [
        f"## Streaming (profile {st['profile']}, {_fmt_int(st['messages'])} messages in {st['data_files']} files)",
        "",
        *([f"Measured alone by `{st['command']}` at commit `{st['git_commit'][:12]}`.", ""] if "command" in st else []),
        "`spark.readStream.format(\"replicate\")` with the connector's options, `Trigger.AvailableNow`, into the "
        "`noop` sink (a fresh checkpoint each round), against the batch read into `noop`, taking turns after a "
        "warm-up; medians.",
        "",
        "| read | median s | rounds s |",
        "|---|---:|---|",
        f"| batch | {st['median_s']['batch']:.3f} | {_seconds(st['times_s']['batch'])} |",
        f"| AvailableNow stream | {st['median_s']['available_now']:.3f} | {_seconds(st['times_s']['available_now'])} |",
        "",
        f"AvailableNow / batch: **{st['available_now_vs_batch']}** (target <= 1.15).",
        "",
        f"Latency: {lat['landings']} files landed one at a time (each one of the profile's files, "
        f"{_fmt_int(lat['file_messages'])} messages, {lat['file_bytes'] / 1e6:.1f} MB, written under a `_`-name "
        f"and renamed) into a folder a stream reads with a {lat['trigger']} processing-time trigger into a Parquet "
        "sink; from the rename to the sink's commit of the batch holding it (its `_spark_metadata` entry): "
        f"**median {lat['median_s']} s, p95 {lat['p95_s']} s** (all: {_seconds(lat['latencies_s'])}).",
        "",
    ]
    return lines


def applying(r: dict) -> list[str]:
    """apply_changes and latest_state against the hand-written way, and each way's table against the truth."""
    ap = r.get("apply")
    if not ap:
        return []
    names = {"apply_changes": "`apply_changes` (Delta, MERGE)", "handwritten_merge": "hand-written MERGE",
             "latest_state": "`latest_state` (noop)", "handwritten_latest": "hand-written latest row (noop)"}
    lines = [
        f"## Applying changes (profile {ap['profile']}'s table, {_fmt_int(ap['change_rows'])} change rows, "
        f"{_fmt_int(ap['keys'])} keys at the end)",
        "",
        *([f"Measured alone by `{ap['command']}` at commit `{ap['git_commit'][:12]}`.", ""] if "command" in ap else []),
        f"The profile's changes with {ap['partial_masks']:.0%} of the UPDATEs leaving unchanged columns out of their "
        f"column mask and {ap['key_changes']:.0%} moving their row to a new key. The hand-written way: the last "
        "change of each key by `row_number` over the change sequence, then one `MERGE` with a delete clause; "
        "each round into a new Delta table, taking turns after a warm-up; medians.",
        "",
        "| way | median s | rounds s |",
        "|---|---:|---|",
        *(f"| {names[n]} | {ap['median_s'][n]:.3f} | {_seconds(ap['times_s'][n])} |" for n in names),
        "",
        f"Hand-written / `apply_changes`: **{ap['apply_vs_handwritten']}** (target >= 1.0); hand-written latest row / "
        f"`latest_state`: {ap['latest_state_vs_handwritten']}.",
        "",
        *apply_steps(ap),
        *later_batch(ap),
        "Against the simulated source table:",
        "",
        "| table | keys missing | keys that should be gone | rows with other values |",
        "|---|---:|---:|---:|",
        *(f"| {names[n]} | {_fmt_int(d['keys_missing'])} | {_fmt_int(d['keys_extra'])} | "
          f"{_fmt_int(d['rows_with_other_values'])} |" for n, d in ap["differences_from_truth"].items()),
        "",
    ]
    return lines


def apply_steps(ap: dict) -> list[str]:
    """Where each MERGE way's time goes: its jobs by the step that ran them, and the driver's rest."""
    steps = ap.get("steps_median_s")
    if not steps:
        return []
    ours, hand = steps["apply_changes"], steps["handwritten_merge"]
    # Each way's steps in the order they ran, the steps both take once, the driver's rest last.
    names = sorted(dict.fromkeys([*ours, *hand]), key=lambda n: (n.startswith("driver"), n.startswith("other")))
    return [
        "Where the time goes (medians over the rounds, seconds): Spark's jobs by the step that ran them "
        "(Delta names its MERGE's; the benchmark hooks `apply_changes`' steps to name theirs), and the rest of "
        "each round on the driver (planning, Delta's commits, the gaps between jobs):",
        "",
        "| step | `apply_changes` | hand-written MERGE |",
        "|---|---:|---:|",
        *(f"| {n} | {_cell(ours.get(n))} | {_cell(hand.get(n))} |" for n in names),
        "",
    ]


def later_batch(ap: dict) -> list[str]:
    """A later batch into a large target, both ways (outside the targets)."""
    later = ap.get("later_batch")
    if not later:
        return []
    times, medians = later["times_s"], later["median_s"]
    return [
        f"A later batch, the steady state of a stream applied: the last {_fmt_int(later['change_rows'])} changes "
        f"into a copy of the target of {_fmt_int(later['target_rows'])} rows that the other changes made, taking "
        f"turns after a warm-up: `apply_changes` median {medians['apply_changes']:.2f} s "
        f"({_seconds(times['apply_changes'])}), the hand-written MERGE {medians['handwritten_merge']:.2f} s "
        f"({_seconds(times['handwritten_merge'])}); hand-written / `apply_changes`: "
        f"{later['later_batch_vs_handwritten']} (outside the targets).",
        "",
    ]


def _cell(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.2f}"


def time_budget(r: dict) -> list[str]:
    """Where the connector's time goes on the headline profile, from the run's CPU profile."""
    cp = r.get("cpu_profile")
    if not cp or cp["profile"] not in r["profiles"]:
        return []
    p = r["profiles"][cp["profile"]]
    # The fastest rounds: stalls of the shared machine only add time, and they hit the floor's
    # short rounds hardest, so its median can be a multiple of its usual time.
    connector_s = min(p["contenders"]["connector"]["times_s"])
    floor_s = min(p["contenders"]["floor"]["times_s"])
    # Results of runs before a part existed count it as 0.
    parts = {key: cp["parts"].get(key, 0) for key in cpu_profile.LABELS}
    task_keys = cpu_profile.TASK_KEYS
    task_samples = sum(parts[key] for key in task_keys)
    seconds = {key: parts[key] / task_samples * connector_s for key in task_keys}
    reads = ", ".join(f"{t:.2f}" for t in cp["times_s"])
    lines = [
        f"## Where the connector's time goes (profile {cp['profile']})",
        "",
        f"async-profiler (event `{cp['engine']}`: samples of each thread's CPU time) in a fresh `local[2]` JVM "
        f"while the connector read profile {cp['profile']} {len(cp['times_s'])} times after "
        f"{_count(len(cp['warm_ups_s']), 'warm-up read')} "
        f"(reads of {reads} s). A sample of a task thread counts for the first of the reader's parts whose code "
        "is on its stack, else for Spark's copy when it is in the stage's generated code, else for the task loop; "
        "the seconds spread the connector's fastest timed round over the task threads' samples, and compare it "
        "with the floor's fastest round (see the best rounds above). Collapsed "
        f"stacks: `{Path(cp['collapsed_stacks']).name}` in the data directory.",
        "",
        "| part | samples | share | seconds of the fastest round | x the floor |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {cpu_profile.LABELS[key]} | {_fmt_int(parts[key])} | {parts[key] / task_samples:.1%} "
              f"| {seconds[key]:.3f} | {seconds[key] / floor_s:.2f} |" for key in task_keys]
    lines += [f"| connector (fastest round) | {_fmt_int(task_samples)} | 100% | {connector_s:.3f} | {connector_s / floor_s:.2f} |",
              f"| floor (fastest round) | | | {floor_s:.3f} | 1.00 |", ""]
    outside = {key: parts[key] for key in parts if key not in task_keys}
    lines += ["Outside the task threads, in samples of all threads: "
              + "; ".join(f"{cpu_profile.LABELS[key].removeprefix('outside the tasks: ')} {n / cp['samples']:.1%}"
                          for key, n in outside.items()) + ".", ""]
    bound = TARGETS["connector_vs_floor"][1]
    if connector_s > bound * floor_s:
        # The strings' UTF8Strings are pointed at as the copy reads them: part of the copy, whatever row is read.
        copy_s = seconds["copy"] + seconds["strings"]
        budget = bound * floor_s - copy_s
        lines += [
            f"Within {bound}x the floor (the target) means {bound * floor_s:.3f} s. Spark's copy into UnsafeRows "
            f"alone (with pointing the strings' UTF8Strings it reads) takes {copy_s / floor_s:.2f}x the floor; it "
            "is not the reader's to avoid, since Spark puts an UnsafeProjection after every row-based DSv2 scan. That leaves "
            f"{budget:.3f} s for the reader and the task loop, which take {connector_s - copy_s:.3f} s now "
            f"({(connector_s - copy_s) / budget:.1f}x that budget).",
            "",
        ] + columnar_bound(p, connector_s, floor_s, bound)
    return lines


def columnar_bound(p: dict, connector_s: float, floor_s: float, bound: float) -> list[str]:
    """What a columnar scan, which gets ColumnarToRow instead of the UnsafeProjection, achieves: Spark's
    vectorized Parquet reader on the rows already decoded (the diagnostics), by fastest rounds."""
    best = {key: min(c["times_s"]) for key, c in p["contenders"].items()}
    if "parquet_top_level" not in best:
        return []
    beyond = ("" if best["parquet_top_level"] <= bound * floor_s else
              f" Within {bound}x the floor asks for more than Spark's own columnar reader delivers for rows "
              "that need no decoding.")
    return [
        "A columnar scan gets ColumnarToRow instead, which builds the same UnsafeRows. Spark's own vectorized "
        "Parquet reader, handed the connector's rows already decoded (uncompressed, in the page cache), shows "
        f"where that path stands: the top-level columns take {best['parquet_top_level']:.3f} s "
        f"({best['parquet_top_level'] / floor_s:.2f}x the floor; the connector selecting the same columns "
        f"{best['connector_top_level']:.3f} s) and all the rows {best['parquet_same_rows']:.3f} s "
        f"({best['parquet_same_rows'] / floor_s:.2f}x the floor; the connector {connector_s:.3f} s)." + beyond,
        "",
    ]


if __name__ == "__main__":
    # Renders RESULTS.md again from a results.json, e.g. after a change to this report's wording.
    import json
    import sys

    results_path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "results.json")
    results = json.loads(results_path.read_text())
    (results_path.parent / "RESULTS.md").write_text(markdown(results))
    print(f"wrote {results_path.parent / 'RESULTS.md'}")
