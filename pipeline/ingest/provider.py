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
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.common.errors import InputError
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
    # every row of a delivery belongs to the billing month its period names, so a night may
    # build that month alone (pipeline.run.carry); False when a delivery may hold another
    # month's rows (a GCP partition day holds rows of the previous invoice month)
    bounds_months: bool = True
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


# A line id holds its file's index in 28 bits (pipeline/dag/macros.py line_id_of): the period's
# key (days from KEY_EPOCH to its first day) in 15, its file's place among the period's in 13
PERIOD_FILES = 1 << 13
FILE_ROWS = 1 << 28  # a line's row in its file, from 0, is below it
PERIOD_KEYS = 1 << 15
KEY_EPOCH = date(2000, 1, 1)
KEY_LAST = date.fromordinal(KEY_EPOCH.toordinal() + PERIOD_KEYS - 1)

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
    (file_index, which line ids are made of) by billing period: the period's key
    (``period_key``) times PERIOD_FILES plus the file's place among the period's files, in the
    order of export and path. A delivery of one period never moves the line ids of another, so
    a period whose deliveries stay keeps its line ids whatever else is delivered. Returns the
    files in file_index order."""
    import pyarrow.parquet as pq  # here: config loads the registry on every command

    by_key: dict[int, list[tuple[Path, Delivery]]] = {}
    for delivery in sorted(deliveries, key=lambda item: (item.export, item.billing_period)):
        listed = by_key.setdefault(period_key(delivery.billing_period, delivery.folder), [])
        listed += [(path, delivery) for path in sorted(delivery.files)]
    files: list[tuple[int, Path, Delivery]] = []
    for key, listed in sorted(by_key.items()):
        if len(listed) > PERIOD_FILES:
            folders = ", ".join(sorted({str(delivery.folder) for _path, delivery in listed}))
            raise InputError(
                f"{folders}: {len(listed):,} data files for billing period "
                f"{listed[0][1].billing_period}, more than the {PERIOD_FILES:,} one period's "
                "line ids can number; export the period in fewer, larger files and run again"
            )
        files += [(key * PERIOD_FILES + place, *item) for place, item in enumerate(listed)]
    for _index, path, _delivery in files:
        rows = pq.read_metadata(path).num_rows  # the footer only
        if rows > FILE_ROWS:
            raise InputError(
                f"{path}: {rows:,} rows in one data file, more than the {FILE_ROWS:,} a "
                "file's line ids can number; export the period in smaller files and run again"
            )
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
                for index, path, delivery in files
            ],
        )
    return [path for _index, path, _delivery in files]


def period_key(period: str, folder: Path | None = None) -> int:
    """The days from KEY_EPOCH to the first day of a delivery's billing period (YYYY-MM,
    YYYYMM, or a partition day YYYY-MM-DD; ``folder``: the delivery, named in the error), below
    PERIOD_KEYS: file indexes of different periods never meet."""
    where = f"{folder}: " if folder is not None else ""
    text = period.replace("-", "")
    day = None
    if len(text) in (6, 8) and text.isascii() and text.isdigit():
        try:
            day = date(int(text[:4]), int(text[4:6]), int(text[6:8]) if len(text) == 8 else 1)
        except ValueError:
            day = None
    if day is None:
        raise InputError(
            f"{where}billing period {period!r} is not a month (YYYY-MM, YYYYMM) or a day "
            "(YYYY-MM-DD); remove that delivery folder from raw/ and run again"
        )
    key = (day - KEY_EPOCH).days
    if not 0 <= key < PERIOD_KEYS:
        raise InputError(
            f"{where}billing period {period} is outside {KEY_EPOCH} to {KEY_LAST}, the periods "
            "runcost numbers line ids for; remove that delivery folder from raw/ and run again"
        )
    return key


def source_file_name(path: Path, folder: Path) -> str:
    """A stored file's name within its delivery folder (raw.*_files.source_file)."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return path.name
