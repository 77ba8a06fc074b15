"""Three months of history for the tests of nights: attempts, each month's bill as AWS (CUR 2.0),
GCP (the export's rows as NDJSON) or a FOCUS file delivers it, the telemetry and a config.

Each month holds a tagged attempt, an untagged failed one, one whose telemetry comes late and a
shared volume; one attempt runs across the end of August into September; closed months carry
invoice ids and a tax line.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from gcp_export import export_row

from pipeline.config.loader import load_config
from pipeline.run.nightly import RunResult, run_pipeline
from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment, write_telemetry
from pipeline.warehouse.snapshots import current_snapshot, open_database, snapshot_record

EXPORT = "ml-cur"
MONTHS = ("2026-08", "2026-09", "2026-10")
G5 = Decimal("1.0060")
VOLUME = Decimal("0.0110")  # a gp3 GB-month slice per hour
START_CLOCK = datetime(2026, 10, 20, 6, 0, tzinfo=UTC)


def month_start(period: str) -> datetime:
    year, month = (int(part) for part in period.split("-"))
    return datetime(year, month, 1, tzinfo=UTC)


@dataclass
class Held:
    """An attempt on its own instance; the bill charges each hour it ran."""

    attempt_id: str
    experiment_id: str
    start: datetime
    hours: int
    status: str = "succeeded"
    tagged: bool = False
    reported: bool = True  # False: telemetry has not told of it yet (it comes late)

    @property
    def resource_id(self) -> str:
        return f"i-{self.attempt_id}"

    @property
    def end(self) -> datetime:
        return self.start + timedelta(hours=self.hours)


def initial_attempts() -> list[Held]:
    held = []
    for index, period in enumerate(MONTHS):
        day = month_start(period) + timedelta(days=10)
        held += [
            Held(f"m{index}-a", "exp-a", day, 6, tagged=True),
            Held(f"m{index}-b", "exp-b", day + timedelta(hours=3), 5, status="failed"),
            Held(f"m{index}-late", "exp-b", day + timedelta(days=2), 3, reported=False),
        ]
    # one attempt runs across the end of August into September: it touches both months
    held.append(Held("span", "exp-a", month_start("2026-09") - timedelta(hours=2), 5))
    return held


@dataclass
class World:
    """The inputs of one night: telemetry, the bill of each month, the config and the clock."""

    root: Path
    provider: str
    held: list[Held] = field(default_factory=initial_attempts)
    surcharge: dict[str, Decimal] = field(default_factory=dict)  # a restated month's extra cost
    deliveries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MONTHS, 1))
    price: Decimal = Decimal("0.95")
    warehouse_settings: str = ""  # more [warehouse] keys, one per line
    clock: datetime = START_CLOCK

    def final(self, period: str) -> bool:
        return period != MONTHS[-1]

    def lines(self, period: str) -> list[CurLine]:
        start = month_start(period)
        end = month_start(MONTHS[MONTHS.index(period) + 1]) if self.final(period) else None
        invoice = f"INV-{period}" if self.final(period) else ""
        lines = []
        for held in self.held:
            hour = held.start
            while hour < held.end:
                if hour >= start and (end is None or hour < end):
                    lines.append(
                        CurLine(
                            usage_start=hour,
                            usage_end=hour + timedelta(hours=1),
                            usage_type="BoxUsage:g5.xlarge",
                            operation="RunInstances",
                            resource_id=held.resource_id,
                            usage_amount=Decimal(1),
                            unblended_rate=G5,
                            unblended_cost=G5,
                            public_on_demand_rate=G5,
                            public_on_demand_cost=G5,
                            instance_type="g5.xlarge",
                            availability_zone="us-east-1a",
                            product_family="Compute Instance",
                            resource_tags={"user_attempt_id": held.attempt_id}
                            if held.tagged
                            else {},
                            billing_period=period,
                            invoice_id=invoice,
                        )
                    )
                hour += timedelta(hours=1)
        day = start + timedelta(days=10)
        lines += [
            CurLine(  # a volume no attempt names: shared or left unallocated
                usage_start=day + timedelta(hours=hour),
                usage_end=day + timedelta(hours=hour + 1),
                usage_type="EBS:VolumeUsage.gp3",
                operation="CreateVolume-Gp3",
                resource_id="vol-shared",
                usage_amount=Decimal("0.5"),
                pricing_unit="GB-Mo",
                unblended_cost=VOLUME,
                product_family="Storage",
                billing_period=period,
                invoice_id=invoice,
            )
            for hour in range(4)
        ]
        lines.append(
            CurLine(
                line_item_type="Tax",
                usage_start=start,
                usage_end=start + timedelta(days=28),
                unblended_cost=Decimal("3.00") + self.surcharge.get(period, Decimal(0)),
                pricing_unit="",
                tax_type="SalesTax",
                billing_period=period,
                invoice_id=invoice,
            )
        )
        return lines

    def deliver(self, period: str) -> None:
        """The month's bill as its provider delivers it: a CUR 2.0 delivery (its own manifest
        and execution id), the export's rows of the month, or a FOCUS file of its own."""
        if self.provider == "focus":
            write_focus_month(
                self.root / "focus" / "ml" / f"{period}.csv", period, self.lines(period)
            )
            return
        if self.provider == "gcp":
            write_gcp_month(self.root / "gcp", period, self.lines(period), self.clock)
            return
        export = self.root / "exports" / EXPORT
        shutil.rmtree(export / "data" / f"BILLING_PERIOD={period}", ignore_errors=True)
        write_cur_delivery(
            export,
            EXPORT,
            period,
            self.lines(period),
            execution_id=f"{period}-{self.deliveries[period]}",
        )

    def write_telemetry(self) -> None:
        attempts = [
            Attempt(
                attempt_id=held.attempt_id,
                experiment_id=held.experiment_id,
                parent_attempt_id=None,
                model_version="m1",
                config_version="c1",
                dataset_snapshot="d1",
                provider="gcp" if self.provider == "gcp" else "aws",
                account_id="ml-training" if self.provider == "gcp" else "222222222222",
                region="us-east-1",
                cluster="train",
                namespace="ml",
                instance_type="g5.xlarge",
                gpu_type="A10G",
                gpu_count=1,
                node_count=1,
                capacity_type="on_demand",
                submitted_at=held.start,
                started_at=held.start,
                ended_at=held.end,
                status=held.status,
                failure_reason="NCCL timeout" if held.status == "failed" else None,
                metric_name="accuracy" if held.status == "succeeded" else None,
                metric_value=0.92 if held.status == "succeeded" else None,
                artifact_uri=None,
            )
            for held in self.held
            if held.reported
        ]
        resources = [
            AttemptResource(
                attempt.attempt_id, f"i-{attempt.attempt_id}", "ec2_instance", None, None, 1
            )
            for attempt in attempts
        ]
        experiments = [
            Experiment("exp-a", "vision", "accuracy", 0.9, True),
            Experiment("exp-b", "language", "accuracy", 0.8, True),
        ]
        write_telemetry(self.root / "telemetry", attempts, resources, experiments)

    def write_config(self, warehouse: Path) -> Path:
        path = warehouse.parent / f"{warehouse.name}.toml"
        bill = {
            "aws": f'[aws]\nexports = ["{self.root / "exports" / EXPORT}"]\n',
            "gcp": f'[gcp]\nfiles = ["{self.root / "gcp"}"]\n',
            "focus": f'[focus]\nfiles = [{{ path = "{self.root / "focus" / "ml"}", '
            'name = "ml" }]\n',
        }[self.provider]
        path.write_text(
            f'[warehouse]\npath = "{warehouse}"\n{self.warehouse_settings}\n{bill}\n'
            f'[telemetry]\npath = "{self.root / "telemetry"}"\n\n'
            '[[estimates.prices]]\ninstance_type = "g5.xlarge"\nregion = "us-east-1"\n'
            f'price_per_hour = "{self.price}"\ncurrency = "USD"\n',
            encoding="utf-8",
        )
        return path


