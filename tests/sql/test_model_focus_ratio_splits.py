"""allocation.focus_ratio_splits on charges whose slices differ between the allocation models: each
model's rounding remainder of a ContractedCost split by ratio goes to that model's slice of the
largest amount (ties to the first by its keys), a slice both models share is split once for each,
and each model's slices sum exactly to the charge."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import at, build_models, cur_line, line_id, records, run_check

D = Decimal
SP_ARN = "arn:aws:savingsplans::111111111111:savingsplan/sp-1"
EKS = "arn:aws:eks:us-east-1:1:cluster/ml"
HELD_EKS = "arn:aws:eks:us-east-1:1:cluster/held"


def covered_fee(resource: str, contracted: str) -> dict:
    """An hour of a cluster's fee under a Savings Plan: its ContractedCost (the net rate) is none
    of its four bases (1, 0.7, 1.25, 0.65), so it is split by ratio with a rounding remainder."""
    return cur_line(
        line_item_line_item_type="SavingsPlanCoveredUsage",
        line_item_product_code="AmazonEKS",
        line_item_resource_id=resource,
        line_item_unblended_rate="1.0",
        line_item_unblended_cost=1.0,
        line_item_net_unblended_rate=contracted,
        line_item_net_unblended_cost=float(contracted),
        pricing_public_on_demand_rate="1.25",
        pricing_public_on_demand_cost=1.25,
        savings_plan_savings_plan_a_r_n=SP_ARN,
        savings_plan_savings_plan_effective_cost=0.7,
        savings_plan_net_savings_plan_effective_cost=0.65,
    )


LINES = [
    # line 0: no attempt holds the cluster: unallocated in the marginal model (one slice), spread
    # evenly over e1's attempts (a1, a2) by the pool in the fully loaded one
    covered_fee(EKS, "0.0000000003"),
    # line 1: b1 holds the cluster for its first 20 minutes (a third in both models); the rest is
    # unallocated in the marginal model and spread over a1 and a2 in the fully loaded one
    covered_fee(HELD_EKS, "0.0000000007"),
]
ATTEMPTS = [
    {"attempt_id": attempt, "experiment_id": experiment, "started_at": at(10),
     "ended_at": at(11), "gpu_count": 1}
    for attempt, experiment in (("a1", "e1"), ("a2", "e1"), ("b1", "e2"))
]  # fmt: skip
RESOURCES = [
    {"attempt_id": "b1", "resource_id": HELD_EKS, "started_at": at(10), "ended_at": at(10, 20)}
]
CONFIG = {
    "pools": [
        {"name": "eks", "selector": "service_name = 'AmazonEKS'", "driver": "even",
         "attempts": "experiment_id = 'e1'"},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    con, report = build_models(
        tmp_path_factory.mktemp("focus_ratio_splits"), LINES, ATTEMPTS, RESOURCES, config=CONFIG
    )
    assert not report.check_failures
    return con


def splits(con, line: int) -> dict[tuple, Decimal]:
    """One line's split ContractedCost by (model, kind, attempt)."""
    rows = records(
        con,
        'select allocation_model, allocation_kind, attempt_id, "ContractedCost" '
        "from allocation.focus_ratio_splits where x_LineId = ?",
        line,
    )
    found = {
        (row["allocation_model"], row["allocation_kind"], row["attempt_id"]): row["ContractedCost"]
        for row in rows
    }
    assert len(found) == len(rows)
    return found


def test_each_model_places_its_own_remainder_on_a_slice_of_its_own(world) -> None:
    # 0.0000000003 / 2 rounds to 0.0000000002 on each pooled half: a1, first by attempt of the
    # two equal slices, takes the fully loaded remainder; the marginal model's one slice the whole
    assert splits(world, line_id(0)) == {
        ("marginal", "unallocated", None): D("0.0000000003"),
        ("fully_loaded", "shared", "a1"): D("0.0000000001"),
        ("fully_loaded", "shared", "a2"): D("0.0000000002"),
    }


def test_a_slice_both_models_share_is_split_once_in_each(world) -> None:
    # b1's third (0.0000000007 / 3 rounds to 0.0000000002) is a slice of both models and never
    # takes a remainder: the marginal rest (two thirds) is the largest slice of its model, and a2,
    # which took the pool's billed remainder (0.3333333334), the largest of the fully loaded one
    assert splits(world, line_id(1)) == {
        ("marginal", "attributed", "b1"): D("0.0000000002"),
        ("marginal", "unallocated", None): D("0.0000000005"),
        ("fully_loaded", "attributed", "b1"): D("0.0000000002"),
        ("fully_loaded", "shared", "a1"): D("0.0000000002"),
        ("fully_loaded", "shared", "a2"): D("0.0000000003"),
    }


@pytest.mark.parametrize("line", [0, 1])
def test_each_model_sums_exactly_to_the_charge(world, line: int) -> None:
    (origin,) = records(
        world, 'select "ContractedCost" from normalized.focus where x_LineId = ?', line_id(line)
    )
    found = splits(world, line_id(line))
    for model in ("marginal", "fully_loaded"):
        total = sum(amount for (name, _, _), amount in found.items() if name == model)
        assert total == origin["ContractedCost"]
    assert run_check(world, "focus_allocated_sums_to_origin") == []
