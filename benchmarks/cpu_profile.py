"""Where the connector's CPU time goes: async-profiler's collapsed stacks, split into parts.

The profile is taken in the driver JVM of a `local[2]` session, which runs the tasks, while the
connector reads the headline profile; every sample is one millisecond of CPU time of one thread.
A sample belongs to the first part whose test matches a frame of its stack, in the order below.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TASK_FRAME = "org/apache/spark/executor/Executor$TaskRunner.run"

# (key, label, test on one frame) for the samples of task threads, first match wins.
TASK_PARTS = [
    ("masks", "expanding `changeMask` and `columnMask` into arrays of column names (MaskNames)",
     lambda f: f.startswith("io/sparkreplicate/catalyst/MaskNames")),
    ("files", "reading the files and cutting their container blocks into messages (io.sparkreplicate.files)",
     lambda f: f.startswith("io/sparkreplicate/files/")),
    ("decode", "decoding envelope, headers and payload into the reader's reused row (the rest of io.sparkreplicate)",
     lambda f: f.startswith("io/sparkreplicate/")),
    ("copy", "Spark's copy of each row into an UnsafeRow: the generated code of the scan's stage and the "
             "UnsafeRowWriter it calls, masks included",
     lambda f: "GeneratedClass$" in f or "UnsafeProjection" in f or "/codegen/Unsafe" in f),
]
TASK_REST = ("task", "the rest of the task threads: Spark's task loop, scan metrics and the noop sink")
OTHER_PARTS = [
    ("jit", "outside the tasks: the JIT compilers", lambda f: "CompileBroker" in f),
    ("gc", "outside the tasks: garbage collection", lambda f: "G1" in f or "GC" in f),
]
OTHER_REST = ("other", "outside the tasks: everything else (driver, scheduler, Python bridge)")
LABELS = {key: label for key, label, *_ in TASK_PARTS + OTHER_PARTS + [TASK_REST, OTHER_REST]}


def classify(frames: list[str]) -> str:
    parts, rest = (TASK_PARTS, TASK_REST) if TASK_FRAME in frames else (OTHER_PARTS, OTHER_REST)
    for key, _, test in parts:
        if any(test(f) for f in frames):
            return key
    return rest[0]


def split(collapsed: Path) -> dict:
    """Samples per part of one collapsed-stack file (`frame;frame;... count` per line)."""
    samples = Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            samples[classify(stack.split(";"))] += int(count)
    total = sum(samples.values())
    return {"samples": total, "parts": {key: samples.get(key, 0) for key in LABELS}}
