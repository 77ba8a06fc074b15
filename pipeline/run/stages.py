"""The stages of a nightly run, each a function that returns what it produced."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import connect
from pipeline.config.loader import Config
from pipeline.dag.build import BuildReport, build
from pipeline.dag.engines.base import Engine
from pipeline.dag.models import Model, intermediates, published_views
from pipeline.dag.pools import log_pool_warnings
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.events import Events
from pipeline.run.fingerprints import (
    Fingerprints,
    Inputs,
    fingerprints,
    telemetry_files_digest,
    unread_telemetry,
)
from pipeline.run.history import previous_folder
from pipeline.run.invoices import check_invoice_currencies
from pipeline.run.lookalikes import warn_lookalike_tags
from pipeline.run.manifest import RunManifest
from pipeline.run.record import (
    HISTORY_TABLES,
    delivery_record,
    file_checksum,
    note_clock_skew,
    served_history,
)
from pipeline.run.restatement import check_restated_accounts
from pipeline.run.sources import TELEMETRY_TABLES
from pipeline.run.unchanged import Unchanged, nothing_new, previous_fingerprints, serving_record
from pipeline.warehouse.publish import (
    TableContent,
    content_hashes,
    publish,
    table_contents,
    view_contents,
)
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.snapshots import current_snapshot, unchanged_snapshot

log = logging.getLogger("runcost")


@dataclass(frozen=True)
class Ingested:
    """The current delivery of every billing source, and how the manifest records them."""

    deliveries: list[Delivery]
    record: dict[str, object]


@dataclass(frozen=True)
class Published:
    """A new snapshot, or the current one kept because the content did not change."""

    status: str  # "published" or "unchanged"
    folder: Path
    contents: list[TableContent]
    hashes: dict[str, str]
    unchanged_from: str | None = None
    # the billing periods hard-linked from the previous snapshot, by table
    shared: dict[str, list[str]] = field(default_factory=dict)


def ingest(config: Config, events: Events, allow_shrink: Iterable[str] = ()) -> Ingested:
    """Copy new deliveries of every configured billing source into raw/.

    ``allow_shrink``: periods whose re-delivery may empty or shrink them this once.
    """
    allow_shrink = tuple(allow_shrink)
    sources = [
        name for provider in PROVIDERS for name in provider.sources(config.providers[provider.name])
    ]
    events.start("ingest", ", ".join(sources) or "no billing source configured")
    context = config.ingest_context()
    deliveries: list[Delivery] = []
    records: dict[str, object] = {}
    for provider in PROVIDERS:
        ingested = provider.ingest(config.providers[provider.name], context, allow_shrink)
        deliveries += ingested.deliveries
        if ingested.record is not None:
            records[provider.name] = ingested.record
    new = sum(item.new for item in deliveries)
    events.done("ingest", f"{len(deliveries)} deliveries, {new} new")
    record: dict[str, object] = {
        "deliveries": [delivery_record(item) for item in deliveries],
        "invoice_file": file_checksum(config.periods.invoice_file),
    }
    record.update(records)
    return Ingested(deliveries, record)


def telemetry(config: Config, events: Events, clock: datetime) -> dict[str, pa.Table]:
    """The canonical telemetry tables, from files or the configured adapters; no time in the
    files or a source's tables may run past the run's ``clock`` by more than a day."""
    # imported here: validating telemetry takes pandera and polars (over a CPU second to
    # import), which a night with nothing new never needs
    from pipeline.telemetry.adapters import read_sources
    from pipeline.telemetry.canonical import empty_table
    from pipeline.telemetry.files import load_telemetry
    from pipeline.telemetry.published import keep_published

    events.start("telemetry", "canonical tables")
    if config.telemetry is None and not config.telemetry_sources:
        log.warning(
            "no [telemetry] path is configured: every cost line will be unallocated; "
            "set telemetry.path to the folder holding attempts.csv",
            extra={"stage": "telemetry"},
        )
        tables = {name: empty_table(name) for name in TELEMETRY_TABLES}
    elif not config.telemetry_sources:
        tables = load_telemetry(config.telemetry, now=clock)
    else:
        tables = read_sources(config, now=clock)
    tables.setdefault("gpu_usage", empty_table("gpu_usage"))  # measured by a prometheus source
    if config.telemetry_keep_published:
        # a re-delivered file names the attempts it updates; the ones it leaves out stay
        tables = keep_published(config.warehouse, tables)
    events.done("telemetry", f"{sum(table.num_rows for table in tables.values())} rows")
    return tables


def served_telemetry(
    config: Config, ingested: Ingested, clock: datetime, manifest: RunManifest, events: Events
) -> tuple[dict[str, pa.Table], Fingerprints] | None:
    """The telemetry tables of the current snapshot and this run's fingerprints, when the
    telemetry files are byte for byte those the serving run read with the same code and a clock
    not behind its own: reading, validating and merging them again gives those tables, so a
    night that re-delivers one month does not pay for every month's attempts. None otherwise
    (the run reads the files)."""
    unread = _unread(config, ingested, clock, manifest)
    current = current_snapshot(config.warehouse)
    if config.telemetry_sources or unread is None or current is None:
        return None
    record, prints = unread
    previous = previous_fingerprints(record)  # this run's code part is the code it runs
    if previous is None or previous.shared.get("code") != prints.shared.get("code"):
        return None
    folder = Path(current["snapshot"]) / "telemetry"
    try:
        tables = {name: pq.read_table(folder / f"{name}.parquet") for name in TELEMETRY_TABLES}
    except (OSError, pa.ArrowException):  # a damaged snapshot: the files are read instead
        return None
    (manifest.inputs or {})["telemetry_from"] = current["run_id"]
    events.start("telemetry", "canonical tables")
    log.info(
        "telemetry: the files are those snapshot %s read; its telemetry tables are used",
        current["run_id"],
        extra={"stage": "telemetry"},
    )
    events.done("telemetry", f"{sum(table.num_rows for table in tables.values())} rows")
    return tables, prints


def decide_unread(
    config: Config, ingested: Ingested, clock: datetime, manifest: RunManifest
) -> Unchanged | None:
    """Nothing new, told before reading the telemetry: the current snapshot when the telemetry
    files are byte for byte those the serving run read (its telemetry fingerprints stand) and
    every other part is equal too; None otherwise (the run reads the telemetry and decides)."""
    unread = _unread(config, ingested, clock, manifest)
    if unread is None:
        return None
    record, prints = unread
    same = nothing_new(config.warehouse, prints, record)
    if same is not None:
        inputs = manifest.inputs if manifest.inputs is not None else {}
        inputs["telemetry"] = (record.get("inputs") or {}).get("telemetry")
        inputs["fingerprints"] = prints.record()
    return same


def _unread(
    config: Config, ingested: Ingested, clock: datetime, manifest: RunManifest
) -> tuple[dict, Fingerprints] | None:
    """The serving run's record and this run's fingerprints taken without reading the
    telemetry, when its files are byte for byte those that run read and the clock is not
    behind that run's; None otherwise."""
    record = serving_record(config.warehouse)
    previous = previous_fingerprints(record)
    if record is None or previous is None or not _clock_not_behind(clock, record.get("clock")):
        return None
    prints = unread_telemetry(_inputs(config, ingested, clock, manifest), previous)
    return None if prints is None else (record, prints)


