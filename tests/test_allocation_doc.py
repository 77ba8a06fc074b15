"""docs/allocation.md's worked example, run as written: its policy, its lines, its numbers."""

from __future__ import annotations

import re
import tomllib
from decimal import Decimal
from pathlib import Path

from builders import at, build_models, cur_line, records

DOC = Path(__file__).resolve().parents[1] / "docs" / "allocation.md"
D = Decimal


def worked_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## Worked example") : text.index("## Rounding")]


def test_the_worked_example_gives_the_numbers_the_doc_states(tmp_path: Path) -> None:
    section = worked_example()
    policy = tomllib.loads(re.search(r"```toml\n(.*?)```", section, re.S).group(1))
    attempts = [
        {"attempt_id": "A", "experiment_id": "e", "started_at": at(10), "ended_at": at(11),
         "gpu_count": 4},
        {"attempt_id": "B", "experiment_id": "e", "started_at": at(10, 30), "ended_at": at(12),
         "gpu_count": 8},
    ]  # fmt: skip
    resources = [
        {"attempt_id": "A", "resource_id": "i-1", "vcpu_count": 16.0, "memory_gib": 64.0},
        {"attempt_id": "B", "resource_id": "i-2", "started_at": at(10, 30), "ended_at": at(12),
         "vcpu_count": 16.0, "memory_gib": 128.0},
    ]  # fmt: skip
    lines = [
        cur_line(line_item_resource_id="i-1", line_item_unblended_cost=10.0,
                 line_item_usage_type="BoxUsage:g5.12xlarge",
                 resource_tags={"user_attempt_id": "A"}),
        cur_line(line_item_resource_id="i-2", line_item_unblended_cost=6.0,
                 line_item_usage_type="BoxUsage:g5.12xlarge"),
        cur_line(line_item_product_code="AmazonEKS", line_item_unblended_cost=1.2,
                 line_item_resource_id="arn:aws:eks:us-east-1:1:cluster/train",
                 line_item_usage_type="USE1-AmazonEKS-Hours:perCluster"),
        cur_line(line_item_resource_id="i-mon", line_item_unblended_cost=0.48,
                 line_item_usage_type="BoxUsage:m5.xlarge",
                 resource_tags={"user_role": "monitoring"}),
        cur_line(line_item_line_item_type="Credit", line_item_unblended_cost=-2.6, pricing_unit="",
                 line_item_usage_start_date=at(0), line_item_usage_end_date=at(0, day=31)),
        cur_line(line_item_product_code="AmazonBedrock", line_item_unblended_cost=0.75,
                 line_item_usage_type="USE1-Claude3Haiku-input-tokens", pricing_unit="1K tokens",
                 resource_tags={"user_attempt_id": "A"}),
    ]  # fmt: skip

    con, report = build_models(tmp_path, lines, attempts, resources, config=policy)

    assert report.check_failures == []
    costs = records(
        con,
        "select attempt_id, allocation_model, effective_cost from marts.attempt_costs "
        "order by attempt_id, allocation_model desc",
    )
    results = {(row["attempt_id"], row["allocation_model"]): row["effective_cost"] for row in costs}
    assert results == {
        ("A", "marginal"): D("10.00"), ("A", "fully_loaded"): D("8.88"),
        ("B", "marginal"): D("3.00"), ("B", "fully_loaded"): D("3.20"),
    }  # fmt: skip
    for attempt in ("A", "B"):
        marginal, loaded = results[attempt, "marginal"], results[attempt, "fully_loaded"]
        row = f"| {attempt} | {marginal:.2f} | {loaded:.2f} |"
        assert row in section, row
    unallocated = records(
        con,
        "select allocation_model, unallocated_reason, sum(effective_cost) as cost "
        "from marts.unallocated_costs group by all order by all",
    )
    assert [tuple(row.values()) for row in unallocated] == [
        ("fully_loaded", "excluded_inference", D("0.75")),
        ("fully_loaded", "outside_any_attempt", D("3.00")),
        ("marginal", "excluded_inference", D("0.75")),
        ("marginal", "no_matching_attempt", D("1.68")),
        ("marginal", "no_resource_id", D("-2.60")),
        ("marginal", "outside_any_attempt", D("3.00")),
    ]
    assert "marginal 2.83" in section and "fully loaded 3.75" in section
    shares = records(
        con,
        "select pool_name, attempt_id, effective_cost from marts.allocation_detail "
        "where allocation_method = 'pool' order by pool_name, attempt_id",
    )
    assert [tuple(row.values()) for row in shares] == [
        ("credits", "A", D("-2.00")), ("credits", "B", D("-0.60")),
        ("monitoring", "A", D("0.28")), ("monitoring", "B", D("0.20")),
        ("platform", "A", D("0.60")), ("platform", "B", D("0.60")),
    ]  # fmt: skip
    total = records(con, "select sum(effective_cost) as bill from normalized.cost_lines")
    assert total == [{"bill": D("15.83")}] and "15.83" in section
