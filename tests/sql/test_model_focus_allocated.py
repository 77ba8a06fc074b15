"""marts.focus_allocated on a small bill worked out by hand: each FOCUS charge split into its line's
slices under each model, with the FOCUS 1.3 allocation columns, summing exactly to the charge;
checks.focus_allocated_sums_to_origin sees a broken sum of a charge split by ratio, and
checks.slices_sum_to_line one split in a basis."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import builders
import pytest
from builders import at, build_models, cur_line, line_id, records, run_check
from exact_checks import exact_problems
from gcp_rows import DAY, credit, gcp_row, write_gcp

from pipeline.dag.macros import expand_macros

D = Decimal
SP_ARN = "arn:aws:savingsplans::111111111111:savingsplan/sp-1"
EKS = "arn:aws:eks:us-east-1:1:cluster/ml"
LINES = [
    # line 0: placed whole by its tag (no public price: its ListCost is what it bills)
    cur_line(line_item_resource_id="i-tag", line_item_unblended_cost=3.0,
             resource_tags={"user_attempt_id": "a1"}),
    # line 1: a2 held i-half for the first half hour; the rest is outside any attempt
    cur_line(line_item_resource_id="i-half", line_item_unblended_cost=1.0),
    # line 2: the cluster fee, unallocated in the marginal model, spread evenly over e1's
    # attempts running in its hour (a1, a2) by the pool `eks` in the fully loaded model
    cur_line(line_item_product_code="AmazonEKS", line_item_resource_id=EKS,
             line_item_unblended_cost=1.0),
    # line 3: usage under a Savings Plan shared by three attempts; its ContractedCost (the net
    # rate's 0.1) is none of its four bases, so it is split by ratio with a remainder
    cur_line(line_item_line_item_type="SavingsPlanCoveredUsage", line_item_resource_id="i-three",
             line_item_unblended_rate="1.0", line_item_unblended_cost=1.0,
             line_item_net_unblended_rate="0.1", line_item_net_unblended_cost=0.1,
             pricing_public_on_demand_rate="1.25", pricing_public_on_demand_cost=1.25,
             savings_plan_savings_plan_a_r_n=SP_ARN, savings_plan_savings_plan_effective_cost=0.7,
             savings_plan_net_savings_plan_effective_cost=0.65),
    # line 4: the plan's fee: a Purchase of EffectiveCost 0 and its unused 8.00 a row of its own
    cur_line(line_item_line_item_type="SavingsPlanRecurringFee",
             line_item_product_code="ComputeSavingsPlans", line_item_unblended_rate="50",
             line_item_unblended_cost=50.0, savings_plan_savings_plan_a_r_n=SP_ARN,
             savings_plan_total_commitment_to_date=50.0, savings_plan_used_commitment=42.0),
]  # fmt: skip
ATTEMPTS = [
    {"attempt_id": "a1", "experiment_id": "e1", "started_at": at(10), "ended_at": at(11),
     "gpu_count": 1},
    {"attempt_id": "a2", "experiment_id": "e1", "started_at": at(10), "ended_at": at(10, 30),
     "gpu_count": 1},
    *({"attempt_id": f"b{n}", "experiment_id": "e2", "started_at": at(10), "ended_at": at(11),
       "gpu_count": 1} for n in (1, 2, 3)),
]  # fmt: skip
RESOURCES = [
    {"attempt_id": "a2", "resource_id": "i-half", "started_at": at(10), "ended_at": at(10, 30)},
    *({"attempt_id": f"b{n}", "resource_id": "i-three", "started_at": at(10), "ended_at": at(11)}
      for n in (1, 2, 3)),
]  # fmt: skip
CONFIG = {
    "pools": [
        {"name": "eks", "selector": "service_name = 'AmazonEKS'", "driver": "even",
         "attempts": "experiment_id = 'e1'"},
    ],
}  # fmt: skip
COSTS = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")
# a Google Cloud row with credits: its FOCUS BilledCost is its cost after every credit (net)
GCP_LINE = line_id(0, DAY, source_range=1)
CHECK_SQL = Path(__file__).resolve().parents[2] / "sql/checks/focus_allocated_sums_to_origin.sql"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("focus_allocated")
    promoted = gcp_row(
        cost=10.0,
        cost_at_list=12.0,
        credits=[credit("SUSTAINED_USAGE_DISCOUNT", -2.0), credit("PROMOTION", -1.5)],
    )
    delivery = write_gcp(folder / "raw", [promoted])
    con, report = build_models(folder, LINES, ATTEMPTS, RESOURCES, config=CONFIG,
                               deliveries=[delivery])  # fmt: skip
    assert not report.check_failures
    return con


def slices(con, line: int, line_type: str | None = None) -> dict[tuple, dict]:
    """The slices of one origin row, by (model, AllocatedMethodId, AllocatedResourceId)."""
    rows = records(
        con,
        "select * from marts.focus_allocated where x_LineId = ? "
        "and (? is null or x_ProviderLineType = ?)",
        line,
        line_type,
        line_type,
    )
    found = {}
    for row in rows:
        key = (row["x_AllocationModel"], row["AllocatedMethodId"], row["AllocatedResourceId"])
        assert key not in found
        found[key] = row
    return found


def costs(row: dict) -> tuple:
    return tuple(row[name] for name in COSTS)


def details(row: dict) -> dict:
    return json.loads(row["AllocatedMethodDetails"], parse_float=Decimal)


def test_a_tagged_line_is_one_slice_per_model_carrying_the_whole_charge(world) -> None:
    found = slices(world, line_id(0))
    assert sorted(found) == [
        ("fully_loaded", "runcost:fully_loaded:tag", "a1"),
        ("marginal", "runcost:marginal:tag", "a1"),
    ]
    row = found["marginal", "runcost:marginal:tag", "a1"]
    assert costs(row) == (D("3"), D("3"), D("3"), D("3"))
    assert json.loads(row["AllocatedTags"]) == {"x_experiment_id": "e1", "x_attempt_id": "a1"}
    assert details(row) == {
        "Elements": [{"AllocatedRatio": D("1"), "UsageUnit": "Hrs", "UsageQuantity": D("1")}]
    }
    # the origin's other FOCUS columns are carried as normalized.focus publishes them
    (origin,) = records(world, f"select * from normalized.focus where x_LineId = {line_id(0)}")
    for name in ("ResourceId", "ServiceName", "ChargeCategory", "PricingQuantity", "Tags"):
        assert row[name] == origin[name]


def test_resource_time_and_the_unallocated_rest(world) -> None:
    found = slices(world, line_id(1))
    assert sorted(found) == [
        ("fully_loaded", "runcost:fully_loaded:resource_time", "a2"),
        ("fully_loaded", "runcost:fully_loaded:unallocated", None),
        ("marginal", "runcost:marginal:resource_time", "a2"),
        ("marginal", "runcost:marginal:unallocated", None),
    ]
    held = found["marginal", "runcost:marginal:resource_time", "a2"]
    assert costs(held) == (D("0.5"), D("0.5"), D("0.5"), D("0.5"))
    # a2's half hour on the instance is the driver
    assert details(held)["Elements"] == [
        {"AllocatedRatio": D("0.5"), "UsageUnit": "Seconds", "UsageQuantity": D("1800")}
    ]
    rest = found["marginal", "runcost:marginal:unallocated", None]
    assert costs(rest) == (D("0.5"), D("0.5"), D("0.5"), D("0.5"))
    assert rest["AllocatedTags"] is None
    assert rest["x_UnallocatedReason"] == "outside_any_attempt"
    assert details(rest) == {
        "Elements": [{"AllocatedRatio": D("0.5"), "UsageUnit": None, "UsageQuantity": None}],
        "x_UnallocatedReason": "outside_any_attempt",
    }


def test_a_pool_names_its_driver_and_pool_in_the_method_id(world) -> None:
    found = slices(world, line_id(2))
    assert sorted(found) == [
        ("fully_loaded", "runcost:fully_loaded:even:eks", "a1"),
        ("fully_loaded", "runcost:fully_loaded:even:eks", "a2"),
        ("marginal", "runcost:marginal:unallocated", None),
    ]
    for attempt in ("a1", "a2"):
        row = found["fully_loaded", "runcost:fully_loaded:even:eks", attempt]
        assert costs(row) == (D("0.5"), D("0.5"), D("0.5"), D("0.5"))
        assert details(row)["Elements"] == [
            {"AllocatedRatio": D("0.5"), "UsageUnit": "even", "UsageQuantity": None}
        ]
    assert found["marginal", "runcost:marginal:unallocated", None]["x_UnallocatedReason"] == (
        "no_matching_attempt"
    )


def test_a_cost_no_basis_equals_is_split_by_ratio_with_the_remainder_on_one_slice(world) -> None:
    (origin,) = records(world, f"select * from normalized.focus where x_LineId = {line_id(3)}")
    assert costs(origin) == (D("1"), D("0.7"), D("1.25"), D("0.1"))
    found = slices(world, line_id(3))
    for model in ("marginal", "fully_loaded"):
        rows = [found[model, f"runcost:{model}:resource_time", f"b{n}"] for n in (1, 2, 3)]
        # the first slice of the line takes the billed remainder (attribution's rule) and so
        # the contracted one too: 0.1 / 3 rounds to 0.0333333333 twice
        assert sorted(costs(row) for row in rows) == [
            (D("0.3333333333"), D("0.2333333333"), D("0.4166666667"), D("0.0333333333")),
            (D("0.3333333333"), D("0.2333333333"), D("0.4166666667"), D("0.0333333333")),
            (D("0.3333333334"), D("0.2333333334"), D("0.4166666666"), D("0.0333333334")),
        ]
        assert [sum(row[name] for row in rows) for name in COSTS] == list(costs(origin))


def test_a_commitment_fee_and_its_unused_part_are_two_origins(world) -> None:
    purchase = slices(world, line_id(4), "SavingsPlanRecurringFee")
    unused = slices(world, line_id(4), "SavingsPlanRecurringFee:Unused")
    for model in ("marginal", "fully_loaded"):
        key = (model, f"runcost:{model}:unallocated", None)
        assert costs(purchase[key]) == (D("50"), D("0"), D("50"), D("50"))
        assert costs(unused[key]) == (D("0"), D("8"), D("0"), D("0"))
        assert details(unused[key])["Elements"][0]["AllocatedRatio"] == D("1")
    assert len(purchase) == len(unused) == 2


def test_google_cloud_billed_cost_is_split_in_the_net_basis(world) -> None:
    (origin,) = records(world, 'select "BilledCost" from normalized.focus where x_LineId = ?',
                        GCP_LINE)  # fmt: skip
    assert origin["BilledCost"] == D("6.5")
    found = slices(world, GCP_LINE)
    assert {row["BilledCost"] for row in found.values()} == {D("6.5")}
    assert {key[0] for key in found} == {"marginal", "fully_loaded"}


def test_every_origin_sums_exactly_and_its_ratios_to_one(world) -> None:
    assert exact_problems(world)["focus_allocated_sums"] == []
    assert run_check(world, "focus_allocated_sums_to_origin") == []
    assert records(world, "select count(*) as n from normalized.focus")[0]["n"] == 7
    ratios = records(
        world,
        "select x_AllocationModel, x_LineId, x_ProviderLineType, sum(cast(json_extract_string("
        "AllocatedMethodDetails, '$.Elements[0].AllocatedRatio') as decimal(38, 10))) as total "
        "from marts.focus_allocated group by all",
    )
    assert len(ratios) == 14
    assert all(abs(row["total"] - 1) <= D("1e-9") for row in ratios), ratios


def broken_check(con, table: str, update: str) -> list[dict]:
    """The check's failures over a copy of allocation.focus_ratio_splits changed by update."""
    con.execute("create schema if not exists broken")
    con.execute(
        f"create or replace table broken.{table} as select * from allocation.focus_ratio_splits"
    )
    con.execute(update.format(table=f"broken.{table}"))
    sql = builders.model("checks.focus_allocated_sums_to_origin").sql.replace(
        "allocation.focus_ratio_splits", f"broken.{table}"
    )
    return records(con, f"select * from ({sql})")