def decide(
    config: Config,
    ingested: Ingested,
    telemetry: dict[str, pa.Table],
    clock: datetime,
    manifest: RunManifest,
    forced: str | None = None,
    prints: Fingerprints | None = None,
) -> Unchanged | None:
    """The current snapshot when this run's inputs equal those of the run serving it (nothing
    new: no build); else None. Records the fingerprints, and why the run builds, in the
    manifest's inputs. ``forced``: why the run builds whatever the fingerprints say.
    ``prints``: the fingerprints, when they were taken without reading the telemetry."""
    if prints is None:
        prints = fingerprints(_inputs(config, ingested, clock, manifest), telemetry)
    inputs = manifest.inputs if manifest.inputs is not None else {}
    inputs["fingerprints"] = prints.record()
    record = serving_record(config.warehouse)
    if forced:
        inputs["built_because"] = [forced]
        return None
    same = nothing_new(config.warehouse, prints, record)
    if same is None:
        moved = prints.moved(previous_fingerprints(record))
        inputs["built_because"] = moved or ["the current snapshot is not served as published"]
    return same


def _inputs(config: Config, ingested: Ingested, clock: datetime, manifest: RunManifest) -> Inputs:
    invoice_file = ingested.record.get("invoice_file")
    files = None if config.telemetry_sources else config.telemetry
    return Inputs(
        deliveries=ingested.deliveries,
        config_hash=manifest.config_hash,
        invoice_file=invoice_file if isinstance(invoice_file, dict) else None,
        telemetry_files=telemetry_files_digest(files, config.telemetry_keep_published),
        clock=clock,
        settle_days=config.periods.gcp_settle_days,
    )


def _clock_not_behind(clock: datetime, recorded: object) -> bool:
    """The clock is not before the serving run's: telemetry it accepted, this run accepts."""
    try:
        return isinstance(recorded, str) and clock >= datetime.fromisoformat(recorded)
    except ValueError:
        return False


def open_build(path: Path, run_dir: Path, config: Config) -> duckdb.DuckDBPyConnection:
    """The run's build database, spilling into run_dir/tmp, with the configured limits."""
    settings = {"preserve_insertion_order": False, **config.duckdb_limits(run_dir / "tmp")}
    return connect(path, settings=settings)


