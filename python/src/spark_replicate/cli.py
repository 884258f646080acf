"""``spark-replicate``: generate a realistic landing zone, run the demo on one, inspect one, export one as
Parquet, or apply one to Delta Lake tables."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from spark_replicate import generate

DEMO_TABLE = "HR.EMPLOYEES"


def _add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=5000, help="data messages in all (default 5000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--framing", choices=generate.FRAMINGS, default="avro")
    parser.add_argument("--files-per-topic", type=int, default=2, help="Kafka partitions per topic")
    parser.add_argument("--codec", default="null", help="Avro container codec: null or deflate")
    parser.add_argument("--value-schema", choices=generate.VALUE_SCHEMAS, default="record",
                        help="container records: Kafka-style record with a `value` field, or bare bytes")
    parser.add_argument("--md-in-data-topics", action="store_true",
                        help="also write the metadata messages into the data topics")
    parser.add_argument("--logical-types", action="store_true",
                        help="send values as Replicate does with its logical data types on (Avro date, "
                             "time-millis, timestamp-micros and decimal)")
    parser.add_argument("--kafka", metavar="BOOTSTRAP",
                        help="also publish every topic to this Kafka cluster (new topics, same partitions, "
                             "offsets and keys as landed; needs spark-replicate[kafka])")
    parser.add_argument("--kafka-topic-prefix", default="", help="prefix of the Kafka topics' names")


def _generate(out_dir: Path, args: argparse.Namespace, keep_messages: bool = False) -> generate.LandingZone:
    return generate.generate_landing_zone(
        out_dir, messages=args.messages, seed=args.seed, framing=args.framing,
        files_per_topic=args.files_per_topic, codec=args.codec, value_schema=args.value_schema,
        md_in_data_topics=args.md_in_data_topics, keep_messages=keep_messages, overwrite=True,
        logical_types=args.logical_types, progress=_progress("generate"), kafka=args.kafka,
        kafka_topic_prefix=args.kafka_topic_prefix)


def _run_generate(args: argparse.Namespace) -> int:
    zone = _generate(Path(args.out_dir), args)
    print(json.dumps({"root": str(zone.root), "schema_topic": str(zone.schema_topic),
                      "topics": {name: str(path) for name, path in zone.topics.items()},
                      "counts": zone.expected_counts()}, indent=2))
    return 0


def _session(command: str, master: str, conf: dict[str, str] | None = None, delta: bool = False,
             kafka: bool = False):
    # Imported here so that `generate` works without starting (or even importing) Spark.
    from pyspark.sql import SparkSession

    import spark_replicate

    builder = spark_replicate.configure_spark(SparkSession.builder.master(master).appName(f"spark-replicate {command}"),
                                              kafka=kafka, delta=delta)
    # Spark's stage progress bar redraws one line with carriage returns: shown on a terminal only.
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": str(sys.stderr.isatty()).lower()}
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _progress(command: str):
    """Progress lines go to stderr, so that stdout holds only the command's result."""
    return lambda line: print(f"spark-replicate {command}: {line}", file=sys.stderr, flush=True)


