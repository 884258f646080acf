"""Bad input and lost-nothing accounting (README "Decoding and accounting").

Every case of ``data/bad_inputs/cases.json`` is read through the reader under FAILFAST,
PERMISSIVE and DROPMALFORMED. The cases, their input files and their expected outcomes are
written by ``data/bad_inputs/make_cases.py`` from what it wrote, never from the reader: each file
mixes good messages (of the table and of another one) with one bad message, or carries one
file-level fault. A case expects either

* an error: its ``REPLICATE_*`` identifier and fragments of its message (the file, the position:
  ``frame at byte N``, ``container block at byte N, record i``, ``whole-file message``), raised
  by the read (or, for planning errors, by ``load()`` itself); or
* rows: the good rows exactly; in PERMISSIVE one more row per malformed message, all of whose
  columns are null but ``_corrupt_record`` (its exact raw bytes, the reason, a message naming the
  file and position); and the scan's exact counts, which must also balance:
  ``messagesRead = rowsReturned + metadataMessages + filteredOut + dropped`` and
  ``malformed = sum of malformed_<REASON>``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from datetime import datetime

import pytest

import spark_replicate
from conftest import DATA_DIR, assert_same_rows, collect_plain, raises_replicate, read_metrics, smoke_cases

CORPUS = DATA_DIR / "bad_inputs"
CATALOGUE = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))
MODES = ("FAILFAST", "PERMISSIVE", "DROPMALFORMED")
CORRUPT = "_corrupt_record"


def cases_with(key: str) -> list:
    return [pytest.param(case, id=case["id"]) for case in CATALOGUE["cases"] if key in case]


def read_case(spark, case: dict, mode: str, table: str):
    reader = (spark.read.format("replicate").option("mode", mode).option("table", table)
              .option("framing", case["framing"])
              .option("schemaTopic", ",".join(str(CORPUS / path) for path in case["schema_topic"])))
    for name, value in case["options"].items():
        reader = reader.option(name, value)
    return reader.load([str(CORPUS / path) for path in case["files"]])


# -- checking one read ------------------------------------------------------------------------


def as_stored(value):
    """A collected value as cases.json writes it: bytes as hex, timestamps in ISO format."""
    if isinstance(value, dict):
        return {name: as_stored(v) for name, v in value.items()}
    if isinstance(value, list):
        return [as_stored(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def digest(raw: bytes | None) -> dict | None:
    return None if raw is None else {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def assert_corrupt_records(rows: list[dict], expected: list[dict]) -> None:
    """Each corrupt row: every other column null; the record matching exactly one expected one."""
    unmatched = list(expected)
    for row in rows:
        decoded = {name: value for name, value in row.items() if name != CORRUPT}
        assert all(value is None for value in decoded.values()), f"a corrupt row has decoded values: {decoded}"
        record = row[CORRUPT]
        actual = {"reason": record["reason"], "bytes": digest(record["bytes"]), "message": record["message"]}
        match = next((e for e in unmatched if e["reason"] == actual["reason"] and e["bytes"] == actual["bytes"]
                      and all(fragment in actual["message"] for fragment in e["contains"])), None)
        assert match is not None, f"unexpected corrupt record {actual}; expected one of {unmatched}"
        unmatched.remove(match)
    assert not unmatched, f"corrupt records missing: {unmatched}"


def assert_outcome(spark, case: dict, mode: str, table: str, expected: dict) -> None:
    if "error" in expected:
        error = expected["error"]
        if error["stage"] == "planning":
            with raises_replicate(error["id"], *error["contains"]):
                read_case(spark, case, mode, table)
        else:
            df = read_case(spark, case, mode, table)
            with raises_replicate(error["id"], *error["contains"]):
                df.collect()
        return

    df = read_case(spark, case, mode, table)
    assert (CORRUPT in df.columns) == (mode == "PERMISSIVE"), df.columns
    rows = collect_plain(df)
    metrics = read_metrics(spark)
    assert {name: n for name, n in metrics.items() if n} == {name: n for name, n in expected["counts"].items() if n}

    corrupt = [row for row in rows if row.get(CORRUPT) is not None]
    good = [as_stored({name: value for name, value in row.items() if name != CORRUPT})
            for row in rows if row.get(CORRUPT) is None]
    columns = [name for name in df.columns if name != CORRUPT]
    expected_rows = [CATALOGUE["rows"][key] for key in expected["rows"]]
    for expected_row in expected_rows:
        assert set(expected_row) == set(columns), f"output columns {columns} differ from {list(expected_row)}"
    assert_same_rows(good, [{name: row[name] for name in columns} for row in expected_rows])
    assert_corrupt_records(corrupt, expected.get("corrupt", []))


# -- the cases ------------------------------------------------------------------------------


# On the other minors, in each mode: a bad message in each framing (a payload error, a value that
# fails to decode, an unknown schema id), a damaged container file and a planning error. What the
# other cases vary is the connector's own decoding, the same on every minor.
SMOKE_CASES = {"bad_magic", "invalid_utf8_in_column", "unknown_schema_id", "container_truncated_mid_block",
               "conflicting_metadata"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", smoke_cases(cases_with("expected"), SMOKE_CASES))
def test_each_bad_input_reads_as_its_case_says(spark, case, mode):
    assert_outcome(spark, case, mode, CATALOGUE["table"], case["expected"][mode])


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
@pytest.mark.parametrize("case", cases_with("expected_reading_other_table"))
def test_reading_the_other_table_keeps_malformed_messages_whose_table_cannot_be_told(spark, case, mode):
    """A message whose table the envelope does not tell (bad magic, unknown schema id, a broken
    envelope) could be the selected table's: it is kept or counted, never filtered away; a bad
    payload under another table's schema id is that table's, and filtered out unread."""
    assert_outcome(spark, case, mode, CATALOGUE["other_table"], case["expected_reading_other_table"][mode])


# -- the corpus itself ------------------------------------------------------------------------


def load_make_cases():
    spec = importlib.util.spec_from_file_location("make_cases", CORPUS / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def corpus_files(root) -> dict:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts}


def test_the_committed_corpus_is_exactly_what_make_cases_writes(tmp_path):
    load_make_cases().build(tmp_path)
    committed, regenerated = corpus_files(CORPUS), corpus_files(tmp_path)
    assert sorted(committed) == sorted(regenerated)
    stale = [name for name in committed if committed[name] != regenerated[name]]
    assert not stale, f"regenerate with tests/data/bad_inputs/make_cases.py; stale: {stale}"


def test_the_corpus_has_a_case_for_every_reason_the_reader_counts(spark):
    """Every ``malformed_<REASON>`` the reader reports, and the file and planning errors, occur."""
    case = CATALOGUE["cases"][0]
    read_case(spark, case, "DROPMALFORMED", CATALOGUE["table"]).collect()
    counted = {name.removeprefix("malformed_") for name in spark_replicate.last_read_metrics(spark)
               if name.startswith("malformed_")}
    outcomes = [outcome for case in CATALOGUE["cases"]
                for section in ("expected", "expected_reading_other_table") for outcome in case.get(section, {}).values()]
    covered = {outcome["error"]["id"] for outcome in outcomes if "error" in outcome}
    covered |= {record["reason"] for outcome in outcomes for record in outcome.get("corrupt", [])}
    file_and_planning = {"REPLICATE_CORRUPT_FILE", "REPLICATE_UNKNOWN_FRAMING", "REPLICATE_CONFLICTING_METADATA"}
    assert len(counted) >= 10
    assert counted | file_and_planning <= covered
    assert all(set(case["expected"]) == set(MODES) for case in CATALOGUE["cases"])