def build_models(
    engine: Engine,
    models: list[Model],
    events: Events,
    carry: Callable[[Engine, list[Model]], None] | None = None,
) -> BuildReport:
    """Build every model and run the checks, timing the build and checks stages apart;
    ``carry``: add the carried months' rows between the two parts of the build (dag.build)."""
    checks = [model for model in models if model.layer == "checks"]
    events.start("build", "SQL models", total=len(models) - len(checks))
    checking = False

    def on_model(model: Model) -> None:
        nonlocal checking
        if model.layer == "checks" and not checking:
            checking = True
            events.start("checks", "invariants", total=len(checks))
        events.step("checks" if model.layer == "checks" else "build", model.qualified)

    report = build(engine, models, on_model=on_model, carry=carry)
    # checks may interleave with models in dependency order: time each stage by its models
    seconds = sum(value for name, value in report.seconds.items() if name.startswith("checks."))
    built = len(report.seconds) - len(checks)
    events.done("build", f"{built} models", sum(report.seconds.values()) - seconds)
    if not checking:
        events.start("checks", "invariants", total=0)
    failed = len(report.check_failures)
    events.done("checks", f"{len(checks) - failed} passed, {failed} failed", seconds)
    return report


def inspect_build(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    clock: datetime,
    allow_shrink: Iterable[str] = (),
    built: tuple[str, ...] | None = None,
) -> None:
    """Warnings and bad input only the built tables show: overlapping or idle pools, bill tags
    that look like an attempt id but are not it, an invoice file in another currency than the
    bill (InputError), a restated final period that lost an account (InputError, unless its
    period is in ``allow_shrink``), telemetry ahead of the clock. ``built``: the billing months
    the night built (None: every month), the only ones whose lines the tag and account passes
    read."""
    log_pool_warnings(con)
    warn_lookalike_tags(con, built)
    check_invoice_currencies(con, config.periods.invoice_file)
    check_restated_accounts(con, previous_folder(config.warehouse), allow_shrink, built)
    note_clock_skew(con, clock)


def publish_snapshot(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    run_id: str,
    models: list[Model],
    events: Events,
    written: dict[str, Path] | None = None,
    record: Callable[[Published], str] | None = None,
    share: bool = True,
    known: dict[str, tuple[tuple[str, int, str], ...]] | None = None,
) -> Published:
    """Publish the built tables as a new snapshot, unless they equal the current one.

    ``written``: the tables written as Parquet already (the telemetry, an engine's published
    files), moved into the snapshot instead of copied.
    ``record(published)`` gives the run's record, written to runs/<run_id>/manifest.json in
    the same switch as CURRENT and runcost.duckdb.
    ``share``: hard-link the billing periods equal to the current snapshot's (not when the run
    repairs a damaged snapshot or was asked for a full refresh: those write every file anew).
    ``known``: per table, the carried periods' rows and hash sums (pipeline.run.carry).
    """
    events.start("publish", "snapshot")
    contents = table_contents(con, written, hidden=intermediates(models), known=known)
    views = view_contents(con, published_views(models))
    hashes = content_hashes(contents, views)
    same_as = unchanged_snapshot(config.warehouse, hashes, ignore=HISTORY_TABLES)
    if same_as is None:
        folder = config.warehouse / "snapshots" / run_id
        manifest = config.warehouse / "runs" / run_id / "manifest.json"
        outcome = Published("published", folder, contents, hashes)
        records = [(manifest, record(outcome))] if record else []
        snapshot = publish(
            con,
            config.warehouse,
            run_id,
            contents,
            checkpoint=events.checkpoint,
            retention_days=config.periods.snapshot_retention_days,
            views=views,
            records=records,
            share_from=_current_folder(config.warehouse) if share else None,
        )
        linked = sum(len(values) for values in snapshot.shared.values())
        if linked:
            log.info(
                "%d partitions of %d tables equal the previous snapshot's: linked, not written",
                linked,
                len(snapshot.shared),
                extra={"stage": "publish"},
            )
        events.done("publish", f"snapshot {run_id} is current")
        return Published("published", snapshot.folder, contents, hashes, shared=snapshot.shared)
    # same content as the current snapshot: keep it, so readers and history stay put
    folder = config.warehouse / "snapshots" / same_as
    log.info(
        "no change: the content equals the current snapshot %s; nothing published",
        same_as,
        extra={"stage": "publish"},
    )
    hashes, contents = served_history(folder, hashes, contents)
    events.done("publish", f"no change; snapshot {same_as} stays current")
    return Published("unchanged", folder, contents, hashes, unchanged_from=same_as)


def _current_folder(warehouse: Path) -> Path | None:
    current = current_snapshot(warehouse)
    return warehouse / "snapshots" / current["run_id"] if current else None


def save_generated(run_dir: Path, models: list[Model]) -> None:
    """Write the models generated from runcost.toml beside the run, to read what ran."""
    folder = run_dir / "generated"
    folder.mkdir(exist_ok=True)
    for model in models:
        if model.path is None:
            (folder / f"{model.qualified}.sql").write_text(model.sql + "\n", encoding="utf-8")


def discard_build(run_dir: Path, database_path: Path) -> None:
    database_path.unlink(missing_ok=True)
    Path(f"{database_path}.wal").unlink(missing_ok=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
