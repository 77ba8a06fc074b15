"""Which months a night builds and which it carries forward (pipeline.run.carry.scope), the
`-- periods: combined` header, and the build's two parts around the carry."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipeline.common.errors import ModelError
from pipeline.dag.build import build
from pipeline.dag.models import across_periods, discover, parse_model
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.carry import UNBOUNDED, scope
from pipeline.warehouse.raw_store import Delivery

MONTHS = ["2026-08", "2026-09", "2026-10"]


def _delivery(provider: str, period: str) -> Delivery:
    return Delivery(provider, "export", period, "d1", Path("/nowhere"), (), False)


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    record = {"tables": {"normalized.split_cost_lines": {"rows": 0}}}
    (tmp_path / "snapshot.json").write_text(json.dumps(record), encoding="utf-8")
    return tmp_path


def _scope(snapshot: Path, moved: list[str], provider: str = "aws", **options: object):
    deliveries = [_delivery(provider, month) for month in MONTHS]
    settings = {
        "months": MONTHS,
        "previous_months": MONTHS,
        "folder": snapshot,
        "carries": True,
        **options,
    }
    return scope(moved, settings["months"], settings["previous_months"], deliveries,
                 settings["folder"], settings["carries"])  # fmt: skip


def test_a_month_whose_own_parts_moved_is_built_and_the_others_carried(snapshot: Path) -> None:
    found = _scope(snapshot, ["deliveries", "2026-10 aws deliveries", "2026-10 clock"])
    assert found is not None
    assert (found.built, found.carried) == (("2026-10",), ("2026-08", "2026-09"))
    assert found.deliveries([_delivery("aws", "2026-09"), _delivery("aws", "2026-10")]) == [
        _delivery("aws", "2026-10")
    ]


def test_a_new_month_is_built_and_the_held_ones_carried(snapshot: Path) -> None:
    found = _scope(snapshot, ["deliveries", "2026-10 aws deliveries"], previous_months=MONTHS[:2])
    assert found is not None and found.carried == ("2026-08", "2026-09")


@pytest.mark.parametrize(
    ("moved", "options"),
    [
        (["config", "2026-10 aws deliveries"], {}),  # a part every month shares
        (["code"], {}),
        (["telemetry", "2026-08 telemetry"], {}),
        (["clock"], {}),
        (["2026-08 aws deliveries", "2026-09 aws deliveries", "2026-10 aws deliveries"], {}),
        (["2026-10 aws deliveries"], {"carries": False}),
        (["2026-10 aws deliveries"], {"folder": None}),  # no snapshot to carry from
        (["2026-10 aws deliveries"], {"months": MONTHS[1:]}),  # a month left the bill
    ],
)
def test_a_night_is_built_whole(snapshot: Path, moved: list[str], options: dict) -> None:
    assert _scope(snapshot, moved, **options) is None


def test_a_google_cloud_bill_is_built_whole(snapshot: Path) -> None:
    assert _scope(snapshot, ["2026-10 gcp deliveries"], provider="gcp") is None


def test_a_snapshot_with_split_cost_rows_is_built_whole(snapshot: Path) -> None:
    record = {"tables": {"normalized.split_cost_lines": {"rows": 3}}}
    (snapshot / "snapshot.json").write_text(json.dumps(record), encoding="utf-8")
    assert _scope(snapshot, ["2026-10 aws deliveries"]) is None
    (snapshot / "snapshot.json").write_text("{", encoding="utf-8")  # damaged: built whole
    assert _scope(snapshot, ["2026-10 aws deliveries"]) is None


def test_a_snapshot_with_rows_of_no_period_is_built_whole(snapshot: Path) -> None:
    partitions = {"2026-08": [2, "7"], "2026-09": [1, "3"]}
    entry = {"rows": 3, "partitions": partitions}
    record = {"tables": {"normalized.split_cost_lines": {"rows": 0}, "marts.x": entry}}
    (snapshot / "snapshot.json").write_text(json.dumps(record), encoding="utf-8")
    assert _scope(snapshot, ["2026-10 aws deliveries"]) is not None
    entry["rows"] = 4  # one row in no partition
    (snapshot / "snapshot.json").write_text(json.dumps(record), encoding="utf-8")
    assert _scope(snapshot, ["2026-10 aws deliveries"]) is None


def test_models_that_combine_periods_and_their_readers() -> None:
    combined = across_periods(discover())
    assert {"marts.attempt_costs", "marts.cost_estimates", "marts.waste_findings"} <= combined
    assert "marts.attempt_goodput" in combined  # reads attempt_costs
    assert "checks.one_currency_per_attempt" in combined
    for name in (
        "normalized.cost_line_facts",
        "allocation.period_slice_sums",
        "marts.reconciliation",
    ):
        assert name not in combined


def test_the_periods_header_takes_one_value() -> None:
    sql = "-- m\n-- grain: one row per x\n-- periods: {}\nselect 1 as x"
    assert parse_model("marts", "m", sql.format("combined (every month)")).combines_periods
    assert not parse_model(
        "marts", "m", "-- m\n-- grain: one row per x\nselect 1 as x"
    ).combines_periods
    keyed = parse_model("normalized", "m", sql.format("keyed by key of normalized.lines (x)"))
    assert keyed.carried_by == ("key", "normalized.lines")
    assert not keyed.combines_periods
    with pytest.raises(ModelError, match="says `combined` or `keyed by <column> of"):
        parse_model("marts", "m", sql.format("each"))


def test_the_profiles_are_carried_by_the_keys_the_carried_lines_use() -> None:
    keyed = {model.qualified: model.carried_by for model in discover() if model.carried_by}
    assert keyed == {"normalized.cost_line_profiles": ("profile_key", "normalized.cost_line_facts")}


def test_the_carry_runs_between_the_period_models_and_the_combined_ones() -> None:
    one = parse_model("normalized", "one", "-- a\n-- grain: one row per x\nselect 1 as x")
    combined = parse_model(
        "marts",
        "all",
        "-- b\n-- grain: one row per x\n-- periods: combined\nselect * from normalized.one",
    )
    after = parse_model("marts", "later", "-- c\n-- grain: one row per x\nselect * from marts.all")
    con = duckdb.connect()
    seen: list[str] = []

    def carry(engine: object, built: list) -> None:
        seen.append(",".join(model.qualified for model in built))
        con.execute("insert into normalized.one values (2)")

    build(con, [after, combined, one], carry=carry)
    assert seen == ["normalized.one"]
    assert sorted(con.execute("select x from marts.later").fetchall()) == [(1,), (2,)]


def test_a_provider_says_whether_its_deliveries_bound_their_months() -> None:
    bounded = {provider.name: provider.bounds_months for provider in PROVIDERS}
    assert bounded == {"aws": True, "gcp": False, "focus": True}
    assert {"gcp"} == UNBOUNDED
