"""Conservation, property-tested: random bills, attempts and pools always balance exactly."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, Decimal
from typing import Any

from builders import BASES, MODELS, build_models, cur_line, records
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from schemas.attempts import STATUSES

LINE_TYPES = (
    "Usage", "DiscountedUsage", "SavingsPlanCoveredUsage", "SavingsPlanNegation",
    "SavingsPlanRecurringFee", "SavingsPlanUpfrontFee", "RIFee", "Fee", "Credit", "Refund", "Tax",
    "BundledDiscount", "EdpDiscount", "PrivateRateDiscount",
)  # fmt: skip
# CUR money columns the cost bases read besides line_item_unblended_cost; any may be NULL
MONEY_COLUMNS = (
    "line_item_net_unblended_cost", "pricing_public_on_demand_cost",
    "savings_plan_savings_plan_effective_cost", "savings_plan_net_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date", "savings_plan_used_commitment",
    "reservation_effective_cost", "reservation_net_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period",
    "reservation_net_unused_amortized_upfront_fee_for_billing_period",
    "reservation_unused_recurring_fee", "reservation_net_unused_recurring_fee",
)  # fmt: skip
SPLIT_OPERATIONS = ("EKSPod-EC2", "ECSTask-EC2")
RESOURCES = ("i-a", "i-b", "vol-c", "", None)
ATTEMPT_IDS = tuple(f"att-{index}" for index in range(8))
EXPERIMENT_IDS = ("exp-0", "exp-1", "exp-2")
SELECTORS = (
    "service_name = 'AmazonEKS'",
    "true",
    "resource_id is null",
    "charge_category = 'Purchase'",
    "provider_line_type = 'Tax' or service_name = 'AmazonS3'",
)
ATTEMPT_CONDITIONS = ("true", "status <> 'cancelled'", "gpu_count >= 2", "experiment_id = 'exp-1'")
# lines start within five days around a month end, so two billing periods appear
ORIGIN = datetime(2026, 9, 29, tzinfo=UTC)
PERIODS = {9: (datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC)),
           10: (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))}  # fmt: skip
PAYERS = ("111111111111", "333333333333")


def _amount(negative: bool, digits: list[int]) -> Decimal:
    return Decimal(int("".join(map(str, digits)))).scaleb(-6) * (-1 if negative else 1)


# up to 6 decimals and |amount| < 1e7; the last branch draws all 13 digits one by one (integer
# draws lean to small numbers), as real bills have them
money = st.one_of(
    st.just(Decimal(0)),
    st.decimals(min_value=-100, max_value=100, places=6),
    st.builds(_amount, st.booleans(), st.lists(st.integers(0, 9), min_size=13, max_size=13)),
)
maybe_money = st.one_of(st.none(), money)
tag_sets = st.fixed_dictionaries(
    {},
    optional={
        "user_attempt_id": st.sampled_from(("", "att-ghost", *ATTEMPT_IDS)),
        "user_experiment_id": st.sampled_from(("", "exp-ghost", *EXPERIMENT_IDS)),
    },
)
# pods mostly carry an attempt tag (known or not), so the split path is taken often
pod_tag_sets = st.one_of(
    tag_sets,
    st.fixed_dictionaries(
        {"user_attempt_id": st.sampled_from(("att-ghost", *ATTEMPT_IDS))},
        optional={"user_experiment_id": st.sampled_from(EXPERIMENT_IDS)},
    ),
)
hour_offsets = st.integers(min_value=0, max_value=5 * 24 - 1)
minute_offsets = st.integers(min_value=-24 * 60, max_value=6 * 24 * 60)


def moment(minutes: int | None, plus: int | None = 0) -> datetime | None:
    """ORIGIN + minutes (+ plus); None when either is None."""
    if minutes is None or plus is None:
        return None
    return ORIGIN + timedelta(minutes=minutes + plus)


def plain_line(start: datetime = PERIODS[10][0], hours: int = 1, **overrides: Any) -> dict:
    """A line as the strategies draw it, amounts as Decimals: untagged EC2 usage, cost 0."""
    period_start, period_end = PERIODS[start.month]
    line = {
        "bill_payer_account_id": PAYERS[0],
        "bill_billing_period_start_date": period_start,
        "bill_billing_period_end_date": period_end,
        "line_item_line_item_type": "Usage",
        "line_item_product_code": "AmazonEC2",
        "line_item_operation": "RunInstances",
        "line_item_resource_id": None,
        "line_item_usage_start_date": start,
        "line_item_usage_end_date": min(start + timedelta(hours=hours), period_end),
        "pricing_unit": "Hrs",
        "line_item_usage_amount": 1.0,
        "reservation_reservation_a_r_n": None,
        "resource_tags": {},
        "line_item_unblended_cost": Decimal(0),
        **dict.fromkeys(MONEY_COLUMNS),
    }
    line.update(overrides)
    return line


@st.composite
def bill_lines(draw: st.DrawFn) -> dict[str, Any]:
    """One CUR line of any type over an hour, some hours or its whole billing period."""
    start = ORIGIN + timedelta(hours=draw(hour_offsets))
    hours = draw(st.sampled_from((1, 2, 5, 24, 48)))
    if draw(st.integers(0, 4)) == 0:
        start, hours = PERIODS[start.month][0], 31 * 24
    operations = ("RunInstances", None, *SPLIT_OPERATIONS)
    return plain_line(
        start,
        hours,
        bill_payer_account_id=draw(st.sampled_from(PAYERS)),
        line_item_line_item_type=draw(st.sampled_from(LINE_TYPES)),
        line_item_product_code=draw(st.sampled_from(("AmazonEC2", "AmazonEKS", "AmazonS3"))),
        line_item_operation=draw(
            st.sampled_from(operations) if draw(st.integers(0, 9)) == 0 else st.just(operations[0])
        ),
        line_item_resource_id=draw(st.sampled_from(RESOURCES)),
        pricing_unit=draw(st.sampled_from(("Hrs", "GB-Mo", None))),
        line_item_usage_amount=draw(
            st.one_of(st.none(), st.floats(min_value=-1, max_value=48, allow_nan=False))
        ),
        reservation_reservation_a_r_n=draw(
            st.sampled_from((None, "", "arn:aws:ec2:us-east-1:1:reserved-instances/r-1"))
        ),
        resource_tags=draw(tag_sets),
        line_item_unblended_cost=draw(money),
        **{column: draw(maybe_money) for column in MONEY_COLUMNS},
    )


@st.composite
def split_groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An EC2 instance-hour and the EKS pod rows that re-split it, adding up to its cost."""
    start = ORIGIN + timedelta(hours=draw(hour_offsets))
    resource = draw(st.sampled_from(("i-a", "i-b")))
    cost = draw(st.one_of(st.decimals(min_value=0, max_value=100, places=6), money.map(abs)))
    instance = plain_line(
        start,
        line_item_resource_id=resource,
        product_instance_type="p5.48xlarge",
        line_item_unblended_cost=cost,
        line_item_net_unblended_cost=draw(maybe_money),
        pricing_public_on_demand_cost=draw(maybe_money),
        resource_tags=draw(tag_sets),
    )
    # split and unused cost of each pod: weights of the instance's cost, the last part exact
    pods = draw(st.integers(min_value=1, max_value=3))
    weights = draw(st.lists(st.integers(0, 100), min_size=2 * pods, max_size=2 * pods))
    total = sum(weights) or 1
    parts = [(cost * weight / total).quantize(Decimal("1e-6"), ROUND_DOWN) for weight in weights]
    parts[-1] = cost - sum(parts[:-1])
    return [instance] + [
        plain_line(
            start,
            line_item_operation=draw(st.sampled_from(SPLIT_OPERATIONS)),
            line_item_resource_id=f"arn:aws:eks:pod/{resource}/{pod}",
            split_line_item_parent_resource_id=resource,
            split_line_item_split_cost=parts[2 * pod],
            split_line_item_unused_cost=parts[2 * pod + 1],
            resource_tags=draw(pod_tag_sets),
        )
        for pod in range(pods)
    ]


