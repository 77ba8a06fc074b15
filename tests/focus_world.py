"""A FOCUS test world: files shaped like the FinOps sample (quirks included), telemetry, a config.

The CSV follows the FOCUS 1.0 sample's layout: its 44 columns in its order (with the non-FOCUS
`Id`), literal NULL for nulls, `YYYY-MM-DD HH:MM:SS` timestamps, JSON Tags, AWS, Microsoft and
Oracle rows, empty strings in Oracle rows, an Oracle row billed in the month after its charge.
A second source is FOCUS 1.2 Parquet with typed columns (as a Parquet export writes them).
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.scenario.telemetry_writer import (
    Attempt,
    AttemptResource,
    Experiment,
    write_telemetry,
)

HEADER_1_0 = [
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "Id",
    "ServiceName",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
]
ORACLE_GPU = "ocid1.instance.oc1.us-sanjose-1.gpu0001"
CONFIG = """\
[warehouse]
path = "warehouse"

[focus]
files = ["focus/mixed", { path = "focus/azure-1.2/*.parquet", name = "azure" }]

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["user_attempt_id"]
experiment_tag_keys = ["user_experiment_id"]
"""


def _provider(name: str) -> dict[str, str]:
    issuer = {"AWS": "Amazon Web Services, Inc."}.get(name, name)
    account = {"AWS": "123456789012", "Microsoft": "ms-ba-1", "Oracle": "20209880"}[name]
    return {
        "ProviderName": name,
        "PublisherName": issuer,
        "InvoiceIssuerName": issuer,
        "BillingAccountId": account,
        "BillingAccountName": f"{name} billing",
        "SubAccountId": f"{account}-sub",
        "SubAccountName": "research",
    }


def _period(month: int) -> dict[str, str]:
    return {
        "BillingPeriodStart": f"2026-{month:02d}-01 00:00:00",
        "BillingPeriodEnd": f"2026-{month + 1:02d}-01 00:00:00",
    }


def row(provider: str, month: int, **values: Any) -> dict[str, str]:
    """One CSV row: NULL everywhere unless given, the provider's names, an hour of usage."""
    line = dict.fromkeys(HEADER_1_0, "NULL")
    line.update(_provider(provider))
    line.update(_period(month))
    line.update(
        BillingCurrency="USD",
        ChargeCategory="Usage",
        ChargeFrequency="Usage-Based",
        ChargePeriodStart=f"2026-{month:02d}-02 10:00:00",
        ChargePeriodEnd=f"2026-{month:02d}-02 11:00:00",
        ServiceCategory="Compute",
        ServiceName="Virtual Machines",
        PricingCategory="Standard",
        BilledCost="0.00000000000",
        EffectiveCost="0.00000000000",
        ListCost="0.00000000000",
        ContractedCost="0.00000000000",
    )
    for key, value in values.items():
        line[key] = json.dumps(value) if key == "Tags" and isinstance(value, dict) else value
    return line