def test_the_mart_takes_the_split_slices_of_a_charge_split_by_ratio(world) -> None:
    # line 3's ContractedCost (0.1) is no basis of its line: split by ratio, a remainder placed
    split = records(
        world,
        'select allocation_model, attempt_id, "ContractedCost" from allocation.focus_ratio_splits '
        f"where x_LineId = {line_id(3)} order by all",
    )
    mart = records(
        world,
        'select x_AllocationModel as allocation_model, "AllocatedResourceId" as attempt_id, '
        f'"ContractedCost" from marts.focus_allocated where x_LineId = {line_id(3)} order by all',
    )
    assert split == mart
    assert {row["allocation_model"] for row in split} == {"marginal", "fully_loaded"}
    for model in ("marginal", "fully_loaded"):
        assert sum(row["ContractedCost"] for row in split if row["allocation_model"] == model) == D(
            "0.1"
        )


def test_the_check_sees_a_slice_split_by_ratio_that_does_not_sum_to_its_origin(world) -> None:
    # line 3's ContractedCost is no basis of its line: split by ratio with a remainder
    failures = broken_check(
        world,
        "inflated_splits",
        'update {table} set "ContractedCost" = "ContractedCost" + 0.0000000001 '
        f"where x_LineId = {line_id(3)} and attempt_id = 'b2' and allocation_model = 'marginal'",
    )
    assert [(row["allocation_model"], row["x_SourceFormat"]) for row in failures] == [
        ("marginal", "aws_cur")
    ]