@st.composite
def telemetry(draw: st.DrawFn) -> tuple[list[dict], list[dict], list[dict]]:
    """Attempts (0-8), the resources they held, and the experiments table."""
    ids = draw(st.lists(st.sampled_from(ATTEMPT_IDS), max_size=8, unique=True))
    gpus = st.one_of(st.none(), st.integers(min_value=0, max_value=8))
    durations = st.one_of(st.none(), st.integers(min_value=0, max_value=48 * 60))
    attempts = []
    for attempt_id in ids:
        started = draw(st.one_of(st.none(), minute_offsets))
        attempts.append(
            {
                "attempt_id": attempt_id,
                "experiment_id": draw(st.sampled_from(EXPERIMENT_IDS)),
                "status": draw(st.sampled_from(STATUSES)),
                "gpu_count": draw(gpus),
                "started_at": moment(started),
                "ended_at": moment(started, draw(durations)),
            }
        )
    resources = []
    for _ in range(draw(st.integers(min_value=0, max_value=10)) if ids else 0):
        started = draw(st.one_of(st.none(), minute_offsets))
        resources.append(
            {
                "attempt_id": draw(st.sampled_from(ids)),
                "resource_id": draw(st.sampled_from(RESOURCES)),
                "started_at": moment(started),
                "ended_at": moment(started, draw(durations)),
                "gpu_count": draw(gpus),
            }
        )
    experiment_ids = draw(st.lists(st.sampled_from(EXPERIMENT_IDS), unique=True))
    return attempts, resources, [{"experiment_id": name} for name in experiment_ids]