def mixed_rows() -> list[dict[str, str]]:
    """AWS, Microsoft and Oracle rows over 2026-09 and 2026-10 with the sample's quirks."""
    tagged = {"user_attempt_id": "att-1", "user_experiment_id": "exp-a", "team": "vision"}
    money = {"BilledCost": "32.77260000000", "EffectiveCost": "21.12340000000"}
    return [
        row("AWS", 10, ResourceId="i-0gpu0001", Tags=tagged, ConsumedQuantity="1.000000000000000",
            ConsumedUnit="Hours", PricingUnit="Hours", PricingQuantity="1.00000000000",
            ListCost="32.77260000000", ServiceName="Amazon Elastic Compute Cloud",
            AvailabilityZone="us-east-1a", RegionId="us-east-1", **money),
        row("AWS", 10, ResourceId="vol-0data", Tags=tagged, ServiceCategory="Storage",
            ConsumedUnit="GB-Months", PricingUnit="GB-Months", BilledCost="0.13440000000",
            EffectiveCost="0.13440000000", ListCost="0.13440000000"),
        row("AWS", 10, ServiceCategory="Networking", ConsumedUnit="GB", PricingUnit="GB",
            BilledCost="1.0200000000", EffectiveCost="1.0200000000", ListCost="1.0200000000",
            Tags={"application": "feature-store", "environment": "dev"}),
        # the sample's first row: billed 8e-7 while effective and contracted cost are 0
        row("AWS", 10, ServiceCategory="Integration", ServiceName="Amazon Simple Queue Service",
            ConsumedUnit="Requests", PricingUnit="Requests", BilledCost="8E-7", ListCost="8e-7"),
        row("AWS", 10, ChargeCategory="Purchase", ChargeFrequency="Recurring",
            CommitmentDiscountId="arn:aws:savingsplans::123456789012:savingsplan/sp-1",
            CommitmentDiscountCategory="Spend", CommitmentDiscountType="Compute Savings Plans",
            BilledCost="10.0000000000", EffectiveCost="0.5000000000", ListCost="0.00000000000"),
        row("AWS", 10, ChargeCategory="Credit", ChargeFrequency="One-Time",
            ServiceCategory="Other", BilledCost="-2.5000000000", EffectiveCost="-2.5000000000",
            ListCost="0.00000000000"),
        row("AWS", 10, ChargeCategory="Tax", ChargeFrequency="One-Time", ServiceCategory="Other",
            BilledCost="3.1400000000", EffectiveCost="3.1400000000", ListCost="3.1400000000"),
        row("AWS", 9, ResourceId="i-0cpu0002", BilledCost="0.0960000000",
            EffectiveCost="0.0960000000", ListCost="0.0960000000"),
        row("Microsoft", 10, ResourceId="/subscriptions/s1/vm/gpu-vm-1",
            Tags={"user_attempt_id": "att-2", "user_experiment_id": "exp-b", "spot": True},
            ConsumedUnit="Hours", PricingUnit="Hours", ConsumedQuantity="1",
            BilledCost="3.0600000000", EffectiveCost="3.0600000000", ListCost="3.4000000000",
            RegionId="eastus", ChargePeriodStart="2026-10-04 00:00:00",
            ChargePeriodEnd="2026-10-05 00:00:00"),
        row("Microsoft", 10, ServiceCategory="Storage", BilledCost="0.00000764070",
            EffectiveCost="0.00000764070", ListCost="0.00000764070", ConsumedUnit="GB/Month"),
        # a second currency in the same account and period is fine
        row("Microsoft", 10, BillingCurrency="EUR", BilledCost="4.2000000000",
            EffectiveCost="4.2000000000", ListCost="4.2000000000"),
        row("Oracle", 10, ResourceId=ORACLE_GPU, AvailabilityZone="fjrQ:US-SANJOSE-1-AD-1",
            ChargePeriodStart="2026-10-03 01:00:00", ChargePeriodEnd="2026-10-03 02:00:00",
            ConsumedUnit="OCPU Hours", PricingUnit="OCPU Hours", BillingAccountName="",
            CommitmentDiscountId="", PricingCategory="", BilledCost="2.9500000000",
            EffectiveCost="2.9500000000", ListCost="2.9500000000", ServiceName="COMPUTE"),
        row("Oracle", 10, ChargeCategory="Adjustment", BilledCost="-0.0100000000",
            EffectiveCost="0.00000000000", ListCost="-0.0100000000", ServiceName="COMPUTE"),
        # billed in October for a charge in late September, as in the sample
        row("Oracle", 10, ChargePeriodStart="2026-09-30 22:00:00",
            ChargePeriodEnd="2026-09-30 23:00:00", BilledCost="0.2400000000",
            EffectiveCost="0.00000000000", ListCost="0.2400000000", ServiceName="COMPUTE"),
    ]  # fmt: skip


SPLIT_NODE = "i-0shared0001"
ORACLE_NODE = "ocid1.node.oc1.us-sanjose-1.pool0001"
_HALF = '{"Elements": [{"AllocatedRatio": 0.5, "UsageUnit": "Hours", "UsageQuantity": 0.5}]}'