def test_the_check_sees_a_split_slice_of_no_candidate_origin(world) -> None:
    # line 1's costs are all bases of its line: a split slice on it is one the mart would take
    failures = broken_check(
        world,
        "stray_splits",
        f"insert into {{table}} select allocation_model, billing_period, {line_id(1)}, "
        "x_ProviderLineType, "
        "allocation_kind, "
        "attribution_method, attempt_id, experiment_id, unallocated_reason, "
        '"ContractedCost", "PricingCurrencyEffectiveCost" from {table} '
        f"where x_LineId = {line_id(3)} and allocation_model = 'fully_loaded' "
        "and attempt_id = 'b2'",
    )
    assert [(row["allocation_model"], row["x_SourceFormat"]) for row in failures] == [
        ("fully_loaded", None)
    ]


def test_the_check_reads_only_the_origins_split_by_ratio(world) -> None:
    # line 3's ContractedCost (0.1) is no basis; the Google Cloud row's (10, its cost before
    # credits) is its billed basis but none of its BilledCost, EffectiveCost, ListCost (6.5,
    # 6.5, 12), so the check reads it too: a superset, never fewer
    assert "where focus_costs_maybe_unmatched(focus)" in CHECK_SQL.read_text(encoding="utf-8")
    rows = records(
        world,
        expand_macros(
            "select x_LineId from normalized.focus as focus "
            "where focus_costs_maybe_unmatched(focus) order by all",
            "test",
        ),
    )
    assert [row["x_LineId"] for row in rows] == [line_id(3), GCP_LINE]
    assert exact_problems(world)["focus_unmatched_checked"] == []


