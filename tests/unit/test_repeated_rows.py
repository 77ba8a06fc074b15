"""value_rules.repeated_rows: the first key two rows share, cleared by a count of key hashes."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.ingest.value_rules import Repeat, repeated_rows

SOURCE = "(select * from rows_of_a_file)"


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("create table rows_of_a_file (n bigint, line varchar, hour varchar)")
    yield con
    con.close()


def _rows(con, rows):
    con.executemany("insert into rows_of_a_file values (?, ?, ?)", rows)


def test_distinct_keys_are_cleared(con):
    _rows(con, [(1, "a", "h1"), (2, "a", "h2"), (3, "b", "h1"), (4, None, "h1")])

    assert repeated_rows(con, SOURCE, "n", ["line", "hour"]) is None


def test_the_first_repeated_key_by_its_first_row(con):
    _rows(con, [(1, "a", "h1"), (2, "b", "h1"), (3, "b", "h1"), (4, "a", "h1"), (5, "c", "h2")])

    found = repeated_rows(con, SOURCE, "n", ["line", "hour"])

    assert found == Repeat(first=1, last=4, key=("a", "h1"), keys=2)


def test_a_null_in_the_key_repeats_like_a_value(con):
    # grouping treats NULLs as equal, and so does the hash count before it
    _rows(con, [(1, "a", None), (2, "a", None), (3, "b", "h1")])

    assert repeated_rows(con, SOURCE, "n", ["line", "hour"]) == Repeat(1, 2, ("a", None), 1)


def test_rows_outside_where_are_not_compared(con):
    _rows(con, [(1, "", "h1"), (2, "", "h1"), (3, "a", "h1")])

    assert repeated_rows(con, SOURCE, "n", ["line", "hour"], "line <> ''") is None
    assert repeated_rows(con, SOURCE, "n", ["line", "hour"]) == Repeat(1, 2, ("", "h1"), 1)
