"""Three nights of one small world: telemetry first, then a partial bill, then the final bill."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from pipeline.config.loader import Config, load_config
from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment, write_telemetry

EXPORT = "ml-cur"
PERIOD = "2026-10"
G5 = Decimal("1.0060")  # g5.xlarge on-demand, us-east-1
P4D = Decimal("32.7726")  # p4d.24xlarge on-demand, us-east-1
# What the analyst guessed before any bill: a little under the list price
CONFIG_PRICES = {"g5.xlarge": Decimal("1.00"), "p4d.24xlarge": Decimal("32.00")}
INVOICE = "INV-2026-10-0001"
TAX = Decimal("10.00")


def oct30(hour: int, minute: int = 0) -> datetime:
    """An instant on 2026-10-30 (hour may run past 23 into the 31st)."""
    return datetime(2026, 10, 30, tzinfo=UTC) + timedelta(hours=hour, minutes=minute)


@dataclass(frozen=True)
class Held:
    """One attempt on one instance: what telemetry says and what the final bill charges."""

    attempt_id: str
    experiment_id: str
    resource_id: str
    instance_type: str
    rate: Decimal
    start: datetime
    end: datetime
    status: str


HELD = (
    Held("a1", "exp-a", "i-0aaa", "g5.xlarge", G5, oct30(0), oct30(12), "failed"),
    Held("a2", "exp-a", "i-0bbb", "g5.xlarge", G5, oct30(12), oct30(30), "succeeded"),
    Held("b1", "exp-b", "i-0ccc", "p4d.24xlarge", P4D, oct30(6), oct30(10), "succeeded"),
)
CLOCKS = {
    1: datetime(2026, 10, 31, 0, 0, tzinfo=UTC),  # a2 still runs: telemetry ahead of the clock
    2: datetime(2026, 11, 2, 6, 0, tzinfo=UTC),
    3: datetime(2026, 11, 5, 6, 0, tzinfo=UTC),
}
DELIVERED = {
    2: datetime(2026, 11, 2, 3, 0, tzinfo=UTC),
    3: datetime(2026, 11, 5, 3, 0, tzinfo=UTC),
}
# night 2 bills i-0bbb up to 18:00 on the 30th; night 3 restates b1's last hour (the instance
# stopped at 09:30: half an hour) and bills everything, with an invoice id and a tax line
PARTIAL_UNTIL = oct30(18)


def hourly_lines(held: Held, until: datetime, invoice: str, final: bool) -> list[CurLine]:
    """One on-demand BoxUsage line per hour the instance ran, up to ``until``."""
    lines = []
    hour = held.start
    while hour < min(held.end, until):
        usage = Decimal(1)
        if final and held.attempt_id == "b1" and hour == oct30(9):
            usage = Decimal("0.5")
        cost = held.rate * usage
        lines.append(
            CurLine(
                usage_start=hour,
                usage_end=hour + timedelta(hours=1),
                usage_type=f"BoxUsage:{held.instance_type}",
                operation="RunInstances",
                resource_id=held.resource_id,
                usage_amount=usage,
                unblended_rate=held.rate,
                unblended_cost=cost,
                public_on_demand_rate=held.rate,
                public_on_demand_cost=cost,
                instance_type=held.instance_type,
                availability_zone="us-east-1a",
                product_family="Compute Instance",
                invoice_id=invoice,
            )
        )
        hour += timedelta(hours=1)
    return lines


def ground_truth() -> dict[str, Decimal]:
    """What the final bill charges each attempt (hand arithmetic, not runcost)."""
    return {
        "a1": 12 * G5,
        "a2": 18 * G5,
        "b1": 3 * P4D + P4D * Decimal("0.5"),
    }


def write_night(root: Path, night: int, *, invoice_currency: str = "USD") -> Config:
    """Write the world as it stands on ``night`` (1, 2 or 3) and return its configuration."""
    _write_telemetry(root / "telemetry", night)
    export = root / "exports" / EXPORT
    if night >= 2:
        final = night == 3
        invoice = INVOICE if final else ""
        lines = [
            line
            for held in HELD
            for line in hourly_lines(held, oct30(48) if final else PARTIAL_UNTIL, invoice, final)
        ]
        if final:
            lines.append(
                CurLine(
                    line_item_type="Tax",
                    usage_start=datetime(2026, 10, 1, tzinfo=UTC),
                    usage_end=datetime(2026, 11, 1, tzinfo=UTC),
                    unblended_cost=TAX,
                    pricing_unit="",
                    tax_type="SalesTax",
                    invoice_id=invoice,
                )
            )
        written = write_cur_delivery(export, EXPORT, PERIOD, lines, execution_id=f"exec-{night}")
        stamp = DELIVERED[night].timestamp()
        for path in written:
            os.utime(path, (stamp, stamp))
    invoices = ""
    if night == 3:
        total = sum(ground_truth().values()) + TAX
        (root / "invoices.csv").write_text(
            f"invoice_id,amount,currency\n{INVOICE},{total},{invoice_currency}\n",
            encoding="utf-8",
        )
        invoices = '[invoices]\nfile = "invoices.csv"\n'
    prices = "".join(
        f'[[estimates.prices]]\ninstance_type = "{name}"\nregion = "us-east-1"\n'
        f'price_per_hour = "{price}"\ncurrency = "USD"\n\n'
        for name, price in CONFIG_PRICES.items()
    )
    # the export exists from the start (AWS writes nothing into it before the first delivery)
    (export / "data").mkdir(parents=True, exist_ok=True)
    exports = f'[aws]\nexports = ["exports/{EXPORT}"]\n'
    (root / "runcost.toml").write_text(
        f'[warehouse]\npath = "warehouse"\n\n{exports}\n[telemetry]\npath = "telemetry"\n\n'
        f"{prices}{invoices}",
        encoding="utf-8",
    )
    return load_config(root / "runcost.toml")


def _write_telemetry(folder: Path, night: int) -> None:
    attempts = [
        Attempt(
            attempt_id=held.attempt_id,
            experiment_id=held.experiment_id,
            parent_attempt_id="a1" if held.attempt_id == "a2" else None,
            model_version="m1",
            config_version="c1",
            dataset_snapshot="d1",
            provider="aws",
            account_id="222222222222",
            region="us-east-1",
            cluster="train",
            namespace="ml",
            instance_type=held.instance_type,
            gpu_type="A10G" if held.instance_type.startswith("g5") else "A100",
            gpu_count=1 if held.instance_type.startswith("g5") else 8,
            node_count=1,
            capacity_type="on_demand",
            submitted_at=held.start,
            started_at=held.start,
            ended_at=held.end,
            status=held.status,
            failure_reason="NCCL timeout" if held.status == "failed" else None,
            metric_name=None,
            metric_value=None,
            artifact_uri=None,
        )
        for held in HELD
    ]
    resources = [
        AttemptResource(held.attempt_id, held.resource_id, "ec2_instance", None, None, 1)
        for held in HELD
    ]
    experiments = [
        Experiment("exp-a", "vision", "accuracy", 0.9, True),
        Experiment("exp-b", "language", "loss", 1.5, False),
    ]
    write_telemetry(folder, attempts, resources, experiments)
