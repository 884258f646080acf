"""Column pruning: a selection reads fewer columns, and gives exactly the values of the full read."""

from __future__ import annotations

import re

import pytest

from conftest import BEFORE_IMAGE, assert_same_rows, collect_plain, project, read_table

TABLE = "HR.EMPLOYEES"

SELECTIONS = [
    ["EMP_ID", "header__operation"],
    ["header__operation", "EMP_ID"],
    ["LAST_NAME", "PHOTO", "header__change_seq"],
    ["header__changed_columns", "header__present_columns"],
    ["header__change_mask"],
    ["header__timestamp", "header__schema_id", "header__table_version", "header__transaction_last_event"],
    [BEFORE_IMAGE],
    ["SALARY", BEFORE_IMAGE],
    ["EMP_ID", f"{BEFORE_IMAGE}.SALARY", f"{BEFORE_IMAGE}.PHOTO"],
]


@pytest.fixture(scope="module")
def employees(spark, avro_zone):
    return read_table(spark, avro_zone, TABLE)


@pytest.fixture(scope="module")
def all_rows(employees):
    """Every column, collected to Python: projecting these cannot be pruned by Spark."""
    return collect_plain(employees)


@pytest.mark.parametrize("columns", SELECTIONS, ids=lambda cs: "+".join(cs))
def test_selected_columns_equal_the_full_read_projected(employees, all_rows, columns):
    assert_same_rows(collect_plain(employees.select(*columns)), project(all_rows, columns))


def test_count_without_any_column_counts_every_message(employees, avro_zone):
    assert employees.count() == len(avro_zone.messages_for(TABLE))


def test_filter_on_a_header_counts_like_the_generator(employees, avro_zone):
    for operation, n in avro_zone.expected_counts()[TABLE].items():
        assert employees.where(f"header__operation = '{operation}'").count() == n


def scan_columns(df, capsys) -> list[str]:
    """The columns the plan's BatchScan reads, from EXPLAIN's text."""
    df.explain()
    plan = capsys.readouterr().out
    scan = next(line for line in plan.splitlines() if "BatchScan" in line)
    match = re.search(r"BatchScan replicate \S+\[([^\]]*)\]", scan)
    assert match, f"unexpected scan line: {scan}"
    return [re.sub(r"#\d+L?$", "", attribute.strip()) for attribute in match.group(1).split(",")]


def test_explain_shows_the_pruned_read_schema(employees, capsys):
    assert scan_columns(employees.select("EMP_ID", "header__operation", "header__change_mask"), capsys) == \
        ["EMP_ID", "header__operation", "header__change_mask"]


def test_explain_of_the_whole_table_reads_the_before_image(employees, capsys):
    assert scan_columns(employees, capsys) == employees.columns
    assert BEFORE_IMAGE in scan_columns(employees.select("EMP_ID", BEFORE_IMAGE), capsys)