def allocated_rows(with_provider_name: bool = True) -> list[dict[str, str]]:
    """FOCUS 1.3 rows: one AWS instance-hour of $3.00 split between two tagged pods (the origin's
    Tags name another attempt: AllocatedTags win), and an Oracle node-hour allocated whole to the
    instance att-3 held (AllocatedResourceId). 1.3 names the provider ServiceProviderName; with
    ``with_provider_name`` False the deprecated ProviderName column is left out."""
    split = {
        "ResourceId": SPLIT_NODE, "ConsumedQuantity": "0.5", "ConsumedUnit": "Hours",
        "PricingUnit": "Hours", "PricingQuantity": "0.5", "BilledCost": "1.5000000000",
        "EffectiveCost": "1.5000000000", "ListCost": "1.5000000000",
        "Tags": {"user_attempt_id": "att-origin", "team": "vision"},
        "AllocatedMethodId": "aws:eks-split-cost", "AllocatedMethodDetails": _HALF,
        "ServiceProviderName": "AWS", "HostProviderName": "AWS", "ContractApplied": "NULL",
    }  # fmt: skip
    rows = [
        row("AWS", 10, **split, AllocatedResourceId="pod/train-a", AllocatedResourceName="train-a",
            AllocatedTags='{"user_attempt_id": "att-1", "user_experiment_id": "exp-a"}'),
        row("AWS", 10, **split, AllocatedResourceId="pod/train-b", AllocatedResourceName="train-b",
            AllocatedTags='{"user_attempt_id": "att-2"}'),
        row("Oracle", 10, ResourceId=ORACLE_NODE, ChargePeriodStart="2026-10-03 01:00:00",
            ChargePeriodEnd="2026-10-03 02:00:00", ConsumedUnit="Hours", PricingUnit="Hours",
            ConsumedQuantity="1", BilledCost="2.9500000000", EffectiveCost="2.9500000000",
            ListCost="2.9500000000", AllocatedMethodId="oci:node-pool",
            AllocatedResourceId=ORACLE_GPU, AllocatedTags="NULL", AllocatedResourceName="NULL",
            AllocatedMethodDetails="NULL", ServiceProviderName="Oracle", HostProviderName="Oracle",
            ContractApplied='{"ContractApplied": [{"ContractCommitmentID": "c-1", '
            '"ContractCommitmentAppliedCost": 2.95, "ContractCommitmentAppliedQuantity": null, '
            '"ContractCommitmentAppliedUnit": null}]}'),
    ]  # fmt: skip
    if not with_provider_name:
        for line in rows:
            del line["ProviderName"]
    return rows


def write_mixed_csv(path: Path, rows: list[dict[str, str]] | None = None) -> Path:
    """Write rows as the sample does: strings quoted, numbers and NULL bare, an Id column."""
    rows = mixed_rows() if rows is None else rows
    path.parent.mkdir(parents=True, exist_ok=True)
    bare = {"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "ConsumedQuantity",
            "PricingQuantity", "Id"}  # fmt: skip
    header = list(rows[0]) if rows else HEADER_1_0
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(",".join(f'"{name}"' for name in header) + "\n")
        for number, line in enumerate(rows):
            cells = []
            for name in header:
                value = str(number + 1000) if name == "Id" else line[name]
                if value == "NULL" or (name in bare and "," not in value):
                    cells.append(value)
                else:
                    cells.append('"' + value.replace('"', '""') + '"')
            handle.write(",".join(cells) + "\n")
    return path