pools = st.lists(
    st.fixed_dictionaries(
        {
            "selector": st.sampled_from(SELECTORS),
            "driver": st.sampled_from(("gpu_seconds", "even")),
            "spread": st.sampled_from(("charge_period", "billing_period")),
            "attempts": st.sampled_from(ATTEMPT_CONDITIONS),
        }
    ),
    max_size=2,
)


def _first(*values: Decimal | None) -> Decimal:
    return next((value for value in values if value is not None), Decimal(0))


def oracle_bases(line: dict[str, Any]) -> dict[str, Decimal]:
    """The four bases of a line by the brief's rules, in exact Decimal arithmetic."""
    kind = line["line_item_line_item_type"]
    unblended = line["line_item_unblended_cost"]
    no_ri_fee = (line["reservation_reservation_a_r_n"] or "") == ""
    unused_commitment = _first(line["savings_plan_total_commitment_to_date"]) - _first(
        line["savings_plan_used_commitment"]
    )
    upfront = line["reservation_unused_amortized_upfront_fee_for_billing_period"]
    recurring = line["reservation_unused_recurring_fee"]
    zero = Decimal(0)
    effective = {
        "SavingsPlanCoveredUsage": _first(line["savings_plan_savings_plan_effective_cost"]),
        "SavingsPlanRecurringFee": unused_commitment,
        "SavingsPlanNegation": zero,
        "SavingsPlanUpfrontFee": zero,
        "DiscountedUsage": _first(line["reservation_effective_cost"]),
        "RIFee": _first(upfront) + _first(recurring),
        "Fee": unblended if no_ri_fee else zero,
    }.get(kind, unblended)
    net_unblended = _first(line["line_item_net_unblended_cost"], unblended)
    net = {
        "SavingsPlanCoveredUsage": _first(
            line["savings_plan_net_savings_plan_effective_cost"],
            line["savings_plan_savings_plan_effective_cost"],
        ),
        "SavingsPlanRecurringFee": unused_commitment,
        "SavingsPlanNegation": zero,
        "SavingsPlanUpfrontFee": zero,
        "DiscountedUsage": _first(
            line["reservation_net_effective_cost"], line["reservation_effective_cost"]
        ),
        "RIFee": _first(
            line["reservation_net_unused_amortized_upfront_fee_for_billing_period"], upfront
        )
        + _first(line["reservation_net_unused_recurring_fee"], recurring),
        "Fee": net_unblended if no_ri_fee else zero,
        "EdpDiscount": zero,
        "PrivateRateDiscount": zero,
    }.get(kind, net_unblended)
    listed = (
        zero if kind == "SavingsPlanNegation" else _first(line["pricing_public_on_demand_cost"])
    )
    return dict(zip(BASES, (unblended, effective, listed, net), strict=True))


