"""Nights that build only the billing months whose inputs moved and carry the others forward.

A month is carried forward when none of its own fingerprint parts moved (its deliveries, the
telemetry overlapping it, what the clock decides for it) and no part every month shares moved
(configuration, invoices, code, telemetry, the clock). The run then registers only the built
months' deliveries, builds every model whose rows belong to one billing period from them, and
adds the carried months' rows of each such published table from the current snapshot: a table's
partitions of those months (hard links for the Parquet a model writes, a read of the Parquet for
the build's tables) and the profiles their lines use. The models that combine periods
(`-- periods: combined`) and the checks of them are then built over every month. Publishing finds
the carried partitions equal to the current snapshot's and links them.

A night is built whole (``Scope`` None) when some shared part moved, a month disappeared, the
engine does not carry periods, a delivery comes from a provider whose delivery days do
not follow its billing periods (a Google Cloud partition day may hold the previous invoice
month's rows), the current snapshot holds split cost allocation rows (the split pods' idle
shares are a build step, not published) or a partitioned table with rows of no billing period.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.common.duck import literal
from pipeline.dag.engines.base import Engine
from pipeline.dag.models import PUBLISHED_TABLES, Model
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.fingerprints import ALL_DELIVERIES, month_of, month_of_part
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.snapshots import DamagedRecord, snapshot_record

SPLIT_ROWS = "normalized.split_cost_lines"
# the providers a delivery of which may hold rows of another month than its period's
UNBOUNDED = frozenset(provider.name for provider in PROVIDERS if not provider.bounds_months)


@dataclass(frozen=True)
class Scope:
    """What a night builds: ``built`` months from their deliveries; ``carried`` months from
    the snapshot in ``folder`` (its snapshot.json: ``record``)."""

    built: tuple[str, ...]
    carried: tuple[str, ...]
    folder: Path
    record: dict
    # per table carried in: its carried periods' (value, rows, sum of row hashes), as the
    # snapshot recorded them, for the publish to take instead of hashing those rows again
    known: dict[str, tuple[tuple[str, int, str], ...]] = field(default_factory=dict)

    def deliveries(self, deliveries: Iterable[Delivery]) -> list[Delivery]:
        """The deliveries of the built months: the only ones the night reads."""
        return [item for item in deliveries if month_of(item.billing_period) in self.built]


def scope(
    moved: list[str],
    months: Iterable[str],
    previous_months: Iterable[str],
    deliveries: Iterable[Delivery],
    folder: Path | None,
    carries_periods: bool,
) -> Scope | None:
    """The months to build and to carry, or None to build every month (see the module)."""
    months, previous_months = set(months), set(previous_months)
    own = {month for part in moved if (month := month_of_part(part))}
    shared = [part for part in moved if not month_of_part(part)]
    if not carries_periods or folder is None or any(part != ALL_DELIVERIES for part in shared):
        return None
    if not previous_months <= months or any(item.provider in UNBOUNDED for item in deliveries):
        return None
    carried = tuple(sorted(months - own))
    built = tuple(sorted(months & own))
    if not carried or not built:
        return None
    try:
        record = snapshot_record(folder)
    except DamagedRecord:
        return None
    tables = (record or {}).get("tables")
    if not isinstance(tables, dict) or (tables.get(SPLIT_ROWS) or {}).get("rows"):
        return None
    if any(_rows_of_no_period(entry) for entry in tables.values()):
        return None
    return Scope(built, carried, folder, record)


def _rows_of_no_period(entry: object) -> bool:
    """A published table some of whose rows have no billing period (in no partition)."""
    if not isinstance(entry, dict) or not entry.get("partitions"):
        return False
    held = sum(int(rows) for rows, _total in entry["partitions"].values())
    return held != int(entry.get("rows") or 0)


def carry_in(scope: Scope, engine: Engine, built: list[Model]) -> None:
    """Add the carried months' rows of every published table among ``built`` (the models
    whose rows belong to one period, built from the built months' lines)."""
    tables = scope.record["tables"]
    for model in built:
        entry = tables.get(model.qualified)
        if model.materialization not in PUBLISHED_TABLES or not isinstance(entry, dict):
            continue
        if model.carried_by is not None:  # the rows the carried months' rows of a table use
            key, table = model.carried_by
            used = tables.get(table) or {}
            values = [value for value in (used.get("partitions") or {}) if value in scope.carried]
            if values and entry.get("rows"):
                engine.carry(model, scope.folder, entry, values, keyed=(key, used))
            continue
        partitions = entry.get("partitions") or {}
        values = [value for value in partitions if value in scope.carried]
        if not values:
            continue
        scope.known[model.qualified] = tuple(
            (value, int(partitions[value][0]), str(partitions[value][1])) for value in values
        )
        engine.carry(model, scope.folder, entry, values)


def in_months(column: str, built: tuple[str, ...] | None) -> str:
    """A SQL condition keeping the rows whose billing period ``column`` is a month the night
    built: the passes over the lines after a build (warnings, the restatement guard) read the
    built months alone, a carried month's lines being the snapshot's own. None: every month."""
    if built is None:
        return "true"
    return f"{column} in ({', '.join(literal(month) for month in built) or 'null'})"