def write_focus_month(path: Path, period: str, lines: list[CurLine]) -> None:
    """One month of the bill as a FOCUS 1.2 CSV, the columns AWS's FOCUS export fills."""
    start = month_start(period)
    end = month_start(f"{start.year + start.month // 12}-{start.month % 12 + 1:02d}")
    rows = []
    for line in lines:
        tax = line.line_item_type == "Tax"
        cost = str(line.unblended_cost)
        rows.append(
            {
                "BillingAccountId": line.payer_account_id,
                "SubAccountId": line.usage_account_id,
                "BillingCurrency": line.currency,
                "BillingPeriodStart": stamp(start),
                "BillingPeriodEnd": stamp(end),
                "ChargePeriodStart": stamp(line.usage_start),
                "ChargePeriodEnd": stamp(line.usage_end),
                "ChargeCategory": "Tax" if tax else "Usage",
                "ChargeFrequency": "Recurring" if tax else "Usage-Based",
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": str(line.public_on_demand_cost or line.unblended_cost),
                "ContractedCost": cost,
                "InvoiceId": line.invoice_id,
                "InvoiceIssuerName": "Amazon Web Services, Inc.",
                "ProviderName": "AWS",
                "PublisherName": "Amazon Web Services, Inc.",
                "ServiceName": "Tax" if tax else "Amazon Elastic Compute Cloud",
                "ServiceCategory": "Other" if tax else "Compute",
                "ResourceId": line.resource_id,
                "RegionId": "" if tax else line.region,
                "AvailabilityZone": line.availability_zone,
                "PricingQuantity": "" if tax else str(line.usage_amount),
                "PricingUnit": line.pricing_unit,
                "ConsumedQuantity": "" if tax else str(line.usage_amount),
                "ConsumedUnit": line.pricing_unit,
                "x_UsageType": line.usage_type,
                "Tags": json.dumps(
                    {"attempt-id": line.resource_tags["user_attempt_id"]}
                    if line.resource_tags
                    else {}
                ),
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_gcp_month(folder: Path, period: str, lines: list[CurLine], clock: datetime) -> None:
    """The month's usage as the Cloud Billing export's rows, extracted to NDJSON: the month's
    rows in one file, exported hours after their usage; the tax line is left to the invoice.
    A restated month (its tax line grown) is GCP's way: an adjustment row exported at the
    night's clock, a new partition day holding the difference, billed on the month's invoice."""
    rows = []
    for line in lines:
        if line.line_item_type == "Tax":
            extra = line.unblended_cost - Decimal("3.00")
            if extra:
                row = export_row(line.usage_start.date(), 0, str(extra), resource=None)
                row["cost_type"] = "adjustment"
                row["cost_at_list"] = str(extra)
                row["export_time"] = clock - timedelta(hours=1)
                rows.append(row)
            continue
        attempt = line.resource_tags.get("user_attempt_id")
        rows.append(
            export_row(
                line.usage_start.date(),
                line.usage_start.hour,
                str(line.unblended_cost),
                sku="Nvidia Tesla A10G GPU running in Americas"
                if line.resource_id.startswith("i-")
                else "Balanced PD Capacity",
                resource=line.resource_id if line.resource_id.startswith("i-") else None,
                labels={"attempt-id": attempt} if attempt else None,
            )
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"billing-{period}.json").write_text(
        "".join(json.dumps(row, default=str) + "\n" for row in rows), encoding="utf-8"
    )


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def night(world: World, warehouse: Path, **options: object) -> RunResult:
    """One night of ``world`` on ``warehouse`` at the world's clock."""
    return run_pipeline(load_config(world.write_config(warehouse)), now=world.clock, **options)


def first_night(root: Path, provider: str, warehouse_settings: str = "") -> tuple[World, Path]:
    """The world with every month delivered and its telemetry; the warehouse its first night
    published."""
    world = World(root / "inputs", provider, warehouse_settings=warehouse_settings)
    (world.root / "exports" / EXPORT / "data").mkdir(parents=True)
    for period in MONTHS:
        world.deliver(period)
    world.write_telemetry()
    warehouse = root / "warehouse"
    assert night(world, warehouse).status == "published"
    return world, warehouse


def published(database: Path) -> dict[str, list[tuple]]:
    """Every table and view of the current snapshot of ``database``'s warehouse, as rows."""
    warehouse = database.parent
    pointer = current_snapshot(warehouse)
    assert pointer is not None
    record = snapshot_record(Path(pointer["snapshot"]))
    assert record is not None
    names = sorted({*record["tables"], *record.get("views", {})})
    con = open_database(database)
    try:
        return {name: con.execute(f"select * from {name}").fetchall() for name in names}
    finally:
        con.close()


def differences(incremental: dict[str, list[tuple]], rebuilt: dict[str, list[tuple]]) -> dict:
    """Per table, the rows one side holds more often than the other (EXCEPT ALL both ways);
    rows are compared by their exact repr: Decimal digits, timestamps, maps and lists."""
    assert sorted(incremental) == sorted(rebuilt)
    found = {}
    for name in incremental:
        left = Counter(map(repr, incremental[name]))
        right = Counter(map(repr, rebuilt[name]))
        if left != right:
            found[name] = {
                "only incremental": sorted((left - right).elements())[:5],
                "only rebuilt": sorted((right - left).elements())[:5],
            }
    return found
