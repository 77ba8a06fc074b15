"""Partition window, fingerprints and the SQL that reads a partition (no endpoint needed)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from pipeline.ingest.gcp.partitions import Fingerprint, fetch_sql, scan_range
from pipeline.ingest.gcp.settings import GcpSettings

TODAY = date(2026, 11, 29)


@pytest.mark.parametrize(
    ("settings", "stored", "expected"),
    [
        # first run: backfill from start_date, else the window
        (GcpSettings(start_date=date(2026, 9, 1)), [], (date(2026, 9, 1), TODAY)),
        (GcpSettings(), [], (date(2026, 11, 20), TODAY)),
        (GcpSettings(window_days=1), [], (TODAY, TODAY)),
        # later runs: window_days up to the newest stored partition, and every day since
        (GcpSettings(), [date(2026, 9, 1), date(2026, 11, 28)], (date(2026, 11, 19), TODAY)),
        (GcpSettings(window_days=3), [date(2026, 11, 29)], (date(2026, 11, 27), TODAY)),
        # a pause of a month: start from where the last run ended, not from today
        (GcpSettings(), [date(2026, 10, 20)], (date(2026, 10, 11), TODAY)),
        # never before start_date
        (
            GcpSettings(start_date=date(2026, 11, 25)),
            [date(2026, 11, 28)],
            (date(2026, 11, 25), TODAY),
        ),
        # a start_date in the future reads nothing older than today
        (GcpSettings(start_date=date(2026, 12, 5)), [], (TODAY, TODAY)),
    ],
)
def test_scan_range(settings: GcpSettings, stored: list[date], expected: tuple[date, date]) -> None:
    assert scan_range(settings, stored, TODAY) == expected


def _row(rows: int, latest: datetime | None, total: Decimal | None) -> dict[str, object]:
    return {"row_count": rows, "max_export_time": latest, "sum_cost": total}


def test_fingerprint_is_exact_text_and_names_its_delivery() -> None:
    latest = datetime(2026, 11, 20, 5, 36, 12, 123456, tzinfo=UTC)
    one = Fingerprint.from_row(_row(24, latest, Decimal("6.250000000")))
    assert one == Fingerprint(24, "2026-11-20T05:36:12.123456+00:00", "6.25")
    assert Fingerprint.from_row(_row(1, latest, Decimal("100.000000000"))).sum_cost == "100"
    assert Fingerprint.from_row(_row(0, None, None)) == Fingerprint(0, None, None)
    assert Fingerprint.from_record(one.as_record()) == one
    assert Fingerprint.from_record(None) is None

    columns = ("billing_account_id", "cost")
    assert one.delivery_id(columns) == one.delivery_id(columns)
    assert one.delivery_id(columns).startswith("20261120T053612Z-")
    assert len(one.delivery_id(columns)) == len("20261120T053612Z-") + 12
    late = Fingerprint.from_row(_row(25, latest, Decimal("6.250000000")))
    assert late.delivery_id(columns) != one.delivery_id(columns)
    assert one.delivery_id((*columns, "price")) != one.delivery_id(columns)
    assert Fingerprint(0, None, None).delivery_id(columns).startswith("noneZ-")


def test_fetch_reads_the_tables_own_columns_of_one_partition() -> None:
    sql = fetch_sql("p.d.gcp_billing_export_v1_X", ("billing_account_id", "service", "credits"))
    assert sql == (
        "select `billing_account_id`, `service`, `credits` from `p.d.gcp_billing_export_v1_X` "
        "where date(_PARTITIONTIME) = @partition"
    )
