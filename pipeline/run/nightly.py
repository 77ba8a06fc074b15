"""One nightly run: lock, ingest, load telemetry, build, check, publish (or not), record."""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import __version__
from pipeline.common.errors import CheckFailed, redact_urls
from pipeline.config.loader import Config
from pipeline.dag.build import BuildReport
from pipeline.dag.engines.base import BuildOutcome, Engine
from pipeline.dag.engines.factory import open_engine
from pipeline.dag.models import Model, discover
from pipeline.dag.pools import pool_models
from pipeline.run import carry, period_builds, stages
from pipeline.run.check_causes import failure_causes
from pipeline.run.events import STAGES, Checkpoint, Events, Progress, RunEvent
from pipeline.run.history import load_previous, previous_folder, register_deliveries, set_clock
from pipeline.run.invoices import load_invoices
from pipeline.run.manifest import RunManifest
from pipeline.run.record import (
    code_hash,
    config_hash,
    estimate_summary,
    period_statuses,
    totals,
)
from pipeline.run.recovery import (
    damaged_current,
    manifest_text,
    note_repaired,
    published_telemetry_damaged,
    record_failure,
    record_published,
    recover_dead_runs,
)
from pipeline.run.settings import write_settings
from pipeline.run.sources import register_sources
from pipeline.run.unchanged import Unchanged, previous_fingerprints, serving_record
from pipeline.warehouse.lock import WarehouseLock
from pipeline.warehouse.publish import snapshot_hash
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.snapshots import DATABASE_NAME, current_snapshot

log = logging.getLogger("runcost")

__all__ = ["STAGES", "Checkpoint", "Progress", "RunEvent", "RunResult", "run_pipeline"]


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
    full_refresh: bool = False,
) -> RunResult:
    """Run every stage holding the warehouse lock; a failed check raises CheckFailed.

    ``now`` is the run clock (default: the current time): estimates stop there and a billing
    period that has not ended by then is open. ``checkpoint`` is called at each point the run
    reaches (see pipeline.run.events.Checkpoint). ``allow_shrink``: billing periods whose
    re-delivery may empty or shrink them this once (runcost run --allow-shrink).
    ``full_refresh``: build every billing period even when the inputs equal the current
    snapshot's (runcost run --full-refresh).
    """
    run_id = new_run_id()
    clock = now or datetime.now(UTC)
    with WarehouseLock(config.warehouse, config.lock_timeout_seconds, run_id) as lock:
        recover_dead_runs(config.warehouse)
        damaged = damaged_current(config.warehouse)
        if published_telemetry_damaged(config.warehouse, damaged):
            config = dataclasses.replace(config, telemetry_keep_published=False)
        run_dir = config.warehouse / "runs" / run_id
        run_dir.mkdir(parents=True)
        timings: dict[str, float] = {"lock": lock.waited} if lock.waited >= 0.5 else {}
        manifest = RunManifest(
            run_id=run_id,
            runcost_version=__version__,
            config_file=str(config.path) if config.path else None,
            config_fingerprint=config.fingerprint(),
            config_hash=config_hash(config),
            clock=clock.isoformat(timespec="seconds"),
            allow_shrink=list(allow_shrink),
            repaired=[dataclasses.asdict(item) for item in damaged] or None,
        )
        manifest.write(run_dir)
        events = Events(progress, on_event, timings, checkpoint)
        try:
            forced = "--full-refresh" if full_refresh else None
            forced = forced or ("the current snapshot is damaged" if damaged else None)
            result = _run(config, events, run_dir, manifest, clock, forced)
            if damaged and result.status == "published":
                note_repaired(damaged, result.run_id)
            return result
        except CheckFailed:
            raise  # recorded as failed_checks where the checks ran
        except BaseException as error:
            error_text = redact_urls(f"{type(error).__name__}: {error}")
            manifest.finish("failed", events.rounded(), error=error_text)
            record_failure(run_dir, manifest.record())
            raise


