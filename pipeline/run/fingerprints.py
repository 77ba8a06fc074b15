"""What a run's published rows depend on, hashed: the inputs of every billing period and of all.

A run whose fingerprints equal those of the run that serves the current snapshot would publish
that snapshot again: it is decided before any build (pipeline.run.nightly) and recorded as
``unchanged``. Each part is hashed on its own, so a run record says which part moved:

- ``deliveries``: per billing period of every source, its current delivery ids and data files'
  sha256 (from delivery.json, never read again);
- ``telemetry``: every row of the four canonical tables, order-independent; per billing month
  the rows whose times overlap it;
- ``config``, ``invoices``: runcost.toml as read and the invoice file's sha256;
- ``code``: the runcost version and every file of the package (SQL models, macros, ingest);
- ``clock``: what the run clock decides, per billing month (ended or not, settled or not for
  GCP, or the clock itself near a boundary) and for all (the clock itself when some interval of
  the telemetry is still held at it, since estimates stop there).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import __version__
from pipeline.dag.models import sql_root
from pipeline.run.record import delivery_record
from pipeline.warehouse.raw_store import Delivery

# a billing period whose end is this close to the clock has its status decided by the hour:
# the fingerprint holds the clock itself, so the run builds (GCP invoice months end in
# Pacific time, a few hours after the UTC month)
BOUNDARY = timedelta(days=2)
TIMES = {
    "attempts": ("started_at", "ended_at"),
    "attempt_resources": ("started_at", "ended_at"),
    "attempt_events": ("event_at", "event_at"),
}


@dataclass(frozen=True)
class Fingerprints:
    """The hashes of one run's inputs: the parts every period shares, and each month's own."""

    shared: dict[str, str]
    months: dict[str, dict[str, str]] = field(default_factory=dict)

    def record(self) -> dict[str, object]:
        return {"shared": dict(self.shared), "months": {k: dict(v) for k, v in self.months.items()}}

    @classmethod
    def from_record(cls, body: object) -> Fingerprints | None:
        if not isinstance(body, dict) or not isinstance(body.get("shared"), dict):
            return None
        months = body.get("months")
        return cls(dict(body["shared"]), dict(months) if isinstance(months, dict) else {})

    def moved(self, previous: Fingerprints | None) -> list[str]:
        """The parts that differ from ``previous`` ("config", "2026-10 deliveries", ...)."""
        if previous is None:
            return ["no previous fingerprints"]
        shared = self.shared
        moved = [name for name in sorted(shared) if previous.shared.get(name) != shared[name]]
        for month in sorted(set(self.months) | set(previous.months)):
            mine, theirs = self.months.get(month, {}), previous.months.get(month, {})
            for part in sorted(set(mine) | set(theirs)):
                if mine.get(part) != theirs.get(part):
                    moved.append(f"{month} {part}")
        return moved


def fingerprints(
    deliveries: Iterable[Delivery],
    telemetry: dict[str, pa.Table],
    config_hash: str,
    invoice_file: dict[str, str] | None,
    clock: datetime,
    gcp_settle_days: int,
) -> Fingerprints:
    """Every part of a run's inputs, hashed (see the module's docstring)."""
    deliveries = list(deliveries)
    listed = _delivery_parts(deliveries)
    months = sorted({_month(period) for _provider, period in listed} - {None})
    con = duckdb.connect()
    try:
        for name, table in telemetry.items():
            con.register(name, table)
        shared_telemetry, by_month = _telemetry_parts(con, telemetry, months)
        held_at_clock = _held_at_clock(con, telemetry, clock)
    finally:
        con.close()
    shared = {
        "config": config_hash,
        "invoices": _digest(invoice_file),
        "code": code_fingerprint(),
        "telemetry": shared_telemetry,
        "deliveries": _digest(sorted(listed.items())),
        # estimates stop at the clock: while telemetry holds an interval there, every night differs
        "clock": clock.isoformat() if held_at_clock else "nothing held at the clock",
    }
    delivered_at = _last_delivered(deliveries)
    per_month: dict[str, dict[str, str]] = {month: {} for month in months}
    grouped: dict[tuple[str, str], list[object]] = {}
    for (provider, period), digest in sorted(listed.items()):
        month = _month(period)
        if month is not None:
            grouped.setdefault((month, provider), []).append([period, digest])
    for (month, provider), parts in grouped.items():
        per_month[month][f"{provider} deliveries"] = _digest(parts)
    for month in months:
        per_month[month]["telemetry"] = by_month.get(month, _digest(None))
        per_month[month]["clock"] = _clock_part(month, clock, delivered_at, gcp_settle_days)
    return Fingerprints(shared, per_month)


@cache
def code_fingerprint() -> str:
    """The runcost version and every file of the package that makes a published number."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parents[1]
    roots = [package, sql_root(), package.parent / "schemas"]
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".sql", ".csv") and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(root)}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _delivery_parts(deliveries: list[Delivery]) -> dict[tuple[str, str], str]:
    """(provider, billing period) -> a hash of its current deliveries and their files."""
    parts: dict[tuple[str, str], list[object]] = {}
    for delivery in deliveries:
        record = delivery_record(delivery)
        files = sorted((str(item["name"]), str(item["sha256"])) for item in record["files"])
        # a delivery without recorded checksums is hashed by its file names and sizes
        files = files or sorted((path.name, str(path.stat().st_size)) for path in delivery.files)
        parts.setdefault((delivery.provider, delivery.billing_period), []).append(
            [delivery.export, delivery.delivery_id, files]
        )
    return {key: _digest(sorted(value, key=str)) for key, value in parts.items()}


