"""A bill delivered mid-month with month-long Tax, Credit and RIFee lines: estimates still start
where its usage stops, are priced exactly, and the next delivery replaces them with every change
given its reason."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipeline.config.loader import Config, load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment, write_telemetry
from pipeline.warehouse.snapshots import open_database

D = Decimal
EXPORT = "ml-cur"
G5 = D("1.006")  # g5.xlarge on-demand, us-east-1
G5_12 = D("5.672")  # g5.12xlarge on-demand, us-east-1
CONFIG_PRICES = {"g5.xlarge": D("1.00"), "g5.12xlarge": G5_12}
MONTH = (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
CLOCKS = {1: datetime(2026, 11, 6, 6, tzinfo=UTC), 2: datetime(2026, 11, 8, 6, tzinfo=UTC)}


def nov(day: int, hour: int = 0, minute: int = 0) -> datetime:
    """An instant in November 2026, UTC."""
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# (attempt, experiment, instance, type, start, end, status)
HELD = (
    ("m1", "exp-m", "i-0aaa", "g5.xlarge", nov(5, 12), nov(6, 3), "succeeded"),
    ("m2", "exp-m", "i-0bbb", "g5.12xlarge", nov(6, 2), nov(6, 2, 40), "failed"),
    ("n1", "exp-n", "i-0ccc", "g5.xlarge", nov(5, 0), nov(5, 6), "succeeded"),
)


def _hours(resource: str, kind: str, start: datetime, end: datetime) -> list[CurLine]:
    lines = []
    while start < end:
        lines.append(_usage(resource, kind, start, D(1), G5))
        start += timedelta(hours=1)
    return lines


def _usage(resource: str, kind: str, start: datetime, amount: D, rate: D) -> CurLine:
    cost = (rate * amount).quantize(D("1e-10"))
    return CurLine(
        usage_start=start,
        usage_end=start + timedelta(hours=1),
        usage_type=f"BoxUsage:{kind}",
        operation="RunInstances",
        resource_id=resource,
        usage_amount=amount,
        unblended_rate=rate,
        unblended_cost=cost,
        public_on_demand_rate=rate,
        public_on_demand_cost=cost,
        instance_type=kind,
        availability_zone="us-east-1a",
        product_family="Compute Instance",
        billing_period="2026-11",
    )


def _monthly(kind: str, cost: str, **extra: Any) -> CurLine:
    """A line whose window is the whole billing period, as CUR writes tax, credits and RI fees."""
    return CurLine(
        line_item_type=kind,
        usage_start=MONTH[0],
        usage_end=MONTH[1],
        unblended_cost=D(cost),
        pricing_unit="",
        billing_period="2026-11",
        **extra,
    )


def bill(night: int) -> list[CurLine]:
    """Night 1: usage up to 6 Nov 00:00 (i-0bbb has no line yet). Night 2: up to 6 Nov 03:00,
    the month-long lines updated, and a Tax line tagged to exp-n added."""
    until = nov(6) if night == 1 else nov(6, 3)
    lines = [
        *_hours("i-0aaa", "g5.xlarge", nov(5, 12), until),
        *_hours("i-0ccc", "g5.xlarge", nov(5, 0), nov(5, 6)),
        _monthly("Tax", "1.21" if night == 1 else "1.60", tax_type="SalesTax"),
        _monthly("Credit", "-5.00", description="AWS Activate credit"),
        _monthly(
            "RIFee",
            "2.50",
            usage_type="HeavyUsage:m5.large",
            reservation_arn="arn:aws:ec2:us-east-1:111111111111:reserved-instances/r-1",
        ),
    ]
    if night == 2:
        # the instance ran the hour; m2 held it for the first 40 minutes of it
        lines.append(_usage("i-0bbb", "g5.12xlarge", nov(6, 2), D(1), G5_12))
        lines.append(
            _monthly(
                "Tax", "0.24", tax_type="SalesTax", resource_tags={"user_experiment_id": "exp-n"}
            )
        )
    return lines


def write_world(root: Path, night: int) -> Config:
    """The world as it stands on ``night`` (1 or 2), and its configuration."""
    export = root / "exports" / EXPORT
    write_cur_delivery(export, EXPORT, "2026-11", bill(night), execution_id=f"exec-{night}")
    attempts = [
        Attempt(
            attempt_id=attempt,
            experiment_id=experiment,
            parent_attempt_id=None,
            model_version="m1",
            config_version="c1",
            dataset_snapshot="d1",
            provider="aws",
            account_id="222222222222",
            region="us-east-1",
            cluster="train",
            namespace="ml",
            instance_type=kind,
            gpu_type="A10G",
            gpu_count=1 if kind == "g5.xlarge" else 4,
            node_count=1,
            capacity_type="on_demand",
            submitted_at=start,
            started_at=start,
            ended_at=end,
            status=status,
            failure_reason=None,
            metric_name=None,
            metric_value=None,
            artifact_uri=None,
        )
        for attempt, experiment, _resource, kind, start, end, status in HELD
    ]
    resources = [
        AttemptResource(attempt, resource, "ec2_instance", None, None, 1)
        for attempt, _experiment, resource, *_rest in HELD
    ]
    experiments = [
        Experiment("exp-m", "vision", "accuracy", 0.9, True),
        Experiment("exp-n", "vision", "accuracy", 0.9, True),
    ]
    write_telemetry(root / "telemetry", attempts, resources, experiments)
    prices = "".join(
        f'[[estimates.prices]]\ninstance_type = "{name}"\nregion = "us-east-1"\n'
        f'price_per_hour = "{price}"\ncurrency = "USD"\n\n'
        for name, price in CONFIG_PRICES.items()
    )
    (root / "runcost.toml").write_text(
        f'[warehouse]\npath = "warehouse"\n\n[aws]\nexports = ["exports/{EXPORT}"]\n\n'
        f'[telemetry]\npath = "telemetry"\n\n{prices}',
        encoding="utf-8",
    )
    return load_config(root / "runcost.toml")


QUERIES = {
    "period": (
        "select cost_lines, last_charge_period_end, usage_until from normalized.billing_periods"
    ),
    "estimates": (
        "select attempt_id, strftime(estimate_start, '%d %H:%M'), "
        "strftime(estimate_end, '%d %H:%M'), "
        "estimated_seconds, estimated_hours, price_source, estimated_cost "
        "from marts.cost_estimates order by 1"
    ),
    "attempts": (
        "select attempt_id, billed_cost, unbilled_estimate, cost_status from marts.attempt_costs "
        "where allocation_model = 'marginal' order by 1"
    ),
    "errors": (
        "select attempt_id, strftime(window_start, '%d %H:%M'), strftime(window_end, '%d %H:%M'), "
        "estimated_hours, estimated_cost, billed_cost, estimate_error, replaced_since_previous "
        "from marts.estimate_errors order by 1"
    ),
    "changes": (
        "select coalesce(attempt_id, experiment_id), allocation_model, previous_total, total, "
        "change, reasons from marts.cost_changes order by change_level, 1, 2"
    ),
}


def _capture(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = open_database(database)  # in UTC, with the search path its views need
    try:
        return {
            name: [tuple(row) for row in con.execute(sql).fetchall()]
            for name, sql in QUERIES.items()
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Any, Any]]:
    root = tmp_path_factory.mktemp("mid-month")
    played: dict[Any, Any] = {"root": root}
    for night in (1, 2):
        result = run_pipeline(write_world(root, night), now=CLOCKS[night])
        assert result.status == "published"
        played[night] = _capture(result.database)
    yield played


def test_month_long_lines_do_not_move_the_usage_horizon(nights: dict[Any, Any]) -> None:
    # 12 + 6 hourly lines and 3 month-long ones; the bill's usage stops at 6 Nov 00:00
    assert nights[1]["period"] == [(21, MONTH[1], nov(6))]
    assert nights[2]["period"] == [(26, MONTH[1], nov(6, 3))]


def test_attempts_past_the_usage_horizon_are_estimated_exactly(nights: dict[Any, Any]) -> None:
    # m1's instance is billed up to 00:00 and m2's has no line: both start at the account's
    # usage horizon (6 Nov 00:00), not at the tax line's end (1 Dec). 40 minutes at 5.672 are
    # 5.672 x 2400 / 3600 = 3.78133333..., rounded once: 3.7813333333
    assert nights[1]["estimates"] == [
        ("m1", "06 00:00", "06 03:00", D(10800), D(3), "config", D("3.00")),
        ("m2", "06 02:00", "06 02:40", D(2400), D("0.6666666667"), "config", D("3.7813333333")),
    ]
    assert nights[1]["attempts"] == [
        ("m1", 12 * G5, D("3.00"), "estimated"),
        ("m2", 0, D("3.7813333333"), "estimated"),
        ("n1", 6 * G5, 0, "billed"),
    ]


def test_the_next_delivery_replaces_the_estimates_and_publishes_the_error(
    nights: dict[Any, Any],
) -> None:
    assert nights[2]["estimates"] == []
    # m2 held 40 of the hour i-0bbb ran: 2/3 of 5.672
    assert nights[2]["attempts"] == [
        ("m1", 15 * G5, 0, "billed"),
        ("m2", D("3.7813333333"), 0, "billed"),
        ("n1", 6 * G5, 0, "billed"),
    ]
    assert nights[2]["errors"] == [
        ("m1", "06 00:00", "06 03:00", D(3), D("3.00"), 3 * G5, D("3.00") - 3 * G5, True),
        ("m2", "06 02:00", "06 02:40", D("0.6666666667"), D("3.7813333333"), D("3.7813333333"),
         0, True),
    ]  # fmt: skip


def test_every_change_after_the_complete_delivery_has_its_reason(nights: dict[Any, Any]) -> None:
    # m1: billed 12 hours + 3 estimated before, 15 billed now; the 3 new hours are past the
    # previous usage horizon, so no billed hour was restated. exp-n: its attempt did not move,
    # but the replaced delivery brought a tax line tagged to it (0.24)
    expected = [
        ("m1", 12 * G5 + 3, 15 * G5, 3 * G5 - 3, "estimate_replaced"),
        ("m2", D("3.7813333333"), D("3.7813333333"), 0, "estimate_replaced"),
        ("exp-m", 12 * G5 + 3 + D("3.7813333333"), 15 * G5 + D("3.7813333333"), 3 * G5 - 3,
         "estimate_replaced"),
        ("exp-n", 6 * G5, 6 * G5 + D("0.24"), D("0.24"), "restated_delivery"),
    ]  # fmt: skip
    assert nights[2]["changes"] == [
        (name, model, before, after, change, reasons)
        for name, before, after, change, reasons in expected
        for model in ("fully_loaded", "marginal")
    ]


def test_runcost_diff_gives_every_change_a_reason(nights: dict[Any, Any]) -> None:
    import csv
    import io

    from click.testing import CliRunner

    from pipeline.cli.app import main

    config = str(nights["root"] / "runcost.toml")
    result = CliRunner().invoke(
        main, ["diff", "--config", config, "--format", "csv", "--allocation-model", "marginal"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [(row["attempt_id"] or row["experiment_id"], row["reasons"]) for row in rows] == [
        ("m1", "estimate_replaced"),
        ("m2", "estimate_replaced"),
        ("exp-m", "estimate_replaced"),
        ("exp-n", "restated_delivery"),
    ]