def _run(
    config: Config,
    events: Events,
    run_dir: Path,
    manifest: RunManifest,
    clock: datetime,
    forced: str | None,
) -> RunResult:
    """The stages; ``forced``: why every period is built whatever the fingerprints say."""
    ingested = stages.ingest(config, events, manifest.allow_shrink or ())
    manifest.inputs = dict(ingested.record)
    served = None if forced else stages.decide_unread(config, ingested, clock, manifest)
    if served is not None:
        return _served_again(config, events, run_dir, manifest, ingested, served)
    reused = None if forced else stages.served_telemetry(config, ingested, clock, manifest, events)
    telemetry, prints = reused or (stages.telemetry(config, events, clock), None)
    manifest.inputs["telemetry"] = {name: table.num_rows for name, table in telemetry.items()}
    served = stages.decide(config, ingested, telemetry, clock, manifest, forced, prints)
    if served is not None:
        return _served_again(config, events, run_dir, manifest, ingested, served)

    database_path = run_dir / "build.duckdb"
    con = stages.open_build(database_path, run_dir, config)
    engine: Engine | None = None
    try:
        engine = open_engine(config, con, run_dir / "tmp")
        scope = None if forced else _scope(config, manifest, ingested, engine)
        if scope is not None:
            manifest.inputs["carried"] = list(scope.carried)
        deliveries = scope.deliveries(ingested.deliveries) if scope else ingested.deliveries
        models, written = _prepare_build(
            con, config, deliveries, telemetry, clock, manifest, run_dir, engine.published_folder
        )
        # The build reads the telemetry from the build database now. Kept, the Arrow tables
        # would stay resident for the whole run, outside memory_limit: 0.9 GB for 600,000
        # attempts, 1.2M intervals. Arrow's allocator keeps the pages it freed (the merge over
        # the published telemetry allocates them), so they are handed back too: at 100M the next
        # night's build ran 1.5-1.7 GB above the first run's before, 0.3-0.4 GB with this and
        # the merge's slices (docs/performance.md).
        telemetry.clear()
        pa.default_memory_pool().release_unused()
        engine.load_inputs(con)
        into = functools.partial(carry.carry_in, scope) if scope else None
        report = stages.build_models(engine, models, events, into)
        outcome = engine.finish(con, models, publish=not report.check_failures)
        if outcome.in_connection:
            # before a failed check stops the run: bad input (an invoice in another currency
            # than the bill) is reported as the thing to fix, ahead of the checks it may break
            built = scope.built if scope else None
            stages.inspect_build(con, config, clock, manifest.allow_shrink or (), built)
        _record_checks(manifest, report)
        if report.check_failures:
            causes = failure_causes(con, report.check_failures) if outcome.in_connection else {}
            # the cause, when the built tables show it, for `runcost status` to say beside the name
            said = [f"check {name} failed, because {cause}" for name, cause in causes.items()]
            manifest.finish("failed_checks", events.rounded(), error="; ".join(said) or None)
            manifest.write(run_dir)
            raise CheckFailed(report.check_failures, str(database_path), causes)

        if outcome.catalog is not None:
            con.close()
            stages.discard_build(run_dir, database_path)
            return _published_to_catalog(config, manifest, ingested, report, events, outcome)
        manifest.totals, manifest.periods = totals(con), period_statuses(con)
        manifest.estimates = estimate_summary(con)
        published = stages.publish_snapshot(
            con,
            config,
            manifest.run_id,
            models,
            events,
            written={**written, **outcome.published_files},
            record=_record_at_switch(manifest, events),
            share=forced is None,
            known=scope.known if scope else None,
        )
    finally:
        if engine is not None:
            engine.close()
        con.close()

    stages.discard_build(run_dir, database_path)
    events.checkpoint("manifest")
    rows = {table.name: table.rows for table in published.contents}
    _finish(manifest, published, events)
    return _result(config, run_dir, manifest, ingested, report, events, published.folder, rows)


def _served_again(
    config: Config,
    events: Events,
    run_dir: Path,
    manifest: RunManifest,
    ingested: stages.Ingested,
    served: Unchanged,
) -> RunResult:
    """Nothing new since the current snapshot: record the run as unchanged, build nothing."""
    events.start("publish", "snapshot")
    log.info(
        "no change: the inputs equal those of snapshot %s; nothing built or published",
        served.run_id,
        extra={"stage": "publish"},
    )
    events.done("publish", f"no change; snapshot {served.run_id} stays current")
    manifest.previous_snapshot = served.run_id
    manifest.period_builds = period_builds.carried(_fingerprinted_months(manifest))
    for name, value in served.carried.items():
        setattr(manifest, name, value)
    manifest.finish(
        "unchanged",
        events.rounded(),
        unchanged_from=served.run_id,
        outputs=served.rows,
        content_hashes=served.hashes,
        content_hash=served.content_hash,
        snapshot=str(served.folder),
    )
    events.checkpoint("manifest")
    report = BuildReport()
    return _result(config, run_dir, manifest, ingested, report, events, served.folder, served.rows)


