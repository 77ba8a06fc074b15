"""The export's daily partitions: which to check, their fingerprints, the SQL that reads them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from google.cloud import bigquery

from pipeline.ingest.gcp.bigquery_client import query
from pipeline.ingest.gcp.settings import GcpSettings

# The sum is taken over NUMERIC (exact, 9 decimals): a FLOAT64 sum can change in its last bits
# from one run to the next as BigQuery adds in another order, which would re-fetch for nothing.
# safe_cast: a NaN or an overflowing cost (in a copy of the export) is left out of the sum, so
# the partition is still read and its bad row refused by name (gcp/values.py), not by this query.
_MEASURES = (
    "count(*) as row_count, max(export_time) as max_export_time, "
    "sum(safe_cast(cost as numeric)) as sum_cost"
)


@dataclass(frozen=True)
class Fingerprint:
    """What identifies a partition's contents: rows, latest export_time, exact sum of cost."""

    rows: int
    max_export_time: str | None  # ISO 8601, UTC
    sum_cost: str | None  # NUMERIC, as text

    @classmethod
    def from_row(cls, row: Any) -> Fingerprint:
        latest: datetime | None = row["max_export_time"]
        total: Decimal | None = row["sum_cost"]
        return cls(
            rows=int(row["row_count"]),
            max_export_time=None if latest is None else latest.astimezone(UTC).isoformat(),
            sum_cost=None if total is None else format(total.normalize(), "f"),
        )

    @classmethod
    def from_record(cls, record: Any) -> Fingerprint | None:
        """The fingerprint stored in a delivery.json (None if it has none)."""
        if not isinstance(record, dict):
            return None
        return cls(
            rows=int(record.get("rows", -1)),
            max_export_time=record.get("max_export_time"),
            sum_cost=record.get("sum_cost"),
        )

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    def delivery_id(self, columns: tuple[str, ...]) -> str:
        """A delivery id made of the fingerprint: the same contents get the same id."""
        text = json.dumps([self.as_record(), list(columns)], sort_keys=True)
        stamp = (self.max_export_time or "").replace("-", "").replace(":", "")[:15]
        return f"{stamp or 'none'}Z-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def scan_range(settings: GcpSettings, stored: list[date], today: date) -> tuple[date, date]:
    """First and last partition date to fingerprint this run.

    With nothing stored, the first run backfills from gcp.start_date (or covers the window). Then
    it is the window_days days up to the newest partition already stored, and every day since:
    late rows land in recent partitions, and a run after a pause starts where the last one ended.
    """
    reach = timedelta(days=settings.window_days - 1)
    if not stored:
        first = settings.start_date or today - reach
    else:
        first = min(today, max(stored)) - reach
        if settings.start_date is not None:
            first = max(first, settings.start_date)
    return min(first, today), today


def fingerprints(
    client: bigquery.Client, table_id: str, first: date, last: date
) -> dict[date, Fingerprint]:
    """The fingerprint of every non-empty partition dated first..last, in one query."""
    sql = (
        f"select date(_PARTITIONTIME) as partition_date, {_MEASURES} from `{table_id}` "
        "where date(_PARTITIONTIME) between @first and @last "
        "group by partition_date order by partition_date"
    )
    rows = query(client, sql, {"first": first, "last": last}, table_id)
    return {row["partition_date"]: Fingerprint.from_row(row) for row in rows}


def partition_fingerprint(client: bigquery.Client, table_id: str, day: date) -> Fingerprint:
    """One partition's fingerprint now (to see whether it changed while it was read)."""
    sql = f"select {_MEASURES} from `{table_id}` where date(_PARTITIONTIME) = @day"
    rows = list(query(client, sql, {"day": day}, table_id))
    return Fingerprint.from_row(rows[0])


def fetch_sql(table_id: str, columns: tuple[str, ...]) -> str:
    """The query reading one whole partition: the table's own columns, nested ones nested."""
    selected = ", ".join(f"`{name}`" for name in columns)
    return f"select {selected} from `{table_id}` where date(_PARTITIONTIME) = @partition"
