"""Resource+time overlaps, property-tested: each charge window lists every attempt that held its
resource inside it, with the exact microseconds held, its GPUs and its rank, whatever the
intervals' nesting, ties, hour alignment, repeats or an interval still running. The model cuts
both sides at hour boundaries and sums per window and attempt (attribution.resource_time_overlaps);
the expected overlaps are worked out in Python from whole intervals."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from builders import input_tables, model
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.dag.partitions import pass_sql

START = datetime(2026, 10, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
MODEL = model("attribution.resource_time_overlaps")
INPUTS = (
    "create table normalized.cost_line_facts (resource_id varchar, "
    "charge_period_start timestamptz, charge_period_end timestamptz)",
    "create table staging.attempts (attempt_id varchar, experiment_id varchar, "
    "started_at timestamptz, ended_at timestamptz, gpu_count bigint)",
    "create table staging.attempt_resources (attempt_id varchar, resource_id varchar, "
    "started_at timestamptz, ended_at timestamptz, gpu_count bigint)",
    "create table config.attribution as select true as resource_time",
)
RESOURCES = ("i-a", "i-b")

# minutes from START: most on the hour or a quarter of it, so intervals touch at hour bounds
moments = st.one_of(
    st.integers(0, 12).map(lambda hours: START + hours * HOUR),
    st.integers(0, 48).map(lambda quarters: START + timedelta(minutes=15 * quarters)),
    st.integers(0, 12 * 60).map(lambda minutes: START + timedelta(minutes=minutes, seconds=7)),
)
lengths = st.one_of(
    st.integers(1, 4).map(lambda hours: hours * HOUR),
    st.integers(1, 180).map(lambda minutes: timedelta(minutes=minutes)),
    st.just(timedelta(0)),
)
# (resource, start, length): an hour window on the hour, or any window
windows = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(RESOURCES), st.integers(0, 12), st.just(HOUR)).map(
            lambda drawn: (drawn[0], START + drawn[1] * HOUR, drawn[2])
        ),
        st.tuples(st.sampled_from(RESOURCES), moments, lengths),
    ),
    min_size=1,
    max_size=10,
)
# (attempt, resource, start, length or None while running, gpus)
intervals = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from(RESOURCES),
        moments,
        st.one_of(st.none(), lengths),
        st.one_of(st.none(), st.integers(0, 8)),
    ),
    max_size=8,
)


def _us(span: timedelta) -> int:
    return span // timedelta(microseconds=1)


def _hours(begin: datetime, end: datetime) -> set[datetime]:
    """The hours a span lists: from its start's hour up to, not including, its end."""
    hour, listed = begin.replace(minute=0, second=0, microsecond=0), set()
    while hour < end:
        listed.add(hour)
        hour += HOUR
    return listed


def expected_overlaps(drawn_windows: list, drawn_intervals: list) -> dict:
    """window -> (total microseconds, [(attempt, experiment, us, gpus, rank)]), in Python: rank 1
    is the holder that takes a placed line's rounding remainder (the largest overlap, then the
    smallest attempt id), every other is 2; the list by rank, then attempt."""
    horizon = max(start + length for _, start, length in drawn_windows)
    held = [
        (f"a{attempt}", resource, begin, horizon if length is None else begin + length, gpus)
        for attempt, resource, begin, length, gpus in drawn_intervals
    ]
    held_resources = {row[1] for row in held}
    result = {}
    for resource, start, length in sorted(set(drawn_windows)):
        end = start + length
        if end <= start or resource not in held_resources:
            continue
        overlap: dict[str, int] = defaultdict(int)
        gpus: dict[str, int | None] = {}
        for attempt, held_resource, begin, until, count in held:
            if held_resource != resource or until <= begin:
                continue
            if not _hours(begin, until) & _hours(start, end):
                continue  # the interval and the window never meet in an hour
            overlap[attempt] += max(0, _us(min(end, until) - max(start, begin)))
            known = [value for value in (gpus.get(attempt), count) if value is not None]
            gpus[attempt] = max(known) if known else None
        holders = sorted(
            ((attempt, us) for attempt, us in overlap.items() if us > 0),
            key=lambda holder: (-holder[1], holder[0]),
        )
        if holders:
            result[resource, start, end] = (
                sum(us for _, us in holders),
                sorted(
                    (
                        (attempt, "e", us, gpus[attempt], 1 if place == 0 else 2)
                        for place, (attempt, us) in enumerate(holders)
                    ),
                    key=lambda holder: (holder[4], holder[0]),
                ),
            )
    return result