def _telemetry_parts(
    con: duckdb.DuckDBPyConnection, telemetry: dict[str, pa.Table], months: list[str]
) -> tuple[str, dict[str, str]]:
    """A hash of all telemetry rows, and per billing month of the rows overlapping it."""
    totals = []
    for name in sorted(telemetry):
        rows, total = con.execute(
            f"select count(*), coalesce(sum(hash(t)), 0)::hugeint from {name} as t"
        ).fetchone()
        totals.append([name, rows, str(total)])
    by_month: dict[str, list[object]] = {month: [] for month in months}
    if months:
        bounds = [(month, *_bounds(month)) for month in months]
        con.execute("create table months (month varchar, starts timestamptz, ends timestamptz)")
        con.executemany("insert into months values (?, ?, ?)", bounds)
        for name, (start, end) in TIMES.items():
            if name not in telemetry:
                continue
            # a row without times belongs to every month: nothing says which it touches
            for month, rows, total in con.execute(
                f"select months.month, count(*), sum(hash(t))::hugeint from {name} as t "
                f"inner join months on coalesce(t.{start} < months.ends, true) "
                f"and coalesce(t.{end} >= months.starts, true) group by all"
            ).fetchall():
                by_month[month].append([name, rows, str(total)])
    return _digest(totals), {month: _digest(sorted(parts)) for month, parts in by_month.items()}


def _held_at_clock(
    con: duckdb.DuckDBPyConnection, telemetry: dict[str, pa.Table], clock: datetime
) -> bool:
    """Some attempt or resource interval is open, or ends after the clock."""
    for name in ("attempts", "attempt_resources"):
        if name in telemetry:
            found = con.execute(
                f"select count(*) from {name} where ended_at is null or ended_at > ?", [clock]
            ).fetchone()[0]
            if found:
                return True
    return False


def _clock_part(
    month: str, clock: datetime, delivered_at: dict[str, datetime], settle_days: int
) -> str:
    end = _bounds(month)[1]
    if abs(clock - end) <= BOUNDARY:
        return clock.isoformat()
    parts = ["ended" if clock >= end else "open"]
    last = delivered_at.get(month)
    if last is not None:
        settled = clock - timedelta(days=settle_days)
        if abs(settled - last) <= BOUNDARY:
            return clock.isoformat()
        parts.append("settled" if last <= settled else "settling")
    return " ".join(parts)


def _last_delivered(deliveries: list[Delivery]) -> dict[str, datetime]:
    """The latest delivery time per billing month (GCP's final rule counts days from it)."""
    latest: dict[str, datetime] = {}
    for delivery in deliveries:
        month = _month(delivery.billing_period)
        text = delivery_record(delivery).get("delivered_at")
        if month is None or not isinstance(text, str):
            continue
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            continue
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        if month not in latest or when > latest[month]:
            latest[month] = when
    return latest


def _month(period: str) -> str | None:
    """YYYY-MM of a delivery's billing period (YYYY-MM, YYYYMM or a day YYYY-MM-DD)."""
    text = period.replace("-", "")
    if len(text) < 6 or not text[:6].isdigit() or not 1 <= int(text[4:6]) <= 12:
        return None
    return f"{text[:4]}-{text[4:6]}"


def _bounds(month: str) -> tuple[datetime, datetime]:
    year, number = int(month[:4]), int(month[5:7])
    start = datetime(year, number, 1, tzinfo=UTC)
    end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
