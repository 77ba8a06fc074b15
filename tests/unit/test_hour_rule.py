"""hour_start_us(t): the hour a timestamp falls in, in microseconds since the epoch, is
date_trunc('hour', t) in UTC for every time, before 1970 too; the overlaps cut their hours with
it, and no model truncates a timestamp to the hour itself."""

from __future__ import annotations

import duckdb
from builders import callers
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.dag.macros import expand_macros

HOUR_US = 3_600_000_000

# microseconds since the epoch: any time from about 1000 to 5000 AD, or one on an hour of it
# and the microseconds either side of that hour
times = st.one_of(
    st.integers(-(3 * 10**16), 10**17),
    st.tuples(st.integers(-(8 * 10**6), 2 * 10**7), st.sampled_from((-1, 0, 1))).map(
        lambda drawn: drawn[0] * HOUR_US + drawn[1]
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(times, min_size=1, max_size=50))
@example([-1, 0, 1, -HOUR_US, HOUR_US - 1, -HOUR_US - 1])
def test_the_hour_start_is_the_hour_truncated_in_utc(micros: list[int]) -> None:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create table t (us bigint)")
    con.executemany("insert into t values (?)", [(value,) for value in micros])
    rule = expand_macros("hour_start_us(make_timestamptz(t.us))", "x")
    wrong = con.execute(
        f"select t.us, {rule}, epoch_us(date_trunc('hour', make_timestamptz(t.us))) from t "
        f"where {rule} is distinct from epoch_us(date_trunc('hour', make_timestamptz(t.us)))"
    ).fetchall()
    assert wrong == []


def test_the_hour_rule_is_written_once() -> None:
    """The models cut time into hours with hour_start_us, never with date_trunc on a timestamp,
    which goes through the time-zone calendar: about 15x the CPU (0.75 against 0.05 CPU s for 10M
    values)."""
    assert callers("date_trunc(") == []
    assert callers("hour_start_us(") == ["attribution.resource_time_overlaps"]