@settings(max_examples=300, deadline=None, database=None)
@given(windows, intervals)
# nested: a long interval holds hours after a short one it contains ends
@example(
    [("i-a", START + 3 * HOUR, HOUR), ("i-a", START + 5 * HOUR, HOUR)],
    [(0, "i-a", START, 8 * HOUR, 1), (1, "i-a", START + HOUR, HOUR, 2)],
)
# a long interval around two short ones: no hour of theirs is one interval's alone
@example(
    [("i-a", START + step * HOUR, HOUR) for step in (2, 5, 7)],
    [(0, "i-a", START, 10 * HOUR, 1), (1, "i-a", START + 5 * HOUR, HOUR, 2),
     (2, "i-a", START + 7 * HOUR, timedelta(minutes=30), 3)],
)  # fmt: skip
# two intervals starting together, and one repeated row of telemetry
@example(
    [("i-a", START + HOUR, HOUR), ("i-b", START, HOUR)],
    [(0, "i-a", START, 2 * HOUR, 1), (1, "i-a", START, 3 * HOUR, 1),
     (2, "i-b", START, HOUR, 4), (2, "i-b", START, HOUR, 4)],
)  # fmt: skip
# one attempt after another, touching on the hour and inside it
@example(
    [("i-a", START + step * HOUR, HOUR) for step in range(4)],
    [(0, "i-a", START, 2 * HOUR, 1), (1, "i-a", START + 2 * HOUR, timedelta(minutes=90), 1),
     (2, "i-a", START + timedelta(minutes=210), None, 1)],
)  # fmt: skip
# lines of two hours among intervals ending where they start, crossing their first quarter hour,
# starting where they end, and one before them beside an interval that then holds an hour alone
@example(
    [("i-a", START + 2 * HOUR, HOUR), ("i-b", START + 3 * HOUR, HOUR)],
    [(0, "i-a", START, timedelta(minutes=135), 1), (1, "i-b", START, 2 * HOUR, 1),
     (2, "i-b", START + 4 * HOUR, None, 1), (3, "i-a", START + timedelta(minutes=90),
     timedelta(minutes=20), 1), (4, "i-a", START + timedelta(minutes=115), HOUR, 2)],
)  # fmt: skip
# an interval ending before the first line starts, and one starting after the last line ends,
# in those lines' hour: they hold none of the window's time but list its hour, so their GPUs
# count for their attempt there
@example(
    [("i-a", START + timedelta(minutes=30), timedelta(minutes=30))],
    [(0, "i-a", START, timedelta(minutes=20), 8), (0, "i-a", START + timedelta(minutes=25),
     2 * HOUR, 1), (1, "i-a", START + timedelta(minutes=70), HOUR, 2)],
)  # fmt: skip
@example(
    [("i-a", START + timedelta(minutes=30), timedelta(minutes=20))],
    [(0, "i-a", START + timedelta(minutes=25), timedelta(minutes=30), 1),
     (0, "i-a", START + timedelta(minutes=55), timedelta(minutes=3), 8)],
)  # fmt: skip
def test_each_window_lists_its_holders_with_the_seconds_they_held(
    drawn_windows: list, drawn_intervals: list
) -> None:
    con = input_tables(INPUTS)
    for resource, start, length in drawn_windows:
        con.execute(
            "insert into normalized.cost_line_facts values (?, ?, ?)",
            [resource, start, start + length],
        )
    for attempt in sorted({row[0] for row in drawn_intervals}):
        # the attempt's own times never count here: every interval names its start
        con.execute(
            "insert into staging.attempts values (?, 'e', ?, null, null)", [f"a{attempt}", START]
        )
    for attempt, resource, begin, length, gpus in drawn_intervals:
        con.execute(
            "insert into staging.attempt_resources values (?, ?, ?, ?, ?)",
            [f"a{attempt}", resource, begin, None if length is None else begin + length, gpus],
        )
    rows = con.execute(pass_sql(MODEL.sql, 1, 0)).fetchall()
    found = {
        (resource, start, end): (
            total,
            [
                (
                    holder["attempt_id"],
                    holder["experiment_id"],
                    holder["overlap_us"],
                    holder["gpu_count"],
                    holder["slice_rank"],
                )
                for holder in sorted(
                    holders, key=lambda holder: (holder["slice_rank"], holder["attempt_id"])
                )
            ],
        )
        for resource, start, end, total, holders in rows
    }
    assert len(found) == len(rows), "a window listed twice"
    assert found == expected_overlaps(drawn_windows, drawn_intervals)