def _result(
    config: Config,
    run_dir: Path,
    manifest: RunManifest,
    ingested: stages.Ingested,
    report: BuildReport,
    events: Events,
    snapshot: Path,
    rows: dict[str, int],
) -> RunResult:
    """A finished run's result, its record written with the final timings."""
    return RunResult(
        run_id=manifest.run_id,
        database=config.warehouse / DATABASE_NAME,
        snapshot=snapshot,
        manifest=record_published(run_dir, manifest.record()),
        deliveries=ingested.deliveries,
        report=report,
        stage_seconds=dict(events.stages),
        row_counts=dict(rows),
        status=str(manifest.status),
        content_hashes=dict(manifest.content_hashes or {}),
    )


def _finish(manifest: RunManifest, published: stages.Published, events: Events) -> None:
    months = {str(month) for month in _fingerprinted_months(manifest)}
    months |= {value for table in published.contents for value, _r, _t in table.partitions}
    shared = published.shared
    if published.status == "unchanged":  # every period's rows are those of the snapshot
        shared = {table.name: [v for v, _r, _t in table.partitions] for table in published.contents}
    moved = list((manifest.inputs or {}).get("built_because") or [])
    carried = list((manifest.inputs or {}).get("carried") or [])
    manifest.period_builds = period_builds.built(months, moved, published.contents, shared, carried)
    manifest.finish(
        published.status,
        events.rounded(),
        unchanged_from=published.unchanged_from,
        outputs={table.name: table.rows for table in published.contents},
        content_hashes=published.hashes,
        content_hash=snapshot_hash(published.hashes),
        snapshot=str(published.folder),
    )


def _fingerprinted_months(manifest: RunManifest) -> list[str]:
    found = ((manifest.inputs or {}).get("fingerprints") or {}).get("months") or {}
    return sorted(found)


def _record_at_switch(manifest: RunManifest, events: Events) -> Callable[[stages.Published], str]:
    """The record a publish switches in with CURRENT and runcost.duckdb: already published."""

    def record(published: stages.Published) -> str:
        final = copy.deepcopy(manifest)
        _finish(final, published, events)
        return manifest_text(final.record())

    return record


def _scope(
    config: Config, manifest: RunManifest, ingested: stages.Ingested, engine: Engine
) -> carry.Scope | None:
    """The months this night builds and carries forward (None: it builds every month)."""
    inputs = manifest.inputs or {}
    months = (inputs.get("fingerprints") or {}).get("months") or {}
    previous = previous_fingerprints(serving_record(config.warehouse))
    current = current_snapshot(config.warehouse)
    folder = previous_folder(config.warehouse)
    if previous is None or current is None or folder != Path(current["snapshot"]):
        return None
    moved = list(inputs.get("built_because") or [])
    carries = engine.carries_periods
    return carry.scope(moved, months, previous.months, ingested.deliveries, folder, carries)


def _prepare_build(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    deliveries: list[Delivery],
    telemetry: dict,
    clock: datetime,
    manifest: RunManifest,
    run_dir: Path,
    published: Path | None,
) -> tuple[list[Model], dict[str, Path]]:
    """Give the build database its inputs (config.*, raw.*, history, the clock); the models,
    and the Parquet written for the snapshot already, by table name: the telemetry, written
    once into ``published`` when the engine builds from such a folder (else its tables)."""
    write_settings(con, config)
    written = register_sources(con, deliveries, telemetry, published)
    set_clock(con, clock)
    register_deliveries(con, deliveries)
    load_invoices(con, config.periods.invoice_file)
    manifest.previous_snapshot = load_previous(con, previous_folder(config.warehouse))
    models = discover() + pool_models(config)
    manifest.code_hash = code_hash(models)
    stages.save_generated(run_dir, models)
    return models, written


def _record_checks(manifest: RunManifest, report: BuildReport) -> None:
    manifest.model_seconds = {name: round(value, 4) for name, value in report.seconds.items()}
    failed = {item[0] for item in report.check_failures}
    manifest.checks = {name: "failed" if name in failed else "passed" for name in report.checks_run}


def _published_to_catalog(
    config: Config,
    manifest: RunManifest,
    ingested: stages.Ingested,
    report: BuildReport,
    events: Events,
    outcome: BuildOutcome,
) -> RunResult:
    """The tables are in the engine's catalog; the local snapshot and runcost.duckdb stay as
    they were."""
    rows = dict(outcome.catalog_rows)
    manifest.finish("published", events.rounded(), catalog=outcome.catalog, outputs=rows)
    run_dir = config.warehouse / "runs" / manifest.run_id
    current = current_snapshot(config.warehouse)
    return RunResult(
        run_id=manifest.run_id,
        database=config.warehouse / DATABASE_NAME,
        snapshot=Path(current["snapshot"]) if current else run_dir,
        manifest=manifest.write(run_dir),
        deliveries=ingested.deliveries,
        report=report,
        stage_seconds=dict(events.stages),
        row_counts=rows,
    )