@dataclass
class Expected:
    """What the brief's rules say about a generated bill, worked out in Python."""

    bill: dict[str, Decimal] = field(default_factory=lambda: dict.fromkeys(BASES, Decimal(0)))
    # (payer, billing period, basis) -> amount
    bills: dict[tuple[str, str, str], Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    by_tag: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    by_experiment_tag: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))


def expect(lines: list[dict], attempts: list[dict], experiments: list[dict]) -> Expected:
    expected = Expected()
    attempt_ids = {row["attempt_id"] for row in attempts}
    known_experiments = {row["experiment_id"] for row in [*attempts, *experiments]}
    for line in lines:
        if line["line_item_operation"] in SPLIT_OPERATIONS:
            continue
        amounts = oracle_bases(line)
        period = line["bill_billing_period_start_date"].strftime("%Y-%m")
        for basis in BASES:
            expected.bill[basis] += amounts[basis]
            expected.bills[line["bill_payer_account_id"], period, basis] += amounts[basis]
        tags = line["resource_tags"]
        if tags.get("user_attempt_id") in attempt_ids:
            expected.by_tag[tags["user_attempt_id"]] += amounts["effective_cost"]
        elif tags.get("user_experiment_id") in known_experiments:
            expected.by_experiment_tag[tags["user_experiment_id"]] += amounts["effective_cost"]
    return expected


def as_cur(line: dict[str, Any]) -> dict[str, Any]:
    """The line as the export has it: money as DOUBLE."""
    return cur_line(**{k: float(v) if isinstance(v, Decimal) else v for k, v in line.items()})


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=st.lists(bill_lines(), min_size=1, max_size=40),
    splits=st.lists(split_groups(), max_size=2),
    people=telemetry(),
    pool_settings=pools,
    resource_time=st.booleans(),
)
# CUR money is DOUBLE: 1234567.123456 must arrive as exactly that, not 1234567.1234559998
@example(
    lines=[plain_line(line_item_unblended_cost=Decimal("1234567.123456"))],
    splits=[],
    people=([], [], []),
    pool_settings=[],
    resource_time=True,
)
def test_every_cost_line_is_placed_exactly_once(
    tmp_path, lines, splits, people, pool_settings, resource_time
):
    lines = [*lines, *(row for group in splits for row in group)]
    attempts, resources, experiments = people
    config = {
        "attribution": {"resource_time": resource_time},
        "pools": [{"name": f"pool-{index}", **pool} for index, pool in enumerate(pool_settings)],
    }
    con, report = build_models(
        tmp_path, [as_cur(line) for line in lines], attempts, resources, experiments, config
    )
    try:
        assert report.check_failures == []
        expected = expect(lines, attempts, experiments)
        assert_conserved(con, expected)
        assert_every_attempt_once(con, attempts)
        assert_tag_rules(con, expected)
        held = {row["resource_id"] for row in resources if (row["resource_id"] or "").strip()}
        assert_resource_time_only_on_held_resources(con, held if resource_time else set())
        assert_models_differ_only_by_pools(con)
    finally:
        con.close()


