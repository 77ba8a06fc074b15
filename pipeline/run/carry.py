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
engine is not DuckDB, a delivery comes from a provider whose delivery days do not follow its
billing periods (a Google Cloud partition day may hold the previous invoice month's rows), or
the current snapshot holds split cost allocation rows (the split pods' idle shares are a build
step, not published) or a partitioned table with rows of no billing period.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipeline.common.duck import literal
from pipeline.dag.engines.base import Engine
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.models import PUBLISHED_TABLES, Model
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.fingerprints import month_of
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.snapshots import DamagedRecord, snapshot_record
from pipeline.warehouse.views import PARTITION_COLUMN, TableContent, typed_query

# the table of profiles: one row per profile_key, of any period's lines
PROFILES = "normalized.cost_line_profiles"
FACTS = "normalized.cost_line_facts"
SPLIT_ROWS = "normalized.split_cost_lines"
SETTLING = frozenset(provider.name for provider in PROVIDERS if provider.settles)
# the fingerprint part every month shares that only sums the months' own delivery parts
MONTHLY_SUM = "deliveries"


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
    engine: str,
) -> Scope | None:
    """The months to build and to carry, or None to build every month (see the module)."""
    months, previous_months = set(months), set(previous_months)
    own = {part.split(" ", 1)[0] for part in moved if month_of(part.split(" ", 1)[0])}
    shared = [part for part in moved if not month_of(part.split(" ", 1)[0])]
    if engine != "duckdb" or folder is None or any(part != MONTHLY_SUM for part in shared):
        return None
    if not previous_months <= months or any(item.provider in SETTLING for item in deliveries):
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
    if not isinstance(engine, DuckDBEngine):
        raise TypeError("a night carrying billing periods forward builds on DuckDB")
    tables = scope.record["tables"]
    for model in built:
        entry = tables.get(model.qualified)
        if model.materialization not in PUBLISHED_TABLES or not isinstance(entry, dict):
            continue
        if model.qualified == PROFILES:
            _carry_profiles(engine.con, scope, entry, tables.get(FACTS))
            continue
        partitions = entry.get("partitions") or {}
        values = [value for value in partitions if value in scope.carried]
        if not values:
            continue
        scope.known[model.qualified] = tuple(
            (value, int(partitions[value][0]), str(partitions[value][1])) for value in values
        )
        if model.qualified in engine.published_files:
            _link_partitions(engine, model, scope, entry, values)
        else:
            relation = _partitions_query(engine.con, scope, entry, values)
            engine.con.execute(f"insert into {model.qualified} by name {relation}")


def _carry_profiles(
    con: duckdb.DuckDBPyConnection, scope: Scope, entry: dict, facts: dict | None
) -> None:
    """The profiles of the carried months' lines that the built months' lines do not use."""
    values = [value for value in ((facts or {}).get("partitions") or {}) if value in scope.carried]
    if not values or not entry.get("rows"):
        return
    keys = _partitions_query(con, scope, facts, values, columns=("profile_key",))
    profiles = f"read_parquet({literal(str(scope.folder / entry['path']))})"
    con.execute(
        f"insert into {PROFILES} by name select * from {profiles} where profile_key in "
        f"(select profile_key from ({keys})) and profile_key not in "
        f"(select profile_key from {PROFILES})"
    )


def _partitions_query(
    con: duckdb.DuckDBPyConnection,
    scope: Scope,
    entry: dict,
    values: list[str],
    columns: tuple[str, ...] | None = None,
) -> str:
    """A select of a published table's partitions ``values`` in the carried snapshot."""
    folders = [scope.folder / entry["path"] / f"{PARTITION_COLUMN}={value}" for value in values]
    files = "[" + ", ".join(literal(str(path / "*.parquet")) for path in folders) + "]"
    kinds = {str(name): str(kind) for name, kind in entry["columns"]}
    listed = columns or tuple(kinds)
    read = (
        f"read_parquet({files}, hive_partitioning = true, "
        f"hive_types = {{'{PARTITION_COLUMN}': '{kinds[PARTITION_COLUMN]}'}})"
    )
    select = ", ".join(f'"{name}"::{kinds[name]} as "{name}"' for name in listed)
    return f"select {select} from {read}"


def _link_partitions(
    engine: DuckDBEngine, model: Model, scope: Scope, entry: dict, values: list[str]
) -> None:
    """Hard-link the carried partitions' files into the model's published folder (a copy where
    the filesystem has no links) and point the build's view at every period."""
    target = engine.published_files[model.qualified]
    columns = tuple((str(name), str(kind)) for name, kind in entry["columns"])
    folder = target.parent / model.name
    if target.is_file():  # no row in the built months: written as one file
        target.unlink()
    for value in values:
        source = scope.folder / entry["path"] / f"{PARTITION_COLUMN}={value}"
        into = folder / f"{PARTITION_COLUMN}={value}"
        into.mkdir(parents=True, exist_ok=True)
        for path in sorted(source.iterdir()):
            try:
                os.link(path, into / path.name)
            except OSError:
                shutil.copy2(path, into / path.name)
    engine.published_files[model.qualified] = folder
    engine.period_values[model.qualified] = sorted(
        {*engine.period_values.get(model.qualified, ()), *values}
    )
    rows = int(entry.get("rows") or 0) or 1  # any rows: the layout of a partitioned table
    table = TableContent(model.qualified, model.qualified, columns, rows, "", folder)
    location = str(engine.published_folder.absolute())
    query = typed_query(engine.con, location, table)
    engine.con.execute(f"create or replace view {model.qualified} as {query}")
