"""One nightly run: ingest, load telemetry, build the SQL models, check, publish, record."""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline import __version__
from pipeline.config import Config
from pipeline.errors import CheckFailed
from pipeline.ingest.aws_cur2 import Delivery, ingest_aws_exports
from pipeline.pools import pool_models, write_pool_settings
from pipeline.publish import Snapshot, publish
from pipeline.runner import BuildReport, Model, build, discover
from pipeline.sources import TELEMETRY_TABLES, register_sources
from pipeline.telemetry.canonical import empty_table
from pipeline.telemetry.files import load_telemetry

Progress = Callable[[str], None]


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


def new_run_id() -> str:
    """Sortable and unique: UTC start time plus a random suffix."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def run_pipeline(config: Config, progress: Progress | None = None) -> RunResult:
    """Run every stage; a failed check raises CheckFailed and publishes nothing."""
    say = progress or (lambda _message: None)
    run_id = new_run_id()
    run_dir = config.warehouse / "runs" / run_id
    run_dir.mkdir(parents=True)
    stages: dict[str, float] = {}
    manifest: dict = {
        "run_id": run_id,
        "started_at": _now(),
        "runcost_version": __version__,
        "config_file": str(config.path) if config.path else None,
        "config_fingerprint": config.fingerprint(),
        "status": "running",
    }
    _write_manifest(run_dir, manifest)
    try:
        return _run(config, say, run_dir, manifest, stages)
    except CheckFailed:
        raise  # recorded as failed_checks where the checks ran
    except BaseException as error:
        manifest.update(
            status="failed",
            error=f"{type(error).__name__}: {error}",
            finished_at=_now(),
            stage_seconds={name: round(value, 4) for name, value in stages.items()},
        )
        _write_manifest(run_dir, manifest)
        raise


def _run(
    config: Config, say: Progress, run_dir: Path, manifest: dict, stages: dict[str, float]
) -> RunResult:
    run_id = manifest["run_id"]
    started = time.perf_counter()
    say("ingest: AWS CUR 2.0 deliveries")
    deliveries = ingest_aws_exports(config)
    stages["ingest"] = time.perf_counter() - started
    manifest["inputs"] = {"deliveries": [_delivery_record(item) for item in deliveries]}

    started = time.perf_counter()
    say("telemetry: canonical tables")
    if config.telemetry is None:
        logging.getLogger("runcost").warning(
            "no [telemetry] path is configured: every cost line will be unallocated; "
            "set telemetry.path to the folder holding attempts.csv"
        )
        telemetry = {name: empty_table(name) for name in TELEMETRY_TABLES}
    else:
        telemetry = load_telemetry(config.telemetry)
    manifest["inputs"]["telemetry"] = {name: table.num_rows for name, table in telemetry.items()}
    stages["telemetry"] = time.perf_counter() - started

    database_path = run_dir / "build.duckdb"
    con = _connect(database_path, run_dir, config)
    try:
        write_pool_settings(con, config)
        register_sources(con, deliveries, telemetry)
        models = discover() + pool_models(config)
        _save_generated(run_dir, [model for model in models if model.path is None])

        started = time.perf_counter()
        report = build(con, models, on_model=lambda model: say(f"build: {model.qualified}"))
        stages["build"] = time.perf_counter() - started
        manifest["model_seconds"] = {
            name: round(value, 4) for name, value in report.seconds.items()
        }
        manifest["checks"] = {
            name: "failed" if any(item[0] == name for item in report.check_failures) else "passed"
            for name in report.checks_run
        }
        if report.check_failures:
            manifest.update(status="failed_checks", finished_at=_now(), stage_seconds=stages)
            _write_manifest(run_dir, manifest)
            raise CheckFailed(report.check_failures, str(database_path))

        manifest["totals"] = _totals(con)
        started = time.perf_counter()
        say("publish: snapshot")
        snapshot: Snapshot = publish(con, config.warehouse, run_id)
        stages["publish"] = time.perf_counter() - started
    finally:
        con.close()

    database_path.unlink(missing_ok=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    manifest.update(
        status="published",
        finished_at=_now(),
        stage_seconds={name: round(value, 4) for name, value in stages.items()},
        outputs=snapshot.row_counts,
        snapshot=str(snapshot.folder),
    )
    manifest_path = _write_manifest(run_dir, manifest)
    return RunResult(
        run_id=run_id,
        database=snapshot.database,
        snapshot=snapshot.folder,
        manifest=manifest_path,
        deliveries=deliveries,
        report=report,
        stage_seconds=stages,
        row_counts=snapshot.row_counts,
    )


def _connect(path: Path, run_dir: Path, config: Config) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    # hour buckets and billing periods are UTC whatever the machine's zone
    con.execute("set TimeZone = 'UTC'")
    con.execute("set preserve_insertion_order = false")
    con.execute(f"set temp_directory = '{str(run_dir / 'tmp').replace(chr(39), chr(39) * 2)}'")
    if config.threads:
        con.execute(f"set threads = {int(config.threads)}")
    if config.memory_limit:
        con.execute(f"set memory_limit = '{config.memory_limit}'")
    return con


def _totals(con: duckdb.DuckDBPyConnection) -> list[dict[str, str]]:
    rows = con.execute(
        "select provider, billing_period, billing_currency, "
        "sum(billed_cost), sum(effective_cost), sum(list_cost), sum(net_cost), count(*) "
        "from normalized.cost_lines group by all order by all"
    ).fetchall()
    keys = ("provider", "billing_period", "billing_currency", "billed_cost", "effective_cost")
    keys += ("list_cost", "net_cost", "cost_lines")
    return [{key: str(value) for key, value in zip(keys, row, strict=True)} for row in rows]


def _delivery_record(delivery: Delivery) -> dict[str, object]:
    return {
        "provider": delivery.provider,
        "export": delivery.export,
        "billing_period": delivery.billing_period,
        "delivery_id": delivery.delivery_id,
        "new": delivery.new,
        "folder": str(delivery.folder),
    }


def _save_generated(run_dir: Path, models: list[Model]) -> None:
    folder = run_dir / "generated"
    folder.mkdir(exist_ok=True)
    for model in models:
        (folder / f"{model.qualified}.sql").write_text(model.sql + "\n", encoding="utf-8")


def _write_manifest(run_dir: Path, manifest: dict) -> Path:
    path = run_dir / "manifest.json"
    temporary = run_dir / ".manifest.json.tmp"
    temporary.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def open_database(database: Path) -> duckdb.DuckDBPyConnection:
    """Open the published database read-only, in UTC."""
    con = duckdb.connect(str(database), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    return con
