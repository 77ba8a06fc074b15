"""The amount rule: one comparison on a DOUBLE column refuses exactly what the four tests do."""

from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.ingest import precision, value_rules

LIMITS = (value_rules.MAX_AMOUNT, value_rules.MAX_QUANTITY)
EDGES = [None, math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1e15, -1e15, 1e24, -1e24]
EDGES += [math.nextafter(1e15, 0), math.nextafter(1e24, 0), 5e-324, 1.7976931348623157e308]


def bad(value: float | None, limit: float, double: bool) -> bool:
    con = duckdb.connect()
    con.execute("set disabled_optimizers = 'statistics_propagation'")  # as first_bad runs it
    con.execute("create table amounts (amount double)")
    con.execute("insert into amounts values (?)", [value])
    rule = value_rules.bad_amount("amount", limit, double=double)
    return con.execute(f"select count(*) from amounts where {rule}").fetchone()[0] == 1


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("value", EDGES, ids=repr)
def test_the_double_rule_refuses_what_the_four_tests_refuse(value: float | None, limit: float):
    assert bad(value, limit, double=True) == bad(value, limit, double=False)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e15, -2e15])
def test_the_double_rule_refuses_nan_infinity_and_the_limit(value: float):
    assert bad(value, value_rules.MAX_AMOUNT, double=True)


# no deadline: each example opens four DuckDB connections, and on the shared machine one took
# 274 ms (hypothesis's default deadline is 200 ms): a timing, not a result, failed the suite
@settings(deadline=None)
@given(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)))
def test_any_double_is_judged_alike_by_both_rules(value: float | None):
    for limit in LIMITS:
        assert bad(value, limit, double=True) == bad(value, limit, double=False)


def test_a_nan_hidden_from_footer_statistics_is_refused(tmp_path):
    """A NaN in a Parquet file (whose min/max statistics leave NaN out) is found by first_bad."""
    path = tmp_path / "amounts.parquet"
    con = duckdb.connect()
    con.execute(
        f"copy (select * from (values (1.0::double), ('nan'::double), (2.0)) as t(amount)) "
        f"to '{path}' (format parquet)"
    )
    rule = value_rules.money("amount", double=True)
    found = value_rules.first_bad(
        con, f"read_parquet('{path}', file_row_number = true)", "file_row_number", [rule]
    )
    assert found is not None and found.row == 1 and found.value == "nan"


# the plain id rule the fast one must equal: blank after trim, or NULL
_BLANK_ID = "coalesce(trim(id::varchar), '') = ''"
_SPACES = " \u00a0\u1680\u2000\u2003\u200a\u202f\u205f\u3000\t\n"


@settings(deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(),
            st.text(alphabet=_SPACES),
            st.tuples(st.text(alphabet=_SPACES), st.text(min_size=1)).map("".join),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_the_id_rule_refuses_what_trim_refuses(ids: list[str | None]):
    """Only an id whose first character is printable ASCII skips trim: any id, blank or not,
    with Unicode spaces, control characters or none, is judged as trim judges it."""
    con = duckdb.connect()
    con.execute("create table ids (i integer, id varchar)")
    con.executemany("insert into ids values (?, ?)", list(enumerate(ids)))
    rule = value_rules.required_id("id")
    got = con.execute(f"select {rule.bad}, {_BLANK_ID} from ids order by i").fetchall()
    assert [fast for fast, _ in got] == [plain for _, plain in got]


@pytest.mark.parametrize(
    ("amounts", "first", "marked"),
    [
        ([1.0, 0.12345678901, None], None, 1),
        # NaN is bad, and flagged (it has no 10-place form); the flag counts every kept row
        ([1.0, 0.12345678901, math.nan, None, 2e8], 2, 3),
        ([1.0, None], None, 0),
    ],
)
def test_the_scan_for_bad_values_also_counts_the_flagged_rows(
    amounts: list, first: int | None, marked: int
) -> None:
    """One scan finds the first bad row and counts the rows a cheap condition flags (the values
    that may carry more than 10 decimal places), bad or not."""
    con = duckdb.connect()
    con.execute("create table amounts (n bigint, amount double)")
    con.executemany("insert into amounts values (?, ?)", list(enumerate(amounts)))
    rule = value_rules.money("amount", double=True)
    flagged = precision.may_round("amount", "DOUBLE")
    bad, count = value_rules.scan_values(con, "amounts", "n", [rule], flagged)
    assert (bad.row if bad else None, count) == (first, marked)
    assert value_rules.scan_values(con, "amounts", "n", [], flagged) == (None, marked)
