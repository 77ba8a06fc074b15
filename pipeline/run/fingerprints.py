"""What a run's published rows depend on, hashed: the inputs of every billing period and of all.

A run whose fingerprints equal those of the run that serves the current snapshot would publish
that snapshot again: it is decided before any build (pipeline.run.nightly) and recorded as
``unchanged``. Each part is hashed on its own, so a run record says which part moved:

- ``deliveries``: per billing period of every source, its current delivery ids and data files'
  sha256 (from delivery.json, never read again);
- ``telemetry``: every row of the four canonical tables, order-independent; per billing month
  the rows whose times overlap it;
- ``config``, ``invoices``: runcost.toml as read and the invoice file's sha256;
- ``code``: the runcost version, the installed versions of the distributions runcost requires
  (less its test and bench tooling) and every file of the package (SQL models, macros, ingest);
- ``clock``: what the run clock decides, per billing month (ended or not, how many GCP
  deliveries are settled, or the clock itself near a month's end) and for all (the clock itself
  when some interval of the telemetry is still held at it, since estimates stop there).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import metadata
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import __version__
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.record import delivery_record
from pipeline.run.sources import TELEMETRY_TABLES
from pipeline.warehouse.raw_store import Delivery

SETTLING = frozenset(provider.name for provider in PROVIDERS if provider.settles)

# a billing period whose end is this close to the clock has its status decided by the hour:
# the fingerprint holds the clock itself, so the run builds (GCP invoice months end in
# Pacific time, a few hours after the UTC month)
BOUNDARY = timedelta(days=2)
# the extras of runcost's requirements that never touch a published number: tools to test,
# lint and measure it
TOOLING = frozenset({"test", "bench"})
# parts that say how the inputs were read, not what they hold: equal content read from other
# bytes (a telemetry file written again) is no change
READ_AS = frozenset({"telemetry files"})
# the shared part that sums every month's own delivery parts: it moves whenever one of them does
ALL_DELIVERIES = "deliveries"
TIMES = {
    "attempts": ("started_at", "ended_at"),
    "attempt_resources": ("started_at", "ended_at"),
    "attempt_events": ("event_at", "event_at"),
    "gpu_usage": ("started_at", "ended_at"),
}


@dataclass(frozen=True)
class Fingerprints:
    """The hashes of one run's inputs: the parts every period shares, and each month's own.

    ``telemetry_until``: the latest end of an attempt or resource interval ("open" when one has
    none), kept so a run whose telemetry files did not change can tell the clock part without
    reading them; it is derived from the telemetry, so it is not compared on its own.
    """

    shared: dict[str, str]
    months: dict[str, dict[str, str]] = field(default_factory=dict)
    telemetry_until: str | None = None

    def record(self) -> dict[str, object]:
        return {
            "shared": dict(self.shared),
            "months": {month: dict(parts) for month, parts in self.months.items()},
            "telemetry_until": self.telemetry_until,
        }

    @classmethod
    def from_record(cls, body: object) -> Fingerprints | None:
        if not isinstance(body, dict) or not isinstance(body.get("shared"), dict):
            return None
        months = body.get("months")
        until = body.get("telemetry_until")
        return cls(
            dict(body["shared"]),
            dict(months) if isinstance(months, dict) else {},
            until if isinstance(until, str) else None,
        )

    def moved(self, previous: Fingerprints | None) -> list[str]:
        """The parts that differ from ``previous`` ("config", "2026-10 deliveries", ...)."""
        if previous is None:
            return ["no previous fingerprints"]
        shared = {name: value for name, value in self.shared.items() if name not in READ_AS}
        moved = [name for name in sorted(shared) if previous.shared.get(name) != shared[name]]
        for month in sorted(set(self.months) | set(previous.months)):
            mine, theirs = self.months.get(month, {}), previous.months.get(month, {})
            for part in sorted(set(mine) | set(theirs)):
                if mine.get(part) != theirs.get(part):
                    moved.append(f"{month} {part}")
        return moved


@dataclass(frozen=True)
class Inputs:
    """What a run fingerprints besides the telemetry tables."""

    deliveries: list[Delivery]
    config_hash: str
    invoice_file: dict[str, str] | None
    telemetry_files: str  # telemetry_files_digest, or "adapters"
    clock: datetime
    settle_days: int  # [periods] gcp_settle_days: a settling provider's days to final


def fingerprints(inputs: Inputs, telemetry: dict[str, pa.Table]) -> Fingerprints:
    """Every part of a run's inputs, hashed (see the module's docstring)."""
    listed = _delivery_parts(inputs.deliveries)
    months = sorted({month_of(period) for _provider, period in listed} - {None})
    con = duckdb.connect()
    try:
        for name, table in telemetry.items():
            con.register(name, table)
        shared_telemetry, by_month = _telemetry_parts(con, telemetry, months)
        until = _telemetry_until(con, telemetry)
    finally:
        con.close()
    return _assembled(inputs, listed, months, shared_telemetry, by_month, until)


def unread_telemetry(inputs: Inputs, previous: Fingerprints) -> Fingerprints | None:
    """The fingerprints of a run whose telemetry files are those ``previous`` read: its
    telemetry parts are taken from ``previous`` without reading the files; None when the files
    differ (or come from adapters, which only reading can tell)."""
    files = previous.shared.get("telemetry files")
    if inputs.telemetry_files == "adapters" or files != inputs.telemetry_files:
        return None
    if previous.telemetry_until is None or "telemetry" not in previous.shared:
        return None
    listed = _delivery_parts(inputs.deliveries)
    months = sorted({month_of(period) for _provider, period in listed} - {None})
    by_month = {
        month: previous.months[month]["telemetry"]
        for month in months
        if "telemetry" in previous.months.get(month, {})
    }
    shared_telemetry = previous.shared["telemetry"]
    return _assembled(inputs, listed, months, shared_telemetry, by_month, previous.telemetry_until)


def telemetry_files_digest(folder: Path | None, keep_published: bool) -> str:
    """sha256 over the names and bytes of the telemetry files a run may read from ``folder``
    (every file named after a canonical table, whatever its suffix); "adapters" when the
    telemetry does not come from files. Only regular files are read: the loader refuses any
    other kind, so the digest differs and the run reads (and refuses) it."""
    if folder is None or not folder.is_dir():
        return "adapters"
    digest = hashlib.sha256(f"keep_published={keep_published}\n".encode())
    for path in sorted(folder.iterdir()):
        if path.stem not in TELEMETRY_TABLES:
            continue
        digest.update(f"{path.name}\n".encode())
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        else:
            digest.update(b"not a regular file\n")
    return digest.hexdigest()[:32]


def _assembled(
    inputs: Inputs,
    listed: dict[tuple[str, str], str],
    months: list[str],
    shared_telemetry: str,
    by_month: dict[str, str],
    until: str,
) -> Fingerprints:
    clock = inputs.clock
    held = until == "open" or datetime.fromisoformat(until) > clock
    shared = {
        "config": inputs.config_hash,
        "invoices": _digest(inputs.invoice_file),
        "code": code_fingerprint(),
        "telemetry": shared_telemetry,
        "telemetry files": inputs.telemetry_files,
        ALL_DELIVERIES: _digest(sorted(listed.items())),
        # estimates stop at the clock: while telemetry holds an interval there, every night differs
        "clock": clock.isoformat() if held else "nothing held at the clock",
    }
    settled = _settled(inputs.deliveries, clock, inputs.settle_days)
    per_month: dict[str, dict[str, str]] = {month: {} for month in months}
    grouped: dict[tuple[str, str], list[object]] = {}
    for (provider, period), digest in sorted(listed.items()):
        month = month_of(period)
        if month is not None:
            grouped.setdefault((month, provider), []).append([period, digest])
    for (month, provider), parts in grouped.items():
        per_month[month][f"{provider} deliveries"] = _digest(parts)
    for month in months:
        per_month[month]["telemetry"] = by_month.get(month, _digest(None))
        per_month[month]["clock"] = _clock_part(month, clock, settled.get(month))
    return Fingerprints(shared, per_month, until)


@cache
def code_fingerprint() -> str:
    """The runcost version and every file of the package that makes a published number: the
    package (with its SQL when installed), and sql/ and schemas/ beside it in a checkout."""
    digest = hashlib.sha256(__version__.encode())
    for name in requirements():  # an upgraded engine or parser may compute differently
        digest.update(f"{name} {_version(name)}\n".encode())
    package = Path(__file__).resolve().parents[1]
    for root in (package, package.parent / "sql", package.parent / "schemas"):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".sql", ".csv") and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(root)}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def requirements() -> list[str]:
    """The distributions runcost requires to read, compute and write (its extras' too, less the
    tooling), from the installed metadata: nothing is imported. None when runcost runs from a
    checkout that was never installed; the version and the files still count."""
    try:
        declared = metadata.requires("runcost") or []
    except metadata.PackageNotFoundError:
        return []
    names = set()
    for requirement in declared:
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if extra is None or extra[1] not in TOOLING:
            names.add(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower())
    return sorted(names)


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


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


def _telemetry_until(con: duckdb.DuckDBPyConnection, telemetry: dict[str, pa.Table]) -> str:
    """The latest time a resource is held until, as marts.cost_estimates reads it (its own
    end, else its attempt's); "open" when some resource has neither (held until the clock)."""
    if "attempt_resources" not in telemetry or "attempts" not in telemetry:
        return datetime(1970, 1, 1, tzinfo=UTC).isoformat()
    open_ended, last = con.execute(
        "select count(*) filter (where until is null), max(until) from ("
        "select coalesce(resources.ended_at, attempts.ended_at) as until "
        "from attempt_resources as resources "
        "inner join attempts on resources.attempt_id = attempts.attempt_id)"
    ).fetchone()
    if open_ended:
        return "open"
    return (last or datetime(1970, 1, 1, tzinfo=UTC)).astimezone(UTC).isoformat()


def _clock_part(month: str, clock: datetime, settled: int | None) -> str:
    """What the clock decides for a billing month: ended or not (the clock itself near the end,
    where a GCP invoice month's Pacific midnight may fall), and how many GCP deliveries are
    settled (delivered ``gcp_settle_days`` or more before the clock): GCP's final rule (no rows
    for that many days) changes only when a delivery crosses that line."""
    end = _bounds(month)[1]
    if abs(clock - end) <= BOUNDARY:
        return clock.isoformat()
    parts = ["ended" if clock >= end else "open"]
    if settled is not None:
        parts.append(f"{settled} settled")
    return " ".join(parts)


def _settled(deliveries: list[Delivery], clock: datetime, settle_days: int) -> dict[str, int]:
    """Per billing month, the deliveries of a settling provider (one whose closed month is final
    only after ``settle_days`` without rows) delivered that long or more before ``clock``."""
    limit = clock - timedelta(days=settle_days)
    counts: dict[str, int] = {}
    for delivery in deliveries:
        month = month_of(delivery.billing_period)
        if delivery.provider not in SETTLING or month is None:
            continue
        when = _delivered_at(delivery)
        counts[month] = counts.get(month, 0) + int(when is not None and when <= limit)
    return counts


def _delivered_at(delivery: Delivery) -> datetime | None:
    text = delivery_record(delivery).get("delivered_at")
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def month_of_part(part: str) -> str | None:
    """The month a moved part names ("2026-10 aws deliveries"), or None for a shared part."""
    return month_of(part.split(" ", 1)[0])


def month_of(period: str) -> str | None:
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
