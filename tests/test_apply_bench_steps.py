"""The apply benchmark's split of each way's time by step (benchmarks/apply_profile.py), on
descriptions as Spark's status store holds them."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import apply_profile as ap  # noqa: E402


def test_delta_merge_jobs_go_to_the_step_delta_names():
    # As Delta 4.0 describes a MERGE's jobs (its status code, then what it does).
    assert ap.step_of("MERGE operation - materialize source") == ap.DELTA_STEPS["materialize source"]
    assert ap.step_of("Delta: MERGE operation - scanning files for matches: Compute snapshot for version: 0") == \
        "MERGE: find the files it touches"
    assert ap.step_of("MERGE operation - writing new files for only inserts") == ap.TARGET_WRITE


def test_hooked_steps_keep_their_name_and_anything_else_is_another_job():
    for step in (*ap.OUR_STEPS.values(), ap.TARGET_WRITE, ap.KEYS_WRITE):
        assert ap.step_of(step) == step
    assert ap.step_of("save at NativeMethodAccessorImpl.java:0") == ap.OTHER_JOBS
    assert ap.step_of("") == ap.OTHER_JOBS


def test_a_steps_median_counts_the_rounds_it_did_not_run_in_as_zero():
    rounds = [{"a": 1.0, ap.DRIVER: 2.0}, {"a": 3.0, "b": 1.0, ap.DRIVER: 4.0}, {"a": 2.0, ap.DRIVER: 3.0}]
    assert ap.median_steps(rounds) == {"a": 2.0, ap.DRIVER: 3.0, "b": 0.0}


def test_the_report_gives_the_later_batch_both_ways_and_nothing_for_results_without_it():
    import report

    later = {"target_rows": 1_286_000, "change_rows": 19_996, "times_s": {"apply_changes": [11.0, 12.5, 10.2],
             "handwritten_merge": [5.5, 6.1, 5.2]}, "median_s": {"apply_changes": 11.0, "handwritten_merge": 5.5},
             "later_batch_vs_handwritten": 0.5}
    (line, blank) = report.later_batch({"later_batch": later})
    assert "the last 19,996 changes" in line and "1,286,000 rows" in line and blank == ""
    assert "`apply_changes` median 11.00 s" in line and "MERGE 5.50 s" in line and ": 0.5 (outside" in line
    assert report.later_batch({}) == []
