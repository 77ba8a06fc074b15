"""One nightly run: lock, ingest, load telemetry, build, check, publish (or not), record."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline import __version__
from pipeline.common.duck import connect
from pipeline.common.errors import CheckFailed, redact_urls
from pipeline.config.loader import Config
from pipeline.dag.build import BuildReport, build
from pipeline.dag.engines.base import Engine
from pipeline.dag.engines.factory import open_engine
from pipeline.dag.models import Model, discover, published_views
from pipeline.dag.pools import log_pool_warnings, pool_models
from pipeline.ingest.aws_cur2 import Delivery, ingest_aws_exports
from pipeline.ingest.focus_files import ingest_focus_files
from pipeline.ingest.gcp_bigquery import ingest_gcp_tables
from pipeline.ingest.gcp_files import ingest_gcp_files
from pipeline.run import recovery
from pipeline.run.history import load_previous, previous_folder, register_deliveries, set_clock
from pipeline.run.invoices import check_invoice_currencies, load_invoices
from pipeline.run.record import (
    HISTORY_TABLES,
    code_hash,
    config_hash,
    delivery_record,
    estimate_summary,
    file_checksum,
    note_clock_skew,
    outcome,
    period_statuses,
    served_history,
    totals,
)
from pipeline.run.recovery import recover_dead_runs, write_manifest
from pipeline.run.settings import write_settings
from pipeline.run.sources import TELEMETRY_TABLES, register_sources
from pipeline.telemetry.adapters import read_sources
from pipeline.telemetry.canonical import empty_table
from pipeline.telemetry.files import load_telemetry
from pipeline.telemetry.published import keep_published
from pipeline.warehouse.lock import WarehouseLock
from pipeline.warehouse.publish import (
    content_hashes,
    publish,
    table_contents,
    view_contents,
)
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    unchanged_snapshot,
)

Progress = Callable[[str], None]
STAGES = ("ingest", "telemetry", "build", "checks", "publish")
# A checkpoint is called with each point a run reaches: the STAGES, then publish:snapshot,
# publish:database, publish:pointer and publish:prune inside publish, and manifest. The reliability
# tests pass one that waits there, so they can kill the run or read the warehouse at that point.
Checkpoint = Callable[[str], None]
log = logging.getLogger("runcost")


@dataclass(frozen=True)
class RunEvent:
    """Progress of a run: a stage starts (with its number of steps), takes a step, or ends."""

    stage: str
    kind: str  # "start", "step" or "done"
    message: str
    total: int | None = None
    seconds: float | None = None


@dataclass
class RunResult:
    """What a run produced: the snapshot, the database to query, and the run's record."""

    run_id: str
    database: Path
    snapshot: Path
    manifest: Path
    deliveries: list[Delivery]
    report: BuildReport
    stage_seconds: dict[str, float] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)
    status: str = "published"  # or "unchanged": same content as the current snapshot
    content_hashes: dict[str, str] = field(default_factory=dict)


def new_run_id() -> str:
    """Sortable and unique: UTC start time plus a random suffix."""
    # microseconds, so that sorting ids by name sorts runs by start even within one second
    # (pruning and "the last run" both rely on it); the suffix keeps two hosts apart
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def run_pipeline(
    config: Config,
    progress: Progress | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    now: datetime | None = None,
    checkpoint: Checkpoint | None = None,
    allow_shrink: tuple[str, ...] = (),
) -> RunResult:
    """Run every stage holding the warehouse lock; a failed check raises CheckFailed.

    ``now`` is the run clock (default: the current time): estimates stop there and a billing
    period that has not ended by then is open. ``checkpoint`` is called at each point the run
    reaches (see Checkpoint). ``allow_shrink``: billing periods whose re-delivery may empty or
    shrink them this once (runcost run --allow-shrink).
    """
    run_id = new_run_id()
    clock = now or datetime.now(UTC)
    with WarehouseLock(config.warehouse, config.lock_timeout_seconds, run_id) as lock:
        recover_dead_runs(config.warehouse)
        run_dir = config.warehouse / "runs" / run_id
        run_dir.mkdir(parents=True)
        stages: dict[str, float] = {"lock": lock.waited} if lock.waited >= 0.5 else {}
        manifest: dict = {
            "run_id": run_id,
            "started_at": _now(),
            "runcost_version": __version__,
            "config_file": str(config.path) if config.path else None,
            "config_fingerprint": config.fingerprint(),
            "config_hash": config_hash(config),
            "clock": clock.isoformat(timespec="seconds"),
            "status": "running",
            "pid": os.getpid(),
            "allow_shrink": list(allow_shrink),
        }
        write_manifest(run_dir, manifest)
        events = _Events(progress, on_event, stages, checkpoint)
        try:
            return _run(config, events, run_dir, manifest, clock)
        except CheckFailed:
            raise  # recorded as failed_checks where the checks ran
        except BaseException as error:
            manifest.update(
                status="failed",
                error=redact_urls(f"{type(error).__name__}: {error}"),
                finished_at=_now(),
                stage_seconds=_rounded(stages),
            )
            recovery.record_failure(run_dir, manifest)
            raise


