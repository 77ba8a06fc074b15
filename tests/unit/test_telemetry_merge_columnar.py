"""The columnar merge against the row-by-row rules it replaced, on random batches, and the
canonical form of a published snapshot's tables."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.common.errors import InputError
from pipeline.telemetry import merge as merging
from pipeline.telemetry.adapters import table
from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.merge import TABLES, canonical, merge

START = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)


class Refused(Exception):
    """What the row rules refused: the batch, attempt id and origin of a conflict, or the
    children table naming an unknown attempt."""


def reference_merge(batches: list[tuple[str, Mapping[str, pa.Table]]]) -> dict[str, list[dict]]:
    """The rules as runcost applied them row by row before the merge became columnar: each
    batch in order, the last row of an attempt wins, an attempt's children are those of the
    last batch that has any, keys keep the place they first appeared in."""

    def identity(row: Mapping[str, Any]) -> tuple[str, str]:
        tags = dict(row["tags"] or [])
        return tags.get("source", "canonical"), tags.get("source_native_id", row["attempt_id"])

    def rows(tables: Mapping[str, pa.Table], name: str) -> list[dict]:
        return [] if tables.get(name) is None else tables[name].to_pylist()

    attempts: dict[str, dict] = {}
    origin: dict[str, str] = {}
    children: dict[str, dict[str, list[dict]]] = {"attempt_resources": {}, "attempt_events": {}}
    experiments: dict[str, dict] = {}
    for label, tables in batches:
        for row in rows(tables, "attempts"):
            attempt_id = row["attempt_id"]
            if attempt_id in attempts and identity(attempts[attempt_id]) != identity(row):
                raise Refused(label, attempt_id, origin[attempt_id])
            attempts[attempt_id] = row
            origin[attempt_id] = label
        for name, by_attempt in children.items():
            fresh: dict[str, list[dict]] = {}
            for row in rows(tables, name):
                fresh.setdefault(row["attempt_id"], []).append(row)
            by_attempt.update(fresh)
        for row in rows(tables, "experiments"):
            experiments[row["experiment_id"]] = row
    merged = {"attempts": list(attempts.values())}
    for name, by_attempt in children.items():
        if set(by_attempt) - set(attempts):
            raise Refused(f"{name} name attempt(s) no source reports")
        merged[name] = [row for found in by_attempt.values() for row in found]
    merged["experiments"] = list(experiments.values())
    return merged


class InMemory:
    """A deferred table (merge.Deferred) over an Arrow table."""

    def __init__(self, table: pa.Table, name: str) -> None:
        self.table, self.num_rows = canonical(table, name), table.num_rows

    @classmethod
    def wrap(cls, tables: Mapping[str, pa.Table]) -> dict[str, InMemory]:
        return {name: cls(found, name) for name, found in tables.items()}

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def read(self) -> pa.Table:
        return self.table


IDS = st.sampled_from(["a1", "a2", "a3", "a4"])
IDENTITIES = st.sampled_from([(None, None), ("slurm", "7"), ("slurm", "8"), ("mlflow", "a1")])


@st.composite
def batches(draw) -> list[tuple[str, dict[str, pa.Table]]]:
    """1-4 batches; an attempt id keeps its identity unless hypothesis draws another for it."""
    usual = {attempt_id: draw(IDENTITIES) for attempt_id in ["a1", "a2", "a3", "a4"]}
    drawn = []
    for number in range(draw(st.integers(1, 4))):
        attempts = []
        for attempt_id in draw(st.lists(IDS, max_size=5)):
            source, native = draw(st.one_of(st.just(usual[attempt_id]), IDENTITIES))
            tags = {"team": draw(st.sampled_from(["x", "y"]))}
            if source is not None:
                tags |= {"source": source, "source_native_id": native}
            status = draw(st.sampled_from(["running", "succeeded", "failed"]))
            attempts.append(
                {"attempt_id": attempt_id, "experiment_id": "e1", "status": status, "tags": tags}
            )
        children = st.lists(st.tuples(IDS, st.integers(0, 9)), max_size=5)
        resources = [
            {"attempt_id": attempt_id, "resource_id": f"i-{n}", "started_at": START}
            for attempt_id, n in draw(children)
        ]
        events = [
            {"attempt_id": attempt_id, "event_at": START, "event_type": "save", "step": n}
            for attempt_id, n in draw(children)
        ]
        experiments = [
            {"experiment_id": experiment_id, "team": team}
            for experiment_id, team in draw(
                st.lists(st.tuples(st.sampled_from(["e1", "e2"]), st.sampled_from(["t", "u"])))
            )
        ]
        tables = {
            "attempts": table("attempts", attempts),
            "attempt_resources": table("attempt_resources", resources),
            "attempt_events": table("attempt_events", events),
            "experiments": table("experiments", experiments),
        }
        # a source may leave tables out (an adapter reports no experiments)
        left_out = draw(st.sets(st.sampled_from(TABLES), max_size=2))
        drawn.append((f"batch {number}", {k: v for k, v in tables.items() if k not in left_out}))
    return drawn


@settings(deadline=None, max_examples=300)
@given(batches())
def test_the_columnar_merge_keeps_the_rows_and_order_the_row_rules_keep(drawn) -> None:
    # the tables as given, and the first batch's deferred (as the published snapshot's are)
    forms = [drawn, [(label, InMemory.wrap(tables)) for label, tables in drawn[:1]] + drawn[1:]]
    try:
        expected = reference_merge(drawn)
    except Refused as refused:
        for batches_given in forms:
            with pytest.raises(InputError) as raised:
                merge(batches_given)
            said = str(raised.value)
            if len(refused.args) == 3:
                label, attempt_id, origin = refused.args
                assert said.startswith(f"{label}: attempt id {attempt_id!r} ")
                assert f"is already used by {origin} (" in said
            else:
                assert refused.args[0] in said
        return
    # kept rows sliced in runs (a few runs here), then copied (no run is sliced)
    for max_slices in (merging.MAX_SLICES, 0):
        for deferred, batches_given in enumerate(forms):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(merging, "MAX_SLICES", max_slices)
                merged = merge(batches_given)
            for name in TABLES:
                assert merged[name].schema == arrow_schema(name)
                assert merged[name].to_pylist() == expected[name], (name, max_slices, deferred)


def test_a_published_table_is_made_canonical() -> None:
    """Columns out of order, one missing (published before it existed), tags NULL or a map
    with other field names: canonical columns and types, the missing one NULL, tags empty."""
    tags = pa.array([[("team", "x")], None], pa.map_(pa.large_string(), pa.large_string()))
    published = pa.table(
        {
            "status": ["running", "failed"],
            "tags": tags,
            "attempt_id": ["a1", "a2"],
            "experiment_id": ["e1", "e1"],
            "gpu_count": pa.array([8, None], pa.int32()),
        }
    )
    made = canonical(published, "attempts")
    assert made.schema == arrow_schema("attempts")
    rows = made.to_pylist()
    assert [row["tags"] for row in rows] == [[("team", "x")], []]
    assert [row["gpu_count"] for row in rows] == [8, None]
    assert {row["artifact_uri"] for row in rows} == {None}
    assert canonical(None, "experiments").num_rows == 0
