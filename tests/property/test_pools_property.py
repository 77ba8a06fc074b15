"""Pools, property-tested: random selectors, drivers, exclusions; slices always sum to the line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from builders import BASES, build_models, cur_line, records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.config.pools import COST_BASES, DEFAULT_EXCLUDE, POOL_DRIVERS

START = datetime(2026, 10, 1, tzinfo=UTC)
ATTEMPT_IDS = ("a0", "a1", "a2", "a3")
# the selector grammar: atoms joined by and / or, optionally negated
ATOMS = (
    "resource_class = 'compute'",
    "resource_class in ('credit', 'platform')",
    "service_name = 'AmazonEKS'",
    "resource_id is null",
    "billed_cost > 0",
    "provider_line_type = 'Credit'",
    "usage_type like '%Hosting%'",
    "true",
)
selectors = st.recursive(
    st.sampled_from(ATOMS),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) and ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) or ({b})", inner, inner),
        st.builds(lambda a: f"not ({a})", inner),
    ),
    max_leaves=3,
)
money = st.decimals(min_value=-50, max_value=500, places=6)


@st.composite
def pools(draw: st.DrawFn) -> list[dict]:
    found = []
    for number in range(draw(st.integers(0, 3))):
        driver = draw(st.sampled_from(POOL_DRIVERS))
        pool = {
            "name": f"pool-{number}",
            "selector": draw(selectors),
            "driver": driver,
            "spread": draw(st.sampled_from(("charge_period", "billing_period"))),
            "attempts": draw(st.sampled_from(("true", "gpu_count >= 2", "attempt_id <> 'a1'"))),
        }
        if driver == "cost_weighted":
            pool["basis"] = draw(st.sampled_from(COST_BASES))
        found.append(pool)
    return found


@st.composite
def lines(draw: st.DrawFn) -> dict:
    hour = draw(st.integers(0, 5))
    kind, product, usage_type = draw(
        st.sampled_from(
            (
                ("Usage", "AmazonEC2", "BoxUsage:g5.xlarge"),
                ("Usage", "AmazonEKS", "USE1-AmazonEKS-Hours:perCluster"),
                ("Usage", "AmazonS3", "TimedStorage-ByteHrs"),
                ("Usage", "AmazonSageMaker", "USE1-Hosting:ml.g5.xlarge"),
                ("Usage", "AmazonBedrock", "USE1-Claude3Haiku-input-tokens"),
                ("Credit", "AmazonEC2", ""),
                ("Tax", "AmazonEC2", ""),
            )
        )
    )
    billed = draw(money)
    tags = draw(st.sampled_from(({}, {"user_attempt_id": "a0"}, {"user_attempt_id": "a2"})))
    return cur_line(
        line_item_line_item_type=kind,
        line_item_product_code=product,
        line_item_usage_type=usage_type,
        line_item_resource_id=draw(st.sampled_from(("i-a", "vol-b", None))),
        line_item_usage_start_date=START + timedelta(hours=hour),
        line_item_usage_end_date=START + timedelta(hours=hour + draw(st.integers(1, 3))),
        line_item_unblended_cost=float(billed),
        line_item_net_unblended_cost=draw(st.one_of(st.none(), money.map(float))),
        pricing_public_on_demand_cost=float(draw(money)),
        resource_tags=tags,
    )


@st.composite
def telemetry(draw: st.DrawFn) -> tuple[list[dict], list[dict]]:
    attempts, resources = [], []
    for attempt_id in ATTEMPT_IDS[: draw(st.integers(1, 4))]:
        start = draw(st.one_of(st.none(), st.integers(0, 300)))
        length = draw(st.integers(1, 400))
        attempts.append(
            {
                "attempt_id": attempt_id,
                "experiment_id": "e",
                "started_at": None if start is None else START + timedelta(minutes=start),
                "ended_at": None if start is None else START + timedelta(minutes=start + length),
                "gpu_count": draw(st.one_of(st.none(), st.integers(0, 8))),
            }
        )
        if draw(st.booleans()):
            resources.append(
                {
                    "attempt_id": attempt_id,
                    "resource_id": draw(st.sampled_from(("i-a", "vol-b"))),
                    "vcpu_count": draw(st.one_of(st.none(), st.sampled_from((0.5, 4.0, 96.0)))),
                    "memory_gib": draw(st.one_of(st.none(), st.sampled_from((1.0, 16.0)))),
                }
            )
    return attempts, resources


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    bill=st.lists(lines(), min_size=1, max_size=8),
    people=telemetry(),
    pool_settings=pools(),
    exclude=st.sampled_from((DEFAULT_EXCLUDE, "", "resource_class = 'storage'")),
)
def test_slices_sum_to_each_line_and_the_bill_reconciles(
    tmp_path, bill, people, pool_settings, exclude
):
    attempts, resources = people
    config = {"pools": pool_settings, "allocation": {"exclude": exclude}}

    con, report = build_models(tmp_path, bill, attempts, resources, config=config)
    try:
        assert report.check_failures == []
        sums = ", ".join(
            f"sum({basis}) as {basis}, any_value(line_{basis}) as line_{basis}" for basis in BASES
        )
        per_line = records(
            con,
            f"select allocation_model, line_id, {sums} from marts.allocation_detail group by all",
        )
        assert len(per_line) == 2 * len(bill)
        for row in per_line:
            for basis in BASES:
                assert row[basis] == row[f"line_{basis}"], (row, basis)
        reconciliation = records(
            con, "select allocation_model, cost_basis, difference from marts.reconciliation"
        )
        assert {row["allocation_model"] for row in reconciliation} == {"marginal", "fully_loaded"}
        assert all(row["difference"] == Decimal(0) for row in reconciliation), reconciliation
        excluded = records(
            con,
            "select count(*) as n from marts.allocation_detail "
            "where unallocated_reason = 'excluded_inference' and allocation_kind <> 'unallocated'",
        )
        assert excluded == [{"n": 0}]
    finally:
        con.close()