def sums(con, source: str) -> dict[tuple[str, str], Decimal]:
    """{(allocation_model, basis): amount} over a table or filtered query."""
    columns = ", ".join(f"sum({basis}) as {basis}" for basis in BASES)
    found: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in records(con, f"select allocation_model, {columns} from {source} group by all"):
        for basis in BASES:
            found[row["allocation_model"], basis] += row[basis] or Decimal(0)
    return found


def assert_conserved(con, expected: Expected) -> None:
    """attempts + experiment-only slices + unallocated = the bill, per model and basis."""
    # attempt_costs already holds the shared slices (every shared slice names an attempt)
    attempts = sums(con, "marts.attempt_costs")
    experiment_only = sums(
        con,
        "(select * from allocation.cost_allocations "
        "where attempt_id is null and experiment_id is not null)",
    )
    unallocated = sums(con, "marts.unallocated_costs")
    experiments = sums(con, "marts.experiment_costs")
    for key in ((model, basis) for model in MODELS for basis in BASES):
        placed = attempts[key] + experiment_only[key] + unallocated[key]
        assert placed == expected.bill[key[1]], key
        assert experiments[key] + unallocated[key] == placed, key

    reconciliation = records(
        con,
        "select allocation_model, billing_account_id, billing_period, cost_basis, bill_total, "
        "difference from marts.reconciliation",
    )
    keys = [
        (row["billing_account_id"], row["billing_period"], row["cost_basis"])
        for row in reconciliation
    ]
    assert sorted(keys) == sorted(key for key in expected.bills for _ in MODELS)
    for key, row in zip(keys, reconciliation, strict=True):
        assert (row["bill_total"], row["difference"]) == (expected.bills[key], 0), key


def assert_every_attempt_once(con, attempts: list[dict]) -> None:
    rows = records(con, "select attempt_id, allocation_model from marts.attempt_costs")
    assert sorted((row["attempt_id"], row["allocation_model"]) for row in rows) == sorted(
        (row["attempt_id"], model) for row in attempts for model in MODELS
    )


def assert_tag_rules(con, expected: Expected) -> None:
    """Rules 1 and 2: known attempt tags place whole lines; else known experiment tags do."""
    for method, column, amounts in (
        ("tag", "attempt_id", expected.by_tag),
        ("experiment_tag", "experiment_id", expected.by_experiment_tag),
    ):
        rows = records(
            con,
            f"select {column} as owner, sum(effective_cost) as amount "
            "from allocation.cost_allocations "
            "where allocation_model = 'marginal' and attribution_method = ? group by all",
            method,
        )
        assert {row["owner"]: row["amount"] for row in rows} == dict(amounts), method


def assert_resource_time_only_on_held_resources(con, held: set[str]) -> None:
    timed = records(
        con,
        "select distinct cost_lines.resource_id from allocation.cost_allocations "
        "inner join normalized.cost_lines using (line_id) "
        "where allocation_model = 'marginal' and attribution_method = 'resource_time'",
    )
    assert {row["resource_id"] for row in timed} <= held


def assert_models_differ_only_by_pools(con) -> None:
    """Marginal shares nothing; both models hold the same attributed slices."""
    rows = records(
        con,
        "select allocation_model, allocation_kind, line_id, attempt_id, experiment_id, "
        "billed_cost, effective_cost, list_cost, net_cost from allocation.cost_allocations "
        "where allocation_kind = 'attributed' or allocation_model = 'marginal'",
    )
    kinds = {row["allocation_kind"] for row in rows if row["allocation_model"] == "marginal"}
    assert kinds <= {"attributed", "unallocated"}
    by_model: dict[str, set[tuple]] = {model: set() for model in MODELS}
    for row in rows:
        if row.pop("allocation_kind") == "attributed":
            by_model[row.pop("allocation_model")].add(tuple(row.values()))
    assert by_model["marginal"] == by_model["fully_loaded"]
