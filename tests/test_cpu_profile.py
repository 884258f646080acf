"""The benchmark's CPU-profile split (benchmarks/cpu_profile.py) on hand-made collapsed stacks."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import cpu_profile  # noqa: E402

TASK = ("java/lang/Thread.run;org/apache/spark/executor/Executor$TaskRunner.run;org/apache/spark/scheduler/Task.run;"
        "scala/collection/Iterator$$anon$10.hasNext;org/apache/spark/sql/execution/BufferedRowIterator.hasNext")
STAGE = "org/apache/spark/sql/catalyst/expressions/GeneratedClass$GeneratedIteratorForCodegenStage1.processNext"
SCAN = ("scala/collection/Iterator$$anon$9.hasNext;org/apache/spark/InterruptibleIterator.hasNext;"
        "org/apache/spark/sql/execution/datasources/v2/DataSourceRDD$$anon$1.hasNext")
READER = f"{SCAN};io/sparkreplicate/v2/ReplicatePartitionReader.next;io/sparkreplicate/catalyst/ChangeRowReader.next"


def test_each_sample_goes_to_the_first_matching_part(tmp_path):
    stacks = {
        # The mask arrays are built inside the decoder: they count as masks, not decoding.
        f"{TASK};{STAGE};{READER};io/sparkreplicate/catalyst/ChangeRowDecoder.decode;"
        "io/sparkreplicate/catalyst/MaskNames.apply;io/sparkreplicate/catalyst/MaskNames.build": 3,
        f"{TASK};{STAGE};{READER};io/sparkreplicate/files/AvroContainerSource.next;_copy_to_iter_[k]": 5,
        f"{TASK};{STAGE};{READER};io/sparkreplicate/catalyst/ChangeRowDecoder.decode;"
        "io/sparkreplicate/codec/Utf8Validator$.isValid": 7,
        # A string's UTF8String is pointed at (or made) in the copy's call into the reader's row: it counts apart.
        f"{TASK};{STAGE};org/apache/spark/sql/catalyst/expressions/SpecificInternalRow.getUTF8String;"
        "io/sparkreplicate/catalyst/StringSlot.boxed;org/apache/spark/unsafe/types/UTF8String.fromAddress": 31,
        # The same, with the slot and the view inlined into the row's getter.
        f"{TASK};{STAGE};org/apache/spark/sql/catalyst/expressions/SpecificInternalRow.getUTF8String;"
        "org/apache/spark/sql/catalyst/expressions/BaseGenericInternalRow.getUTF8String": 37,
        f"{TASK};{STAGE};org/apache/spark/sql/catalyst/expressions/codegen/UnsafeWriter.write;"
        "org/apache/spark/unsafe/Platform.copyMemory": 11,
        f"{TASK};{STAGE}": 2,
        # Spark's iterators between the stage and the reader are the task loop's, not the copy's.
        f"{TASK};{STAGE};{SCAN}": 23,
        f"{TASK};{STAGE};org/apache/spark/sql/execution/metric/SQLMetric.$plus$eq": 29,
        f"{TASK};org/apache/spark/sql/execution/datasources/v2/DataWritingSparkTask$.run": 1,
        "__clone;thread_native_entry;CompileBroker::compiler_thread_loop;C2Compiler::compile_method": 13,
        "__clone;thread_native_entry;WorkerThread::run;G1EvacuateRegionsTask::work": 17,
        "java/lang/Thread.run;py4j/ClientServerConnection.run": 19,
    }
    collapsed = tmp_path / "stacks.collapsed"
    collapsed.write_text("".join(f"{stack} {count}\n" for stack, count in stacks.items()))

    result = cpu_profile.split(collapsed)

    assert result["samples"] == sum(stacks.values())
    assert result["parts"] == {"masks": 3, "files": 5, "strings": 31 + 37, "decode": 7, "copy": 13, "task": 1 + 23 + 29,
                               "jit": 13, "gc": 17, "other": 19}
    assert set(result["parts"]) == set(cpu_profile.LABELS)
