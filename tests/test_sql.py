"""SQL: a replicate read declared in SQL, as the README's "SQL" section shows: a temporary view
``USING replicate``, and a catalog table ``USING replicate`` (with a view over it), on a classic
session and over Spark Connect. The test session's catalog is Delta Lake's where Delta serves the
Spark minor, as it is for many users: Spark then reads catalog tables through a V1 relation."""

from __future__ import annotations

import pytest

from conftest import assert_same_rows, collect_plain, expected_rows, replicate_options

TABLE = "HR.EMPLOYEES"


def test_a_temporary_view_using_replicate(session, avro_zone):
    options = replicate_options(avro_zone, TABLE)
    session.sql(f"CREATE OR REPLACE TEMPORARY VIEW employees USING replicate OPTIONS ({options})")
    try:
        assert_same_rows(collect_plain(session.sql("SELECT * FROM employees")), expected_rows(avro_zone, TABLE))
        deletes = session.sql("SELECT count(*) FROM employees WHERE header__operation = 'DELETE'").first()[0]
        assert deletes == sum(m.operation == "DELETE" for m in avro_zone.messages_for(TABLE))
    finally:
        session.sql("DROP VIEW IF EXISTS employees")


@pytest.mark.smoke
def test_a_catalog_table_using_replicate_and_a_view_over_it(session, avro_zone, tmp_path):
    session.sql(f"CREATE DATABASE replicate_sql LOCATION '{tmp_path / 'replicate_sql.db'}'")
    try:
        options = replicate_options(avro_zone, TABLE)
        session.sql(f"CREATE TABLE replicate_sql.employees USING replicate OPTIONS ({options})")
        session.sql("CREATE VIEW replicate_sql.inserts AS "
                    "SELECT * FROM replicate_sql.employees WHERE header__operation = 'INSERT'")
        assert_same_rows(collect_plain(session.sql("SELECT * FROM replicate_sql.employees")),
                         expected_rows(avro_zone, TABLE))
        assert_same_rows(collect_plain(session.sql("SELECT * FROM replicate_sql.inserts")),
                         [row for row in expected_rows(avro_zone, TABLE) if row["header__operation"] == "INSERT"])
        # Only some columns, and filters the connector is given: in a session whose catalog is
        # Delta's, Spark reads catalog tables through the V1 relation, which must prune and filter.
        counts = session.sql("SELECT header__operation, count(*) FROM replicate_sql.employees "
                             "WHERE header__operation IN ('DELETE', 'UPDATE') OR header__operation IS NULL "
                             "GROUP BY header__operation").collect()
        messages = avro_zone.messages_for(TABLE)
        assert dict(counts) == {op: sum(m.operation == op for m in messages) for op in ("DELETE", "UPDATE")}
    finally:
        session.sql("DROP DATABASE replicate_sql CASCADE")
