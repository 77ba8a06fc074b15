"""What a run's manifest says: how it ended, its checks, its time, the bill by period."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipeline.warehouse.lock import running_holder

# the manifest keys that say how a run ended, copied when the run recorded them
_ENDING = ("started_at", "finished_at", "error", "unchanged_from")
# a record still saying running while no run holds the lock: the process ended without
# recording its outcome (killed, or the disk was full when it tried)
GONE = (
    "crashed or stopped: the process (pid {pid}) is gone without recording how the run ended "
    "(killed, or the disk was full); see its log for the error, free disk space if it is full, "
    "and run again (the next run records it as interrupted)"
)


@dataclass(frozen=True)
class LastRun:
    """A run as its manifest records it; status names an unreadable manifest as well."""

    run_id: str
    status: str
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    unchanged_from: str | None = None
    checks: dict[str, str] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    # the inputs that moved since the snapshot's run, so the run built ("telemetry",
    # "2026-10 aws deliveries", "--full-refresh"); empty when it found nothing new and built nothing
    built_because: list[str] = field(default_factory=list)
    # per billing month: {"action": built | carried forward, "why": [...], "rows": ...}
    period_builds: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def built(self) -> bool:
        """Whether the run built the models (a night with nothing new builds nothing)."""
        return "build" in self.stage_seconds

    @property
    def seconds(self) -> float:
        """The run's time, summed over its stages."""
        return sum(self.stage_seconds.values())

    @property
    def failed_checks(self) -> list[str]:
        """The checks that did not pass, by name."""
        return sorted(name for name, value in self.checks.items() if value != "passed")

    def to_json(self) -> dict[str, Any]:
        """The run as `runcost status --format json` writes it (unrecorded keys left out)."""
        found: dict[str, Any] = {"run_id": self.run_id, "status": self.status}
        found |= {key: getattr(self, key) for key in _ENDING if getattr(self, key) is not None}
        found |= {"checks": self.checks, "stage_seconds": self.stage_seconds}
        found |= {"built_because": self.built_because} if self.built_because else {}
        return found | ({"period_builds": self.period_builds} if self.period_builds else {})


@dataclass(frozen=True)
class PeriodTotal:
    """The bill of one billing period and currency, in the four bases, and its cost lines."""

    billing_period: str
    billing_currency: str
    billed_cost: Decimal
    effective_cost: Decimal
    list_cost: Decimal
    net_cost: Decimal
    cost_lines: int


@dataclass(frozen=True)
class RunOutcome:
    """What one run did: periods touched, new deliveries, bill totals, checks, stage times."""

    run_id: str
    status: str
    periods: list[str]
    new_deliveries: list[str]
    totals: list[PeriodTotal]
    checks: dict[str, str]
    stage_seconds: dict[str, float]
    unchanged_from: str | None

    @property
    def checks_passed(self) -> int:
        """How many checks passed."""
        return sum(value == "passed" for value in self.checks.values())


def last_run(manifest: Path) -> LastRun:
    """The run a manifest.json records; an unreadable one gives the error as its status."""
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return LastRun(run_id=manifest.parent.name, status=f"unreadable manifest: {error}")
    ending = {key: record[key] for key in _ENDING if key in record}
    status = record["status"]
    if status == "running" and not _holds_the_lock(manifest.parent.parent.parent, record):
        status = "failed"
        ending["error"] = GONE.format(pid=record.get("pid", "?"))
    return LastRun(
        run_id=record["run_id"],
        status=status,
        **ending,
        checks=record.get("checks") or {},
        stage_seconds=record.get("stage_seconds") or {},
        built_because=list((record.get("inputs") or {}).get("built_because") or []),
        period_builds=dict(record.get("period_builds") or {}),
    )


def _holds_the_lock(warehouse: Path, record: dict[str, Any]) -> bool:
    """Whether the run a manifest records as running holds the warehouse lock now: a run holds
    it from before its record is written until after it records how it ended."""
    holder = running_holder(warehouse)
    return holder is not None and holder.run_id in (None, record.get("run_id"))


def run_outcome(manifest: Path) -> RunOutcome:
    """Read a finished run's manifest.json into what its summary shows."""
    record = json.loads(manifest.read_text(encoding="utf-8"))
    deliveries = (record.get("inputs") or {}).get("deliveries", [])
    totals = record.get("totals") or []
    return RunOutcome(
        run_id=record["run_id"],
        status=record["status"],
        periods=sorted({item["billing_period"] for item in totals}),
        new_deliveries=sorted({item["billing_period"] for item in deliveries if item["new"]}),
        totals=[
            PeriodTotal(
                billing_period=item["billing_period"],
                billing_currency=item["billing_currency"],
                billed_cost=Decimal(item["billed_cost"]),
                effective_cost=Decimal(item["effective_cost"]),
                list_cost=Decimal(item["list_cost"]),
                net_cost=Decimal(item["net_cost"]),
                cost_lines=int(item["cost_lines"]),
            )
            for item in totals
        ],
        checks=record.get("checks") or {},
        stage_seconds=record.get("stage_seconds") or {},
        unchanged_from=record.get("unchanged_from"),
    )
