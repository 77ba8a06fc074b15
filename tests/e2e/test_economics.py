"""The economics marts on the scenario, against figures computed here from its inputs and oracle."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database

# the oracle and the SQL round resource_time slices apart; test_golden compares to a micro-dollar
MICRO = Decimal("0.000001")


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    folder = tmp_path_factory.mktemp("economics")
    result = run_pipeline(load_config(write_scenario(folder)))
    con = open_database(result.database)
    yield folder, con
    con.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cursor = con.execute(sql)
    names = [item[0] for item in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def acceptance(folder: Path) -> dict[str, str | None]:
    """experiment -> accepting attempt (first succeeded attempt meeting the bar), by hand."""
    experiments = {
        row["experiment_id"]: row for row in read_csv(folder / "telemetry/experiments.csv")
    }
    accepting: dict[str, str | None] = dict.fromkeys(experiments)
    attempts = sorted(
        read_csv(folder / "telemetry/attempts.csv"), key=lambda r: (r["ended_at"], r["attempt_id"])
    )
    for attempt in attempts:
        bar = experiments[attempt["experiment_id"]]
        if attempt["status"] != "succeeded" or not attempt["metric_value"]:
            continue
        if attempt["metric_name"] not in ("", bar["quality_metric"]):
            continue
        value, threshold = float(attempt["metric_value"]), float(bar["quality_threshold"])
        meets = value >= threshold if bar["higher_is_better"] == "true" else value <= threshold
        if meets and accepting[attempt["experiment_id"]] is None:
            accepting[attempt["experiment_id"]] = attempt["attempt_id"]
    return accepting


def oracle_experiments(folder: Path) -> dict[tuple[str, str], dict[str, str]]:
    return {
        (row["experiment_id"], row["allocation_model"]): row
        for row in read_csv(folder / "expected/experiment_costs.csv")
    }


def test_outcomes_cost_and_acceptance(world) -> None:
    folder, con = world
    oracle = oracle_experiments(folder)
    accepting = acceptance(folder)
    found = rows(con, "select * from marts.experiment_outcomes")
    assert len(found) == len(oracle)
    for row in found:
        want = oracle[(row["experiment_id"], row["allocation_model"])]
        # total = the oracle's experiment cost (all attempts + experiment-only lines), exactly
        assert abs(row["total_cost"] - Decimal(want["effective_cost"])) <= MICRO
        assert abs(row["failed_attempt_cost"] - Decimal(want["failed_attempt_cost"])) <= MICRO
        assert row["accepting_attempt_id"] == accepting[row["experiment_id"]]
        assert row["accepted"] is (accepting[row["experiment_id"]] is not None)


def test_cost_per_accepted_result_is_total_over_accepted(world) -> None:
    folder, con = world
    oracle = oracle_experiments(folder)
    accepted = sum(1 for value in acceptance(folder).values() if value is not None)
    assert accepted > 0
    for model in ("marginal", "fully_loaded"):
        total = sum(
            (Decimal(row["effective_cost"]) for key, row in oracle.items() if key[1] == model),
            Decimal(0),
        )
        (row,) = rows(
            con,
            "select total_cost, accepted_results, cost_per_accepted_result "
            "from marts.cost_per_accepted_result "
            f"where dimension = 'all' and allocation_model = '{model}'",
        )
        assert abs(row["total_cost"] - total) <= MICRO * len(oracle)
        assert row["accepted_results"] == accepted
        # exactly the mart's own total over the accepted count, rounded half up at 10 places
        quotient = (row["total_cost"] / accepted).quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
        assert row["cost_per_accepted_result"] == quotient


def test_frontier_by_hand(world) -> None:
    _, con = world
    found = rows(
        con, "select * from marts.cost_quality_frontier where allocation_model = 'marginal'"
    )
    scored = [row for row in found if row["best_metric_value"] is not None]
    assert scored
    for row in scored:
        rivals = [
            other
            for other in scored
            if other["quality_metric"] == row["quality_metric"]
            and other["higher_is_better"] == row["higher_is_better"]
            and other["total_cost"] < row["total_cost"]
            and (
                other["best_metric_value"] >= row["best_metric_value"]
                if row["higher_is_better"]
                else other["best_metric_value"] <= row["best_metric_value"]
            )
        ]
        assert row["on_frontier"] is (not rivals), row["experiment_id"]


def test_goodput_is_modeled_without_events_and_matches_daly(world) -> None:
    folder, con = world
    events = (
        read_csv(folder / "telemetry/attempt_events.csv")
        if (folder / "telemetry/attempt_events.csv").exists()
        else []
    )
    instrumented = {row["attempt_id"] for row in events if row["event_type"] == "first_step"}
    for row in rows(con, "select * from marts.attempt_goodput where allocation_model = 'marginal'"):
        if row["attempt_id"] in instrumented or not row["gpu_count"]:
            continue
        assert row["goodput"] is None and row["lost_work_gpu_hours"] is None
        # defaults: lambda 1.97e-5 / GPU-h, tau 60 min, delta 1 min, R 10 min
        mtbf = 1 / (row["gpu_count"] * 1.97e-5)
        tau, delta, recovery = 1.0, 1 / 60, 10 / 60
        daly = tau / (mtbf * math.exp(recovery / mtbf) * (math.exp((tau + delta) / mtbf) - 1))
        assert row["modeled_goodput"] == pytest.approx(daly, rel=1e-9)
        if row["billed_gpu_hours"]:
            assert row["goodput_source"] == "modeled_young_daly"
            assert row["goodput_used"] == row["modeled_goodput"]
        else:  # never ran: the model's figure stays in its column, but no goodput is used
            assert row["goodput_source"] == "no_gpu_hours"
            assert row["goodput_used"] is None


def test_capacity_types_cost_and_interruptions(world) -> None:
    folder, con = world
    capacity = {row["attempt_id"]: row for row in read_csv(folder / "telemetry/attempts.csv")}
    cost: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in read_csv(folder / "expected/attempt_costs.csv"):
        cost[(capacity[row["attempt_id"]]["capacity_type"], row["allocation_model"])] += Decimal(
            row["effective_cost"]
        )
    interrupted = defaultdict(int)
    for row in capacity.values():
        interrupted[row["capacity_type"]] += row["status"] == "interrupted"
    found = rows(con, "select * from marts.capacity_type_economics")
    assert {(row["capacity_type"], row["allocation_model"]) for row in found} == set(cost)
    for row in found:
        want = cost[(row["capacity_type"], row["allocation_model"])]
        assert abs(row["total_cost"] - want) <= MICRO * len(capacity)
        assert row["interruptions"] >= interrupted[row["capacity_type"]]


def test_tco_on_bill_sums_to_the_experiment_cost(world) -> None:
    folder, con = world
    oracle = oracle_experiments(folder)
    found = rows(
        con,
        "select experiment_id, allocation_model, sum(effective_cost) as on_bill "
        "from marts.tco_breakdown where on_bill group by all",
    )
    assert found
    for row in found:
        want = Decimal(oracle[(row["experiment_id"], row["allocation_model"])]["effective_cost"])
        assert abs(row["on_bill"] - want) <= MICRO


def test_dev_box_is_a_low_confidence_idle_instance(world) -> None:
    folder, con = world
    (data,) = sorted((folder / "aws").rglob("*.parquet"))
    table = pq.read_table(data).to_pylist()
    held = {row["resource_id"] for row in read_csv(folder / "telemetry/attempt_resources.csv")}
    dev = defaultdict(Decimal)
    for line in table:
        resource = line["line_item_resource_id"]
        if (
            line["product_instance_type"] == "m5.xlarge"
            and resource not in held
            and not line["resource_tags"]
        ):
            dev[resource] += Decimal(str(line["line_item_unblended_cost"]))
    assert dev
    findings = {
        row["subject_id"]: row
        for row in rows(
            con, "select * from marts.waste_findings where finding_type = 'idle_instance'"
        )
    }
    for resource, amount in dev.items():
        assert findings[resource]["confidence"] == "low"
        assert findings[resource]["effective_cost"] == amount.quantize(Decimal("1e-10"))


def test_goodput_of_the_instrumented_attempts(world) -> None:
    folder, con = world
    cost = {
        row["attempt_id"]: Decimal(row["effective_cost"])
        for row in read_csv(folder / "expected/attempt_costs.csv")
        if row["allocation_model"] == "marginal"
    }
    found = {
        row["attempt_id"]: row
        for row in rows(
            con, "select * from marts.attempt_goodput where allocation_model = 'marginal'"
        )
    }
    # (gpus, billed h, startup h, save h, restore h, lost h), from attempts and attempt_events
    expected = {
        # 08:00-14:00, first step 08:10, saves 09..13 x 60 s, timeout: lost 13:00 -> 14:00
        "att-llm-01": (8, 6, 1 / 6, 5 / 60, 0, 1),
        # 00:00-04:30, restore 120 s, first step 00:06, saves 01..04 x 60 s, succeeded
        "att-llm-02": (8, 4.5, 0.1, 4 / 60, 2 / 60, 0),
        # 09:00-12:00, first step 09:03, saves 10, 11 x 30 s, succeeded
        "att-vis-01": (4, 3, 0.05, 1 / 60, 0, 0),
        # 09:00-11:30, reclaimed (interrupted 11:28, ended 11:30): lost 11:00 -> 11:30
        "att-vis-02": (4, 2.5, 0.05, 1 / 60, 0, 0.5),
    }
    for attempt_id, (gpus, billed, startup, save, restore, lost) in expected.items():
        row = found[attempt_id]
        productive = billed - startup - save - restore - lost
        assert row["billed_gpu_hours"] == pytest.approx(billed * gpus)
        assert row["startup_gpu_hours"] == pytest.approx(startup * gpus)
        assert row["checkpoint_save_gpu_hours"] == pytest.approx(save * gpus)
        assert row["checkpoint_restore_gpu_hours"] == pytest.approx(restore * gpus)
        assert row["lost_work_gpu_hours"] == pytest.approx(lost * gpus)
        assert row["recovery_gpu_hours"] == 0
        assert row["productive_gpu_hours"] == pytest.approx(productive * gpus)
        assert row["goodput"] == pytest.approx(productive / billed)
        assert row["goodput_source"] == "measured"
        # lost work cost = cost x lost / billed: att-vis-02 0.5 / 2.5, att-llm-01 1 / 6
        share = Decimal(lost) / Decimal(billed) if lost else Decimal(0)
        assert abs(row["lost_work_cost"] - cost[attempt_id] * share) <= MICRO
    # goodputs: llm-01 4.75/6, llm-02 4.3/4.5, vis-01 2.9333/3, vis-02 1.9333/2.5
    assert found["att-llm-01"]["goodput"] == pytest.approx(0.7916667, abs=1e-7)
    assert found["att-vis-02"]["goodput"] == pytest.approx(0.7733333, abs=1e-7)
    # att-rl-01 logged no events: unknown, and modeled instead
    assert found["att-rl-01"]["goodput"] is None
    assert found["att-rl-01"]["goodput_source"] == "modeled_young_daly"


def test_spot_break_even_on_the_scenario(world) -> None:
    folder, con = world
    attempts = {row["attempt_id"]: row for row in read_csv(folder / "telemetry/attempts.csv")}
    cost = {
        row["attempt_id"]: Decimal(row["effective_cost"])
        for row in read_csv(folder / "expected/attempt_costs.csv")
        if row["allocation_model"] == "marginal"
    }

    def gpu_hours(row: dict[str, str]) -> float:
        if not row["started_at"] or not row["ended_at"]:
            return 0.0
        start = datetime.fromisoformat(row["started_at"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(row["ended_at"].replace("Z", "+00:00"))
        return (end - start).total_seconds() / 3600 * int(row["gpu_count"])

    def price(kind: str) -> float:
        ids = [key for key, row in attempts.items() if row["capacity_type"] == kind]
        return float(sum(cost[key] for key in ids)) / sum(gpu_hours(attempts[key]) for key in ids)

    # measured G: spot (vis-01 11.7333 + vis-02 7.7333) / (12 + 10) GPU-h = 0.884848;
    # on-demand (llm-01 38 + llm-02 34.4) / (48 + 36) = 0.861905 (the others logged no events)
    g_spot, g_od = (11.733333333 + 7.733333333) / 22, 72.4 / 84
    found = {
        row["capacity_type"]: row
        for row in rows(
            con, "select * from marts.capacity_type_economics where allocation_model = 'marginal'"
        )
    }
    spot, on_demand = found["spot"], found["on_demand"]
    assert spot["goodput"] == pytest.approx(g_spot) and on_demand["goodput"] == pytest.approx(g_od)
    assert spot["interruptions"] == 1
    assert spot["lost_work_gpu_hours"] == pytest.approx(2.0)  # 0.5 h x 4 GPUs
    assert on_demand["lost_work_gpu_hours"] == pytest.approx(8.0)  # llm-01: 1 h x 8 GPUs
    assert float(spot["price_per_gpu_hour"]) == pytest.approx(price("spot"), rel=1e-9)
    assert float(on_demand["price_per_gpu_hour"]) == pytest.approx(price("on_demand"), rel=1e-9)
    ratio = price("spot") / price("on_demand")
    assert spot["price_ratio_to_on_demand"] == pytest.approx(ratio, rel=1e-9)
    assert spot["pays_off_against_on_demand"] is (ratio < g_spot / g_od)
    assert float(spot["break_even_price_per_gpu_hour"]) == pytest.approx(
        price("on_demand") * g_spot / g_od, rel=1e-8
    )


def test_goodput_uplift_of_the_llm_experiment(world) -> None:
    _, con = world
    found = {
        row["cost_category"]: row
        for row in rows(
            con,
            "select cost_category, effective_cost, goodput from marts.tco_breakdown "
            "where allocation_model = 'marginal' and experiment_id = 'exp-llm-7b'",
        )
    }
    # G = (38 + 34.4) / (48 + 36) productive / billed GPU-hours; uplift = GPU spend x (1/G - 1)
    g = 72.4 / 84
    assert found["goodput_loss"]["goodput"] == pytest.approx(g)
    gpu = float(found["gpu_compute"]["effective_cost"])
    assert gpu > 0
    assert float(found["goodput_loss"]["effective_cost"]) == pytest.approx(
        gpu * (1 / g - 1), rel=1e-9
    )