def test_a_broken_slice_in_a_basis_is_seen_by_slices_sum_to_line(world) -> None:
    # line 1's BilledCost is its billed basis, so each slice's BilledCost is the slice's own
    # billed_cost: a slice off by 1e-10 is off in the mart too, and slices_sum_to_line sees it
    world.execute("create schema if not exists broken")
    world.execute(
        "create or replace table broken.model_slices as select * from allocation.model_slices"
    )
    world.execute(
        "update broken.model_slices set billed_cost = billed_cost + 0.0000000001 "
        f"where line_id = {line_id(1)} and attempt_id = 'a2' and allocation_model = 'marginal'"
    )
    world.execute(
        "create or replace table broken.cost_slices as select allocation_model as "
        "allocation_models, * exclude (allocation_model) from broken.model_slices"
    )
    sums = builders.model("allocation.profile_slice_sums").sql
    world.execute(
        "create or replace table broken.profile_slice_sums as "
        + sums.replace("allocation.cost_slices", "broken.cost_slices")
    )
    mart = builders.model("marts.focus_allocated").sql
    world.execute(
        "create or replace table broken.focus_allocated_in_a_basis as "
        + mart.replace("allocation.model_slices", "broken.model_slices")
    )
    (row,) = records(
        world,
        f'select "BilledCost" from broken.focus_allocated_in_a_basis where x_LineId = {line_id(1)} '
        "and \"AllocatedResourceId\" = 'a2' and x_AllocationModel = 'marginal'",
    )
    assert row["BilledCost"] == D("0.5000000001")
    # not one of the origins the FOCUS check reads: its rows are slices_sum_to_line's
    assert (
        records(world, f"select * from allocation.focus_ratio_splits where x_LineId = {line_id(1)}")
        == []
    )
    lines = builders.model("checks.slices_sum_to_line").sql.replace(
        "allocation.profile_slice_sums", "broken.profile_slice_sums"
    )
    failures = records(world, f"select * from ({lines})")
    assert [row["allocation_model"] for row in failures] == ["marginal"]
