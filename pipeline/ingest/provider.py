"""A billing provider as one object: everything the run, config, CLI and DAG need of it.

Each provider package (`pipeline/ingest/aws/`, `gcp/`, `focus/`) exports one `Provider` named
PROVIDER; pipeline/ingest/registry.py lists them. Code outside a provider's package loops over
the registry and reaches the provider only through these fields.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.common.macro import Macro

if TYPE_CHECKING:  # imported only for the types: config loads the registry on every command
    import duckdb

    from pipeline.warehouse.raw_store import Delivery


@dataclass(frozen=True)
class IngestContext:
    """What an ingest needs of the run besides its provider's own settings."""

    warehouse: Path
    raw_retention_days: int  # how long superseded deliveries stay in raw/
    # DuckDB settings for a connection doing large work, spilling into the folder given
    duckdb_limits: Callable[[Path], dict[str, str | int | bool]]
    resource_time: bool = True  # [attribution] resource_time: resource ids are needed
    settle_days: int = 3  # [periods]: days a closed month receives no rows before it is final


@dataclass(frozen=True)
class Ingested:
    """A provider's current deliveries, and what the run manifest records of its sources."""

    deliveries: list[Delivery]
    record: dict[str, object] | None = None  # under the provider's name in the manifest


@dataclass(frozen=True)
class TagKeys:
    """The configured attempt and experiment tag keys, as runcost.toml spells them."""

    attempt: tuple[str, ...]
    experiment: tuple[str, ...]


@dataclass(frozen=True)
class CheckReport:
    """A provider's part of `runcost check`: a table, warnings and whether a key failed."""

    lines: tuple[str, ...] = ()  # printed as they are (such as what was not asked)
    title: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # printed below the tag coverage
    failed: bool = False


def _same(settings: Any) -> Any:
    return settings


@dataclass(frozen=True)
class Provider:
    """One billing provider: its settings section, ingest, raw.* relations, staging models,
    tag check and classification."""

    name: str  # raw/<name>/, a delivery's provider, normalized.cost_lines.provider
    source_format: str  # normalized.cost_lines.source_format of its lines
    section: str  # its [section] of runcost.toml
    keys: frozenset[str]  # the keys allowed in that section
    # (the section's table, the folder relative paths start from, the file) -> its settings
    parse: Callable[[dict[str, Any], Path, str], Any]
    # its configured sources, as the run's ingest line names them (none: nothing configured)
    sources: Callable[[Any], list[str]]
    # (settings, context, periods allowed to shrink this once) -> current deliveries
    ingest: Callable[[Any, IngestContext, Iterable[str]], Ingested]
    # creates its raw.* relations over its deliveries (typed NULL relations when none)
    register: Callable[[duckdb.DuckDBPyConnection, list[Delivery]], None]
    staging_models: tuple[str, ...]  # the sql/staging/<file>.sql it owns
    tag_column: str  # the normalized cost line column holding its tags or labels
    # the settings that change results, in the config fingerprint
    fingerprint: Callable[[Any], tuple[object, ...]]
    # the settings with each location reduced to what does not depend on where it lies
    portable: Callable[[Any], Any] = _same
    # (settings, tag keys, whether to ask remote APIs, whether its lines are published)
    check: Callable[[Any, TagKeys, bool, bool], CheckReport] | None = None
    # a closed month is final only once no rows arrived for IngestContext.settle_days
    settles: bool = False
    # (the profile columns) -> the source columns (names, or (name, expression over the line
    # items' alias)) its staging.<name>_line_profiles view computes them from and keys them by
    profile_sources: Callable[[tuple[str, ...]], tuple[str | tuple[str, str], ...]] = lambda _: ()
    # its services' FOCUS ServiceSubcategory, by the service name on its lines (none: as delivered)
    service_subcategories: Mapping[str, str] = field(default_factory=dict)
    # its own classification rules, which its staging models call (<name>_gpu_model(...), ...)
    macros: tuple[Macro, ...] = ()
    # check name -> why it failed when this provider's input is the cause (the rows to fix)
    explains: Mapping[str, Callable[[duckdb.DuckDBPyConnection, list[dict]], str | None]] = field(
        default_factory=dict
    )

    @property
    def default(self) -> Any:
        """Its settings when runcost.toml has no section for it."""
        return self.parse({}, Path.cwd(), "runcost.toml")


# the warehouse's folder of the ingests' scratch files (pipeline/run/recovery.py clears what a dead
# run left there)
SCRATCH = ".ingest-staging"


@contextmanager
def scratch_folder(warehouse: Path, prefix: str = "") -> Iterator[Path]:
    """A new folder (not yet created) for one ingest's scratch files under the warehouse's
    SCRATCH folder; removed when the ingest ends, however it ends, with SCRATCH if left empty."""
    folder = warehouse / SCRATCH / f"{prefix}{secrets.token_hex(4)}"
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if folder.parent.is_dir() and not any(folder.parent.iterdir()):
            folder.parent.rmdir()


def register_files(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    deliveries: list[Delivery],
    period_column: str = "billing_period",
) -> list[Path]:
    """``relation`` (a provider's raw.*_files): one row per data file of ``deliveries``, numbered
    (file_index, which line ids are made of) in the order of export, period and path; returns
    the files in that order."""
    files = [
        (path, delivery)
        for delivery in sorted(deliveries, key=lambda item: (item.export, item.billing_period))
        for path in sorted(delivery.files)
    ]
    con.execute(
        f"create or replace table {relation} (filename varchar, file_index bigint, "
        f"delivery_id varchar, export_name varchar, {period_column} varchar, source_file varchar)"
    )
    if files:
        con.executemany(
            f"insert into {relation} values (?, ?, ?, ?, ?, ?)",
            [
                (
                    str(path),
                    index,
                    delivery.delivery_id,
                    delivery.export,
                    delivery.billing_period,
                    source_file_name(path, delivery.folder),
                )
                for index, (path, delivery) in enumerate(files)
            ],
        )
    return [path for path, _delivery in files]


def source_file_name(path: Path, folder: Path) -> str:
    """A stored file's name within its delivery folder (raw.*_files.source_file)."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return path.name
