"""Pool candidates, property-tested: an attempt is a candidate of every window of its pool it
overlaps, once, whatever the windows' and attempts' lengths, alignment to the hour, or an
attempt still running (allocation.pool_driver_weights finds them through the hours they meet in)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from builders import input_tables, model
from hypothesis import given, settings
from hypothesis import strategies as st

START = datetime(2026, 10, 1, tzinfo=UTC)
MODEL = model("allocation.pool_driver_weights")
INPUTS = (
    "create table normalized.cost_line_facts (line_id varchar, charge_period_start timestamptz, "
    "charge_period_end timestamptz, billing_period_start timestamptz, "
    "billing_period_end timestamptz)",
    "create table attribution.line_attributions (line_id varchar, attempt_id varchar, "
    "billed_cost decimal(38, 10), effective_cost decimal(38, 10), list_cost decimal(38, 10), "
    "net_cost decimal(38, 10))",
    "create table staging.attempt_resources (attempt_id varchar, started_at timestamptz, "
    "ended_at timestamptz, vcpu_count double, memory_gib double)",
    "create table staging.attempts (attempt_id varchar, experiment_id varchar, "
    "started_at timestamptz, ended_at timestamptz, gpu_count bigint)",
    "create table allocation.pooled_lines (pool_order integer, pool_name varchar, "
    "driver varchar, basis varchar, window_start timestamptz, window_end timestamptz)",
    "create table allocation.pool_eligible_attempts (pool_order integer, attempt_id varchar)",
)

# minutes from START; some on the hour, some a second past it
moments = st.one_of(
    st.integers(-48 * 60, 96 * 60).map(lambda minutes: START + timedelta(minutes=minutes)),
    st.integers(-48, 96).map(lambda hours: START + timedelta(hours=hours)),
    st.integers(-48, 96).map(lambda hours: START + timedelta(hours=hours, seconds=1)),
)
lengths = st.one_of(
    st.integers(1, 90).map(lambda minutes: timedelta(minutes=minutes)),
    st.integers(1, 80).map(lambda hours: timedelta(hours=hours)),
    st.just(timedelta(days=31)),
)
windows = st.lists(st.tuples(st.integers(0, 1), moments, lengths), max_size=8)
attempts = st.lists(
    st.tuples(
        moments,
        st.one_of(st.none(), st.just(timedelta(0)), lengths),  # None: still running
        st.frozensets(st.integers(0, 1)),  # the pools it is eligible for
    ),
    max_size=8,
)


def _us(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


@settings(max_examples=150, deadline=None)
@given(windows, attempts)
def test_every_overlapping_window_and_attempt_are_candidates_once(
    drawn_windows: list, drawn_attempts: list
) -> None:
    con = input_tables(INPUTS)
    spans = {(pool, begin, begin + length) for pool, begin, length in drawn_windows}
    for pool, window_start, window_end in sorted(spans):
        con.execute(
            "insert into allocation.pooled_lines values (?, 'pool', 'even', 'billed_cost', ?, ?)",
            [pool, window_start, window_end],
        )
    for number, (begin, length, pools) in enumerate(drawn_attempts):
        end = None if length is None else begin + length
        con.execute(
            "insert into staging.attempts values (?, 'e', ?, ?, 1)", [f"a{number}", begin, end]
        )
        for pool in sorted(pools):
            con.execute(
                "insert into allocation.pool_eligible_attempts values (?, ?)", [pool, f"a{number}"]
            )

    found = con.execute(
        "select pool_order, epoch_us(window_start), epoch_us(window_end), attempt_id "
        f"from ({MODEL.sql})"
    ).fetchall()

    expected = {
        (pool, _us(window_start), _us(window_end), f"a{number}")
        for pool, window_start, window_end in spans
        for number, (begin, length, pools) in enumerate(drawn_attempts)
        if pool in pools
        and begin < window_end
        and (window_end if length is None else begin + length) > window_start
    }
    assert sorted(found) == sorted(expected)
    con.close()