class _Events:
    """Sends progress to both callbacks, times stages, and calls the checkpoint at each stage."""

    def __init__(
        self,
        progress: Progress | None,
        on_event: Callable[[RunEvent], None] | None,
        stages: dict[str, float],
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.checkpoint = checkpoint or (lambda _point: None)
        self.progress = progress or (lambda _message: None)
        self.on_event = on_event or (lambda _event: None)
        self.stages = stages
        self.started: dict[str, float] = {}

    def start(self, stage: str, message: str, total: int | None = None) -> None:
        self.checkpoint(stage)
        self.started[stage] = time.perf_counter()
        self.progress(f"{stage}: {message}")
        self.on_event(RunEvent(stage, "start", message, total=total))

    def step(self, stage: str, message: str) -> None:
        self.progress(f"build: {message}")  # steps are models and checks; see cli._progress
        self.on_event(RunEvent(stage, "step", message))

    def done(self, stage: str, message: str, seconds: float | None = None) -> None:
        if seconds is None:
            seconds = time.perf_counter() - self.started[stage]
        self.stages[stage] = seconds
        self.on_event(RunEvent(stage, "done", message, seconds=seconds))


def _run(
    config: Config, events: _Events, run_dir: Path, manifest: dict, clock: datetime
) -> RunResult:
    run_id = manifest["run_id"]
    sources = [
        name
        for name, used in (
            ("AWS CUR 2.0 deliveries", config.aws_exports),
            ("GCP export files", config.gcp.files),
            ("GCP export partitions", config.gcp.tables),
            ("FOCUS files", config.focus_sources),
        )
        if used
    ]
    events.start("ingest", ", ".join(sources) or "no billing source configured")
    deliveries = [*ingest_aws_exports(config, manifest["allow_shrink"]), *ingest_gcp_files(config)]
    gcp = ingest_gcp_tables(config)  # nothing to do without gcp.tables
    deliveries += [*gcp.deliveries, *ingest_focus_files(config)]
    new = sum(item.new for item in deliveries)
    events.done("ingest", f"{len(deliveries)} deliveries, {new} new")
    manifest["inputs"] = {
        "deliveries": [delivery_record(item) for item in deliveries],
        "invoice_file": file_checksum(config.periods.invoice_file),
    }
    if config.gcp.tables:
        manifest["inputs"]["gcp"] = gcp.manifest()

    events.start("telemetry", "canonical tables")
    if config.telemetry is None and not config.telemetry_sources:
        log.warning(
            "no [telemetry] path is configured: every cost line will be unallocated; "
            "set telemetry.path to the folder holding attempts.csv",
            extra={"stage": "telemetry"},
        )
        telemetry = {name: empty_table(name) for name in TELEMETRY_TABLES}
    elif not config.telemetry_sources:
        telemetry = load_telemetry(config.telemetry)
    else:
        telemetry = read_sources(config)
    if config.telemetry_keep_published:
        # a re-delivered file names the attempts it updates; the ones it leaves out stay
        telemetry = keep_published(config.warehouse, telemetry)
    manifest["inputs"]["telemetry"] = {name: table.num_rows for name, table in telemetry.items()}
    events.done("telemetry", f"{sum(table.num_rows for table in telemetry.values())} rows")

    database_path = run_dir / "build.duckdb"
    con = _connect(database_path, run_dir, config)
    engine: Engine | None = None
    try:
        write_settings(con, config)
        register_sources(con, deliveries, telemetry)
        set_clock(con, clock)
        register_deliveries(con, deliveries)
        load_invoices(con, config.periods.invoice_file)
        manifest["previous_snapshot"] = load_previous(con, previous_folder(config.warehouse))
        models = discover() + pool_models(config)
        manifest["code_hash"] = code_hash(models)
        _save_generated(run_dir, [model for model in models if model.path is None])
        engine = open_engine(config, con, run_dir / "tmp")
        report = _build(engine, models, events)
        if engine.name == "duckdb":  # the built tables are in con now (Spark's come with finish)
            _inspect_build(con, config, clock)
        manifest["model_seconds"] = _rounded(report.seconds)
        manifest["checks"] = {
            name: "failed" if any(item[0] == name for item in report.check_failures) else "passed"
            for name in report.checks_run
        }
        if report.check_failures:
            manifest.update(
                status="failed_checks", finished_at=_now(), stage_seconds=_rounded(events.stages)
            )
            write_manifest(run_dir, manifest)
            raise CheckFailed(report.check_failures, str(database_path))

        catalog_rows = engine.finish(con, models)
        if catalog_rows is not None:  # spark.catalog: the tables went there, not to a snapshot
            con.close()
            _discard_build(run_dir, database_path)
            return _published_to_catalog(config, manifest, deliveries, report, events, catalog_rows)
        if engine.name != "duckdb":
            _inspect_build(con, config, clock)
        manifest["totals"] = totals(con)
        manifest["periods"] = period_statuses(con)
        manifest["estimates"] = estimate_summary(con)
        events.start("publish", "snapshot")
        contents = table_contents(con)
        views = view_contents(con, published_views(models))
        hashes = content_hashes(contents, views)
        same_as = unchanged_snapshot(config.warehouse, hashes, ignore=HISTORY_TABLES)
        if same_as is None:
            folder = config.warehouse / "snapshots" / run_id
            record = {**manifest, **outcome("published", events.stages, contents, hashes, folder)}
            snapshot = publish(
                con,
                config.warehouse,
                run_id,
                contents,
                checkpoint=events.checkpoint,
                retention_days=config.periods.snapshot_retention_days,
                views=views,
                records=[(run_dir / "manifest.json", recovery.manifest_text(record))],
            )
            status, folder = "published", snapshot.folder
            events.done("publish", f"snapshot {run_id} is current")
        else:
            # same content as the current snapshot: keep it, so readers and history stay put
            status, folder = "unchanged", config.warehouse / "snapshots" / same_as
            log.info(
                "no change: the content equals the current snapshot %s; nothing published",
                same_as,
                extra={"stage": "publish"},
            )
            manifest["unchanged_from"] = same_as
            hashes, contents = served_history(folder, hashes, contents)
            events.done("publish", f"no change; snapshot {same_as} stays current")
    finally:
        if engine is not None:
            engine.close()
        con.close()

    _discard_build(run_dir, database_path)
    events.checkpoint("manifest")
    manifest.update(outcome(status, events.stages, contents, hashes, folder))
    manifest_path = recovery.record_published(run_dir, manifest)
    return RunResult(
        run_id=run_id,
        database=config.warehouse / DATABASE_NAME,
        snapshot=folder,
        manifest=manifest_path,
        deliveries=deliveries,
        report=report,
        stage_seconds=dict(events.stages),
        row_counts={table.name: table.rows for table in contents},
        status=status,
        content_hashes=hashes,
    )


def _build(engine: Engine, models: list[Model], events: _Events) -> BuildReport:
    checks = [model for model in models if model.layer == "checks"]
    events.start("build", "SQL models", total=len(models) - len(checks))
    checking = False

    def on_model(model: Model) -> None:
        nonlocal checking
        if model.layer == "checks" and not checking:
            checking = True
            events.start("checks", "invariants", total=len(checks))
        events.step("checks" if model.layer == "checks" else "build", model.qualified)

    report = build(engine, models, on_model=on_model)
    # checks may interleave with models in dependency order: time each stage by its models
    seconds = sum(value for name, value in report.seconds.items() if name.startswith("checks."))
    built = len(report.seconds) - len(checks)
    events.done("build", f"{built} models", sum(report.seconds.values()) - seconds)
    if not checking:
        events.start("checks", "invariants", total=0)
    failed = len(report.check_failures)
    events.done("checks", f"{len(checks) - failed} passed, {failed} failed", seconds)
    return report


def _discard_build(run_dir: Path, database_path: Path) -> None:
    database_path.unlink(missing_ok=True)
    Path(f"{database_path}.wal").unlink(missing_ok=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)


def _inspect_build(con: duckdb.DuckDBPyConnection, config: Config, clock: datetime) -> None:
    """Warnings and bad input only the built tables show: overlapping or idle pools, an invoice
    file in another currency than the bill (InputError), telemetry ahead of the clock."""
    log_pool_warnings(con)
    check_invoice_currencies(con, config.periods.invoice_file)
    note_clock_skew(con, clock)


def _published_to_catalog(
    config: Config,
    manifest: dict,
    deliveries: list[Delivery],
    report: BuildReport,
    events: _Events,
    rows: dict[str, int],
) -> RunResult:
    """The tables are in spark.catalog; the local snapshot and runcost.duckdb stay as they were."""
    manifest.update(status="published", catalog=config.spark.catalog, outputs=rows)
    manifest.update(finished_at=_now(), stage_seconds=_rounded(events.stages))
    run_dir = config.warehouse / "runs" / manifest["run_id"]
    current = current_snapshot(config.warehouse)
    return RunResult(
        run_id=manifest["run_id"],
        database=config.warehouse / DATABASE_NAME,
        snapshot=Path(current["snapshot"]) if current else run_dir,
        manifest=write_manifest(run_dir, manifest),
        deliveries=deliveries,
        report=report,
        stage_seconds=dict(events.stages),
        row_counts=rows,
    )


def _connect(path: Path, run_dir: Path, config: Config) -> duckdb.DuckDBPyConnection:
    settings: dict[str, str | int | bool] = {
        "preserve_insertion_order": False,
        "temp_directory": str(run_dir / "tmp"),
    }
    if config.threads:
        settings["threads"] = int(config.threads)
    if config.memory_limit:
        settings["memory_limit"] = config.memory_limit
    return connect(path, settings=settings)


def _save_generated(run_dir: Path, models: list[Model]) -> None:
    folder = run_dir / "generated"
    folder.mkdir(exist_ok=True)
    for model in models:
        (folder / f"{model.qualified}.sql").write_text(model.sql + "\n", encoding="utf-8")


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 4) for name, value in seconds.items()}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
