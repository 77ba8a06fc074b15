"""A legacy CUR export runs through the whole pipeline and reconciles to its own total."""

from __future__ import annotations

import csv
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import open_database

REPORT = "old-cur"
FOLDER = "20231101-20231201"
HEADER = [
    "identity/LineItemId", "bill/PayerAccountId", "bill/BillingPeriodStartDate",
    "bill/BillingPeriodEndDate", "lineItem/UsageAccountId", "lineItem/LineItemType",
    "lineItem/UsageStartDate", "lineItem/UsageEndDate", "lineItem/ProductCode",
    "lineItem/ResourceId", "lineItem/UsageAmount", "lineItem/CurrencyCode",
    "lineItem/UnblendedCost", "pricing/publicOnDemandCost", "pricing/unit",
    "resourceTags/user:team",
]  # fmt: skip
# (type, start, end, cost, list cost): usage, a credit and a month-long tax line
LINES = [
    ("Usage", "2023-11-03T10:00:00Z", "2023-11-03T11:00:00Z", "0.5000000001", "0.6"),
    ("Usage", "2023-11-03T11:00:00Z", "2023-11-03T12:00:00Z", "12.125", "15"),
    ("Credit", "2023-11-03T11:00:00Z", "2023-11-03T12:00:00Z", "-2.1", ""),
    ("Tax", "2023-11-01T00:00:00Z", "2023-12-01T00:00:00Z", "1.0500000005", ""),
]


def write_export(root: Path, key_prefix: str = "billing/", manifest: bool = True) -> Decimal:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    for index, (kind, start, end, cost, list_cost) in enumerate(LINES):
        writer.writerow([
            f"l{index}", "123412340534", "2023-11-01T00:00:00.000Z", "2023-12-01T00:00:00.000Z",
            "123412340534", kind, start, end, "AmazonEC2", "i-0abc" if kind == "Usage" else "",
            "1", "USD", cost, list_cost, "Hrs", "ml",
        ])  # fmt: skip
    name = f"{REPORT}-00001.csv.gz"
    (root / FOLDER).mkdir(parents=True)
    (root / FOLDER / name).write_bytes(gzip.compress(text.getvalue().encode(), mtime=0))
    body = {
        "assemblyId": "0f0e0d0c-1111",
        "reportName": REPORT,
        "billingPeriod": {"start": "20231101T000000.000Z", "end": "20231201T000000.000Z"},
        "reportKeys": [f"{key_prefix}{REPORT}/{FOLDER}/{name}"],
    }
    if manifest:
        (root / FOLDER / f"{REPORT}-Manifest.json").write_text(json.dumps(body))
    return sum((Decimal(line[3]) for line in LINES), Decimal(0))


# a report with no S3 prefix: AWS lists its keys from "/" (/<report>/<period>/<file>)
@pytest.mark.parametrize("key_prefix", ["billing/", "/"], ids=["prefix", "no-prefix"])
def test_legacy_export_reconciles_to_its_total(tmp_path: Path, key_prefix: str) -> None:
    total = write_export(tmp_path / "exports" / REPORT, key_prefix)
    (tmp_path / "runcost.toml").write_text(f'[aws]\nexports = ["exports/{REPORT}"]\n')

    result = run_pipeline(load_config(tmp_path / "runcost.toml"))

    [delivery] = result.deliveries
    assert (delivery.export, delivery.billing_period, delivery.delivery_id) == (
        REPORT, "2023-11", "0f0e0d0c-1111",
    )  # fmt: skip
    con = open_database(result.database)
    try:
        rows = con.execute(
            "select allocation_model, cost_basis, bill_total, difference, billing_account_id "
            "from marts.reconciliation where cost_basis in ('billed_cost', 'list_cost') "
            "order by all"
        ).fetchall()
    finally:
        con.close()
    assert len(rows) == 4
    for _model, basis, bill_total, difference, account in rows:
        assert difference == 0
        assert account == "123412340534"
        expected = total if basis == "billed_cost" else Decimal("15.6")
        assert Decimal(str(bill_total)) == expected
    assert total == Decimal("11.5750000006")


def test_a_legacy_period_without_its_manifest_stops_the_run(tmp_path: Path) -> None:
    write_export(tmp_path / "exports" / REPORT, manifest=False)
    (tmp_path / "runcost.toml").write_text(f'[aws]\nexports = ["exports/{REPORT}"]\n')
    with pytest.raises(InputError) as caught:
        run_pipeline(load_config(tmp_path / "runcost.toml"))
    message = str(caught.value)
    assert (
        f"{REPORT}/{FOLDER}: legacy CUR period 2023-11 has no {FOLDER}/<report>-Manifest" in message
    )
    assert "copy the manifest AWS wrote into that folder" in message
    assert not (tmp_path / "warehouse" / "runcost.duckdb").exists()
