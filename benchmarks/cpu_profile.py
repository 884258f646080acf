"""Where the connector's CPU time goes: async-profiler's collapsed stacks, split into parts.

The profile is taken in the driver JVM of a `local[2]` session, which runs the tasks, while the
connector reads the headline profile; every sample is an equal slice of one thread's CPU time.
A task thread's sample belongs to the reader's first part with a frame on its stack, else to
Spark's copy when it is in the scan stage's generated code, else to Spark's task loop.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TASK_FRAME = "org/apache/spark/executor/Executor$TaskRunner.run"

# The reader's parts of a task thread's samples: first match on any frame wins.
READER_PARTS = [
    ("masks", "expanding `changeMask` and `columnMask` into arrays of column names (MaskNames)",
     lambda f: f.startswith("io/sparkreplicate/catalyst/MaskNames")),
    ("files", "reading the files and cutting their container blocks into messages (io.sparkreplicate.files)",
     lambda f: f.startswith("io/sparkreplicate/files/")),
    # The reader's row holds where each string lies; Spark's copy reads it through the slot's one
    # UTF8String, pointed at the bytes then (a new one per value on a Spark without the fields it sets).
    # Since StringView is Java the JIT inlines the slot and the view into the row's getter, whose
    # frame alone the profile then shows.
    ("strings", "reading each string of the reader's row as Spark's copy does: the row's getter, the slot, "
                "and pointing the slot's UTF8String at its bytes (StringSlot, StringView)",
     lambda f: f.startswith("io/sparkreplicate/catalyst/StringSlot.boxed")
     or f == "org/apache/spark/sql/catalyst/expressions/SpecificInternalRow.getUTF8String"),
    ("decode", "decoding envelope, headers and payload into the reader's reused row (the rest of io.sparkreplicate)",
     lambda f: f.startswith("io/sparkreplicate/")),
]
COPY = ("copy", "Spark's copy of each row into an UnsafeRow: the generated code of the scan's stage, the "
                "UnsafeRowWriter it calls and its reads of the reader's row, masks included")
TASK_REST = ("task", "Spark's task loop: the scan's row iterators and metrics, and the noop sink")
# Frames of Spark's own iteration that the stage's generated code calls to fetch the next row.
SCAN_ITERATION = ("org/apache/spark/sql/execution/datasources/v2/", "org/apache/spark/InterruptibleIterator",
                  "org/apache/spark/sql/execution/metric/", "scala/collection/Iterator")
OTHER_PARTS = [
    ("jit", "outside the tasks: the JIT compilers", lambda f: "CompileBroker" in f),
    ("gc", "outside the tasks: garbage collection", lambda f: "G1" in f or "GC" in f),
]
OTHER_REST = ("other", "outside the tasks: everything else (driver, scheduler, Python bridge)")
TASK_KEYS = [key for key, *_ in READER_PARTS] + [COPY[0], TASK_REST[0]]
LABELS = {key: label for key, label, *_ in READER_PARTS + [COPY, TASK_REST] + OTHER_PARTS + [OTHER_REST]}


def classify(frames: list[str]) -> str:
    if TASK_FRAME not in frames:
        return next((key for key, _, test in OTHER_PARTS if any(map(test, frames))), OTHER_REST[0])
    for key, _, test in READER_PARTS:
        if any(map(test, frames)):
            return key
    # The copy is the stage's generated code and what it calls, except the iterators it pulls
    # rows through (the same iterator classes also run the stage itself, above it in the stack).
    stage = [i for i, f in enumerate(frames) if "GeneratedClass$" in f]
    if stage and not any(f.startswith(SCAN_ITERATION) for f in frames[stage[-1] + 1:]):
        return COPY[0]
    return TASK_REST[0]


def split(collapsed: Path) -> dict:
    """Samples per part of one collapsed-stack file (`frame;frame;... count` per line)."""
    samples = Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            samples[classify(stack.split(";"))] += int(count)
    total = sum(samples.values())
    return {"samples": total, "parts": {key: samples.get(key, 0) for key in LABELS}}