def _run_demo(args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    import spark_replicate

    zone = _generate(Path(args.dir), args)
    topic = zone.topics[next(t.topic for t in zone.tables if t.name == args.table)]
    print(f"Landing zone: {zone.root}  (schema topic {zone.schema_topic.name}, data topics "
          f"{', '.join(sorted(zone.topics))})")
    spark = _session("demo", args.master, {"spark.sql.session.timeZone": "UTC"}, delta=True)
    try:
        changes = spark_replicate.read(spark, str(topic), schema_topic=str(zone.schema_topic), table=args.table)
        key = [c for c in changes.columns if not c.startswith("header__")][:3]
        print(f"\n{args.table}: change rows, oldest CDC changes first")
        (changes.where(F.col("header__operation") != "REFRESH")
         .orderBy("header__change_seq")
         .select(*key, "header__operation", "header__change_seq", "header__timestamp",
                 "header__changed_columns")
         .show(8, truncate=48))
        counts = {r["header__operation"]: r["count"] for r in changes.groupBy("header__operation").count().collect()}
        print("Rows per operation:")
        for op in ("REFRESH", "INSERT", "UPDATE", "DELETE"):
            print(f"  {op:<8}{counts.get(op, 0):>8}")
        expected = zone.expected_counts()[args.table]
        ok = all(counts.get(op, 0) == n for op, n in expected.items()) and sum(counts.values()) == sum(expected.values())
        print(f"Matches the generated messages exactly: {'yes' if ok else 'NO'} ({sum(counts.values())} rows)")
        return 0 if ok and _show_current_state(spark, zone, changes, args.table) else 1
    finally:
        spark.stop()


def _show_current_state(spark, zone: generate.LandingZone, changes, table: str) -> bool:
    """Applies the changes to a Delta table inside the landing zone (so the next demo's
    generation removes it) and shows the table as it stands, the source table's twin."""
    import spark_replicate

    target = str(zone.root.resolve() / "_current" / table)
    result = spark_replicate.apply_changes(changes, target)
    state = spark.read.format("delta").load(target)
    print(f"\n{table} as it stands, applied to the Delta table {target}: {result.inserted} rows "
          f"({result.ignored} change rows ignored as stale or duplicate)")
    state.orderBy(*state.columns[:1]).show(8, truncate=24)
    ok = state.count() == len(zone.final_state(table))
    print(f"As many rows as the simulated source table holds: {'yes' if ok else 'NO'} ({len(zone.final_state(table))})")
    return ok


def _run_export(args: argparse.Namespace) -> int:
    from spark_replicate.export import ExportError, export

    stop = _stop_on_signals() if args.continuous else threading.Event()
    spark = _session("export", args.master)
    try:
        export(spark, args.input, args.output, schema_topic=args.schema_topic, mode=args.mode,
               continuous=args.continuous, interval_seconds=args.interval, progress=_progress("export"),
               should_stop=stop.is_set)
        return 0
    except ExportError as e:
        print(f"spark-replicate export: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()


def _stop_on_signals() -> threading.Event:
    """Set on SIGINT (Ctrl-C) or SIGTERM: a continuous command stops each table's query between batches, exits 0."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _run_apply(args: argparse.Namespace) -> int:
    from spark_replicate.export import ExportError
    from spark_replicate.session import _is_kafka
    from spark_replicate.topic import ReplicateError, apply_continuously, apply_topic

    reading = dict(args.option, **({} if args.mode is None else {"mode": args.mode}))
    kafka = _is_kafka(reading)
    if bool(args.input) == kafka:
        print("spark-replicate apply: give the landed data topics as INPUT, or read Kafka with --option "
              "kafka.bootstrap.servers=... and --option subscribe=... (and no INPUT)", file=sys.stderr)
        return 2
    stop = _stop_on_signals() if args.continuous else None
    target, source = os.path.abspath(args.target), args.input or None
    spark = _session("apply", args.master, delta=True, kafka=kafka)
    try:
        if args.continuous:
            results = apply_continuously(spark, source, target, args.schema_topic, args.scd_type,
                                         args.transactional, args.interval, reading, progress=_progress("apply"),
                                         should_stop=stop.is_set)
        else:
            results = apply_topic(spark, source, target, schema_topic=args.schema_topic, scd_type=args.scd_type,
                                  transactional=args.transactional, **reading)
    except (ReplicateError, ExportError) as e:
        print(f"spark-replicate apply: {e}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    for table, result in sorted(results.items()):
        held = f", {result.held} held (transaction incomplete)" if args.transactional else ""
        print(f"{table}: batch {result.batch}: {result.inserted} inserted, {result.updated} updated, "
              f"{result.deleted} deleted, {result.ignored} change rows ignored (stale or duplicate){held}")
    return 0


def _run_inspect(args: argparse.Namespace) -> int:
    from spark_replicate.inspection import inspect, render

    spark = _session("inspect", args.master)
    try:
        report = inspect(spark, args.input, schema_topic=args.schema_topic, log=_progress("inspect"),
                         **dict(args.option))
    finally:
        spark.stop()
    print(json.dumps(report, indent=2) if args.json else render(report), end="\n" if args.json else "")
    return 0


def _add_landing_arguments(parser: argparse.ArgumentParser, kafka: bool = False) -> None:
    """The input of a command that reads every table of landed topics (with ``kafka``, or of Kafka
    topics, given by reader options), its mode and master."""
    parser.add_argument("input", nargs="*" if kafka else "+",
                        help="landed data topic(s): paths or globs" + ("; none to read Kafka" if kafka else ""))
    over_kafka = " (over Kafka, its Kafka topic)" if kafka else ""
    parser.add_argument("--schema-topic", help=f"landed schema topic{over_kafka}; by default the metadata messages "
                                               "of the input")
    if kafka:
        _add_option_argument(parser, "a reader option, repeatable: over Kafka kafka.bootstrap.servers=HOST:PORT "
                                     "and subscribe=TOPICS (or subscribePattern, assign), then any of Spark's "
                                     "Kafka options")
    parser.add_argument("--mode", type=str.upper, choices=("FAILFAST", "PERMISSIVE", "DROPMALFORMED"),
                        help="what a malformed message does (the reader's `mode`; default FAILFAST)")
    parser.add_argument("--master", default="local[*]")


def _add_continuous_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--continuous", action="store_true", help=f"keep running: {what}, until SIGINT or SIGTERM")
    parser.add_argument("--interval", type=float, default=60, metavar="SECONDS",
                        help="with --continuous, seconds between triggers (default 60)")


def _add_option_argument(parser: argparse.ArgumentParser, meaning: str) -> None:
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", type=_reader_option,
                        help=meaning)


def _reader_option(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-replicate", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    gen = commands.add_parser("generate", help="write a realistic Replicate landing zone")
    gen.add_argument("out_dir")
    _add_generate_arguments(gen)
    gen.set_defaults(run=_run_generate)

    demo = commands.add_parser("demo", help="generate a landing zone, read one table, show it")
    demo.add_argument("--dir", default="demo-landing", help="where to write the landing zone")
    demo.add_argument("--table", default=DEMO_TABLE)
    demo.add_argument("--master", default="local[2]")
    _add_generate_arguments(demo)
    demo.set_defaults(run=_run_demo)

    export = commands.add_parser(
        "export", help="write every table as Parquet under DIR/<SCHEMA.TABLE>/; reruns export only new input files",
        description="Writes each table of the landed topic(s) as Parquet under DIR/<SCHEMA.TABLE>/, one streaming "
                    "query per table whose checkpoint is kept under DIR/_spark_replicate/checkpoints/: a rerun "
                    "exports only the input files landed since, and redoes exactly what an interrupted run left "
                    "undone. A table that gains columns is restarted with them.")
    _add_landing_arguments(export)
    export.add_argument("--output", required=True, metavar="DIR")
    _add_continuous_arguments(export, "export new files every --interval seconds")
    export.set_defaults(run=_run_export)

    apply = commands.add_parser(
        "apply", help="apply every table's changes to its own Delta Lake table under DIR/<SCHEMA.TABLE>",
        description="MERGEs the changes of each table of the landed topic(s) into the Delta table DIR/<SCHEMA.TABLE> "
                    "(created when absent), by the rules of the README's \"Applying changes\". A rerun finishes an "
                    "interrupted run and applies only the changes not applied yet; it prints one line per table.")
    _add_landing_arguments(apply, kafka=True)
    apply.add_argument("--target", required=True, metavar="DIR")
    apply.add_argument("--scd-type", type=int, choices=(1, 2), default=1,
                       help="1: the current state (default); 2: the history, with __START_AT and __END_AT")
    apply.add_argument("--transactional", action="store_true",
                       help="apply whole transactions only; hold the rows of incomplete ones (and every change after "
                            "them) under DIR/_spark_replicate/held for a later run")
    _add_continuous_arguments(apply, "apply each table as a stream of the landed files (or Kafka topics), a "
                                     "batch every --interval seconds (checkpoints under "
                                     "DIR/_spark_replicate/checkpoints); with "
                                     "--transactional, a cycle every --interval seconds that holds the new files' "
                                     "rows, then applies the whole transactions held")
    apply.set_defaults(run=_run_apply)

    inspect = commands.add_parser(
        "inspect", help="what a landing zone holds: tables, versions, changes, malformed messages, files",
        description="Reads the landed topic(s) once and reports the files and bytes per path, each table's "
                    "versions and what changed between them, its rows per operation, its first and last change "
                    "timestamp and sequence, messages with mask bits past the last column, and the malformed "
                    "messages by reason (read in PERMISSIVE mode). Progress goes to stderr.")
    inspect.add_argument("input", nargs="+", help="landed data topic(s): paths or globs")
    inspect.add_argument("--schema-topic", help="landed schema topic; by default the metadata messages of the input")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON (keys documented in the README)")
    _add_option_argument(inspect, "a reader option, e.g. framing=length-prefixed or table=HR.EMPLOYEES (repeatable)")
    inspect.add_argument("--master", default="local[*]")
    inspect.set_defaults(run=_run_inspect)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