def write_azure_parquet(path: Path) -> Path:
    """FOCUS 1.2 rows as typed Parquet (decimals, UTC timestamps, InvoiceId, JSON Tags text)."""
    start, end = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)
    money = pa.decimal128(38, 12)
    stamp = pa.timestamp("us", tz="UTC")
    columns: dict[str, tuple[pa.DataType, list[Any]]] = {
        "BilledCost": (money, [Decimal("12.345678901200"), Decimal("0.000000000100")]),
        "EffectiveCost": (money, [Decimal("11.000000000000"), Decimal("0.000000000100")]),
        "ListCost": (money, [Decimal("13.500000000000"), Decimal("0.000000000100")]),
        "BillingAccountId": (pa.string(), ["ms-ba-2", "ms-ba-2"]),
        "BillingAccountType": (pa.string(), ["Billing Profile", "Billing Profile"]),
        "BillingCurrency": (pa.string(), ["USD", "USD"]),
        "BillingPeriodStart": (stamp, [start, start]),
        "BillingPeriodEnd": (stamp, [end, end]),
        "ChargePeriodStart": (stamp, [datetime(2026, 10, 6, tzinfo=UTC)] * 2),
        "ChargePeriodEnd": (stamp, [datetime(2026, 10, 7, tzinfo=UTC)] * 2),
        "ChargeCategory": (pa.string(), ["Usage", "Usage"]),
        "InvoiceId": (pa.string(), ["INV-2026-10", "INV-2026-10"]),
        "ProviderName": (pa.string(), ["Microsoft", "Microsoft"]),
        "ServiceName": (pa.string(), ["Azure Machine Learning", "Storage Accounts"]),
        "ServiceCategory": (pa.string(), ["AI and Machine Learning", "Storage"]),
        "ResourceId": (pa.string(), ["/subscriptions/s2/ml/cluster-1", None]),
        "Tags": (pa.string(), [json.dumps({"user_attempt_id": "att-2"}), None]),
        "x_SkuDetails": (pa.string(), ['{"MeterCategory": "GPU"}', None]),
    }
    table = pa.table({name: pa.array(values, kind) for name, (kind, values) in columns.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def write_focus_world(folder: Path) -> Path:
    """Write the FOCUS files, the telemetry and runcost.toml under ``folder``; return the config."""
    write_mixed_csv(folder / "focus" / "mixed" / "focus_2026.csv")
    write_azure_parquet(folder / "focus" / "azure-1.2" / "part-00001.parquet")
    day = datetime(2026, 10, 2, tzinfo=UTC)

    def attempt(attempt_id: str, experiment: str, provider: str, start: datetime) -> Attempt:
        return Attempt(
            attempt_id, experiment, None, "m1", "c1", "d1", provider, "acct", "region",
            "cluster", "ns", "gpu.large", "A100", 1, 1, "on_demand", start, start,
            start.replace(hour=start.hour + 6), "succeeded", None, None, None, None,
        )  # fmt: skip

    attempts = [
        attempt("att-1", "exp-a", "aws", day.replace(hour=9)),
        attempt("att-2", "exp-b", "azure", day.replace(day=4)),
        attempt("att-3", "exp-b", "oci", day.replace(day=3)),
    ]
    resources = [AttemptResource("att-3", ORACLE_GPU, "instance", None, None, 1)]
    experiments = [
        Experiment("exp-a", "vision", "accuracy", 0.9, True),
        Experiment("exp-b", "speech", "accuracy", 0.9, True),
    ]
    write_telemetry(folder / "telemetry", attempts, resources, experiments)
    config = folder / "runcost.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


def csv_totals(path: Path) -> dict[tuple[str, str, str, str], list[Decimal]]:
    """Independent sums of a FOCUS CSV (python csv + Decimal), per provider, account, period,
    currency: [billed, effective, list, rows]."""
    totals: dict[tuple[str, str, str, str], list[Decimal]] = {}
    with path.open(encoding="utf-8-sig", newline="") as handle:
        for line in csv.DictReader(handle):
            key = (
                line["ProviderName"].lower(),
                line["BillingAccountId"],
                line["BillingPeriodStart"][:7],
                line["BillingCurrency"],
            )
            sums = totals.setdefault(key, [Decimal(0)] * 4)
            for index, name in enumerate(("BilledCost", "EffectiveCost", "ListCost")):
                sums[index] += Decimal(line[name].strip())
            sums[3] += 1
    return totals
