"""Proof of sameness: random sequences of nights over three months of history, on a CUR 2.0,
a GCP export and a FOCUS bill, each night's published tables compared with a full rebuild of the
same inputs on the same history.

A night re-delivers a period with the same lines, restates a final one, brings late telemetry
for an old month, changes an attempt, changes the configuration, moves the clock, or brings
nothing new. Before each night the warehouse is copied; the copy runs the night with
``--full-refresh`` on the deliveries the night stored. Both then publish (or serve) a current
snapshot whose every table and view must hold the same rows, exact DECIMALs included: EXCEPT ALL
is empty both ways.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from history_world import MONTHS, World, differences, first_night, night, published
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

# what a night does to the inputs, drawn by hypothesis
NIGHTS = st.one_of(
    st.tuples(st.just("redeliver"), st.sampled_from(MONTHS)),
    st.tuples(st.just("restate"), st.sampled_from(MONTHS[:-1])),
    st.tuples(st.just("late telemetry"), st.sampled_from(range(len(MONTHS)))),
    st.tuples(st.just("attempt failed"), st.sampled_from(["m0-a", "span", "m2-a"])),
    st.tuples(st.just("config"), st.just(None)),
    st.tuples(st.just("clock"), st.sampled_from([1, 15])),
    st.tuples(st.just("nothing new"), st.just(None)),
)


def apply(world: World, night: tuple[str, object]) -> None:
    kind, what = night
    if kind in ("redeliver", "restate"):
        period = str(what)
        world.deliveries[period] += 1
        if kind == "restate":
            world.surcharge[period] = world.surcharge.get(period, Decimal(0)) + Decimal("0.37")
        world.deliver(period)
    elif kind == "late telemetry":
        late = next(held for held in world.held if held.attempt_id == f"m{what}-late")
        late.reported = True
        world.write_telemetry()
    elif kind == "attempt failed":
        world.held = [
            replace(held, status="failed") if held.attempt_id == what else held
            for held in world.held
        ]
        world.write_telemetry()
    elif kind == "config":
        world.price += Decimal("0.05")
    elif kind == "clock":
        world.clock += timedelta(days=int(str(what)))


@pytest.mark.slow
@example(nights=[("late telemetry", 0), ("restate", "2026-08"), ("nothing new", None)])
@example(nights=[("config", None), ("clock", 15), ("attempt failed", "span")])
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(nights=st.lists(NIGHTS, min_size=2, max_size=3))
@pytest.mark.parametrize("provider", ["aws", "gcp", "focus"])
def test_every_night_publishes_what_a_full_rebuild_publishes(
    tmp_path_factory: pytest.TempPathFactory, provider: str, nights: list[tuple[str, object]]
) -> None:
    root = tmp_path_factory.mktemp(f"nights-{provider}")
    world, warehouse = first_night(root, provider)
    for number, drawn in enumerate(nights, start=1):
        apply(world, drawn)
        reference = root / f"rebuilt-{number}"
        shutil.copytree(warehouse, reference, symlinks=True)
        incremental = night(world, warehouse)
        # the deliveries as this night stored them: a file without a delivery time (a GCP
        # extract) is stamped with the time it was first stored, seconds apart on two ingests
        shutil.rmtree(reference / "raw")
        shutil.copytree(warehouse / "raw", reference / "raw", symlinks=True)
        rebuilt = night(world, reference, full_refresh=True)
        assert incremental.status in ("published", "unchanged")
        assert differences(published(incremental.database), published(rebuilt.database)) == {}, (
            number,
            drawn,
        )
