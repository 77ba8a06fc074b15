"""MLflow tracking store (a server over REST, or an SQLite file) -> canonical attempts."""

from __future__ import annotations

import datetime as dt
import logging
import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry import mlflow_fields
from pipeline.telemetry.adapters import Outcome, table
from pipeline.telemetry.mlflow_nesting import nesting
from pipeline.telemetry.mlflow_rest import Store, fetch, refuse_secrets

log = logging.getLogger("runcost")

# alembic heads whose core tables (experiments, runs, tags, metrics) this reader was checked on;
# a newer store is read when it still has the columns in _COLUMNS.
SUPPORTED_VERSIONS = ("dc11669786a5",)  # mlflow 3.17.2
STATUSES = {
    "FINISHED": "succeeded",
    "FAILED": "failed",
    "KILLED": "cancelled",
    "RUNNING": "running",
    "SCHEDULED": "running",
}
# Columns read from the store; a store without them is refused whatever its version says.
_COLUMNS = {
    "runs": ("run_uuid", "status", "start_time", "end_time", "artifact_uri", "experiment_id"),
    "experiments": ("experiment_id", "name"),
    "tags": ("key", "value", "run_uuid"),
    "metrics": ("key", "value", "timestamp", "run_uuid", "step", "is_nan"),
}
# Run tags (or params) with these names fill the canonical column of the same name.
_COPIED = (
    "model_version",
    "config_version",
    "dataset_snapshot",
    "provider",
    "account_id",
    "region",
    "cluster",
    "namespace",
    "instance_type",
    "gpu_type",
    "capacity_type",
    "failure_reason",
)
_COUNTS = ("gpu_count", "node_count")
# Options only a tracking server source takes.
_SERVER_OPTIONS = (
    "experiments",
    "token_env",
    "username_env",
    "password_env",
    "started_after",
    "page_size",
)
OPTIONS = {
    "attempt_id_tag",
    "experiment_id_tag",
    "experiment_id_from",
    "id_prefix",
    "metric",
    "resource_tag",
    "resource_tags",
    "status_tag",
    "accept_schema_version",  # no longer needed: newer stores are read when their columns fit
    "tracking_uri",
    *_SERVER_OPTIONS,
}


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """Read every run of an MLflow store as an attempt (see docs/telemetry.md).

    options.tracking_uri: a tracking server, read over its REST API; else source["path"]: an
    SQLite store file.
    """
    options: dict[str, Any] = dict(source.get("options") or {})  # type: ignore[call-overload]
    refuse_secrets(options, label)
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise InputError(
            f"{label}: unknown option(s) {', '.join(unknown)}; mlflow options are "
            f"{', '.join(sorted(OPTIONS))}"
        )
    if options.get("tracking_uri"):
        if source.get("path"):
            raise InputError(
                f"{label}: set either path (an SQLite store) or options.tracking_uri (a "
                "tracking server), not both"
            )
        store = fetch(options, label)
    else:
        stray = [name for name in _SERVER_OPTIONS if name in options]
        if stray:
            raise InputError(
                f"{label}: option(s) {', '.join(stray)} need options.tracking_uri (a tracking "
                "server); an SQLite store is read whole"
            )
        if not source.get("path"):
            raise InputError(
                f'{label}: set options.tracking_uri = "http://host:5000" (a tracking server) '
                "or path = the SQLite store file"
            )
        store = _sqlite_store(_store_path(source["path"], label), label)
    return _tables(store, options, Outcome(source, label), label)


def _sqlite_store(path: Path, label: str) -> Store:
    with closing(_connect(path, label)) as con:
        _check_schema(con, path, label)
        return Store(
            where=str(path),
            runs=_query(con, "select * from runs order by start_time, run_uuid"),
            names=dict(_query_rows(con, "select experiment_id, name from experiments")),
            tags=_by_run(_query_rows(con, "select run_uuid, key, value from tags")),
            params=_by_run(_params(con)),
            metrics=_latest_metrics(con),
        )


def _tables(
    store: Store, options: dict[str, Any], outcome: Outcome, label: str
) -> dict[str, pa.Table]:
    names, tags, params, metrics = store.names, store.tags, store.params, store.metrics
    prefix = str(options.get("id_prefix", "mlflow:"))
    attempt_tag = options.get("attempt_id_tag")
    experiment_from = options.get("experiment_id_from", "id")
    if experiment_from not in ("id", "name"):
        raise InputError(f'{label}: option experiment_id_from must be "id" or "name"')
    resource_names = mlflow_fields.resource_names(options, label)
    status_tag = str(options.get("status_tag", mlflow_fields.DEFAULT_STATUS_TAG))
    nested = nesting(store.runs, tags, store.outside)

    def attempt_id(run_uuid: str) -> str:
        own = tags.get(run_uuid, {}).get(attempt_tag) if attempt_tag else None
        return own.strip() if own and own.strip() else f"{prefix}{run_uuid}"

    def experiment(run: dict[str, Any]) -> str:
        """The run's experiment tag, else its nearest ancestor's, else the MLflow experiment."""
        key = options.get("experiment_id_tag")
        for uuid in [run["run_uuid"], *nested.ancestors(run["run_uuid"])] if key else ():
            value = tags.get(uuid, {}).get(key)
            if value and value.strip():
                return value.strip()
        native = run["experiment_id"]
        return names.get(native, str(native)) if experiment_from == "name" else str(native)

    attempts: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    groupings_holding: list[str] = []
    seen: dict[str, str] = {}
    for run in store.runs:
        run_uuid = run["run_uuid"]
        where = store.run_where.get(run_uuid) or f"{store.where}: run {run_uuid}"
        run_tags = tags.get(run_uuid, {})
        fields = {**params.get(run_uuid, {}), **run_tags}
        held = mlflow_fields.resources(fields, resource_names)
        if run_uuid in nested.groupings:
            if held:
                groupings_holding.append(f"run {run_uuid} ({', '.join(r for r, _ in held)})")
            continue
        row = _attempt(run, run_tags, fields, experiment(run), status_tag, outcome)
        try:
            row["started_at"] = _ms(run["start_time"], "start_time")
            row["ended_at"] = _ms(run["end_time"], "end_time")
            for column in _COUNTS:
                row[column] = _count(fields.get(column), column)
        except ValueError as error:
            outcome.bad(where, str(error))
            continue
        if row["started_at"] and row["ended_at"] and row["ended_at"] < row["started_at"]:
            outcome.bad(
                where,
                f"end_time {row['ended_at'].isoformat()} is before start_time "
                f"{row['started_at'].isoformat()}; fix the run's times in MLflow or drop the run",
            )
            continue
        row["attempt_id"] = attempt_id(run_uuid)
        if row["attempt_id"] in seen:
            outcome.bad(
                where,
                f"attempt id {row['attempt_id']!r} (tag {attempt_tag}) is also on run "
                f"{seen[row['attempt_id']]}; each run needs its own attempt id: fix the tag",
            )
            continue
        seen[row["attempt_id"]] = run_uuid
        retried = nested.retry_of(run_uuid)
        row["parent_attempt_id"] = attempt_id(retried) if retried else None
        grouping = nested.grouping_of(run_uuid)
        if grouping:
            row["tags"]["parent_run_id"] = grouping
            name = tags.get(grouping, {}).get("mlflow.runName")
            if name:
                row["tags"]["parent_run_name"] = name
        metric = options.get("metric") or run_tags.get("mlflow.experiment.primaryMetric.name")
        if metric and metric in metrics.get(run_uuid, {}):
            row["metric_name"], row["metric_value"] = metric, metrics[run_uuid][metric]
        attempts.append(row)
        resources += [
            {
                "attempt_id": row["attempt_id"],
                "resource_id": resource_id,
                "resource_kind": kind,
                "started_at": row["started_at"],
                "ended_at": row["ended_at"],
                "gpu_count": row["gpu_count"],
            }
            for resource_id, kind in held
        ]
    if groupings_holding:
        log.warning(
            "%s: %d run(s) that group nested runs (a sweep parent) name resources; a grouping "
            "is not an attempt, so no attempt holds them: log them on the nested runs that "
            "used them. First: %s",
            label,
            len(groupings_holding),
            groupings_holding[0],
            extra={"stage": "telemetry"},
        )
    outcome.report()
    return {
        "attempts": table("attempts", attempts),
        "attempt_resources": table("attempt_resources", resources),
    }


def _attempt(
    run: dict[str, Any],
    run_tags: dict[str, str],
    fields: dict[str, str],
    experiment: str,
    status_tag: str,
    outcome: Outcome,
) -> dict[str, Any]:
    tags = {"source": "mlflow", "source_native_id": run["run_uuid"]}
    for key, name in (("mlflow.runName", "run_name"), ("mlflow.user", "user")):
        if run_tags.get(key):
            tags[name] = run_tags[key]
    if run.get("lifecycle_stage") == "deleted":
        tags["mlflow_lifecycle_stage"] = "deleted"
    status = outcome.status(run["status"], STATUSES, tags)
    refined, reason = mlflow_fields.end_reason(run["status"], fields.get(status_tag))
    if refined:
        tags["mlflow_status"] = str(run["status"])
        status = refined
    row: dict[str, Any] = {
        "experiment_id": experiment,
        "status": status,
        "artifact_uri": run.get("artifact_uri") or None,
        "tags": tags,
    }
    for column in _COPIED:
        value = fields.get(column)
        row[column] = value.strip() if value and value.strip() else None
    row["failure_reason"] = row["failure_reason"] or reason
    return row


def _store_path(value: object, label: str) -> Path:
    text = str(value)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise InputError(
            f"{label}: {text} is not an SQLite store; read a tracking server with "
            f'options.tracking_uri = "{text}" and options.experiments = ["name", ...], or set '
            "path to a .db file (or sqlite:///path)"
        )
    path = Path(text)
    if not path.is_file():
        raise InputError(f"{label}: {path}: MLflow store not found; point path at the .db file")
    return path


def _connect(path: Path, label: str) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        con.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        raise InputError(
            f"{label}: {path}: cannot be read as SQLite ({error}); point path at the MLflow "
            "tracking store (the file in --backend-store-uri sqlite:///...)"
        ) from None
    return con


def _check_schema(con: sqlite3.Connection, path: Path, label: str) -> None:
    """Refuse a store lacking a column runcost reads, naming it; any alembic version is fine."""
    try:
        versions = [row[0] for row in con.execute("select version_num from alembic_version")]
    except sqlite3.DatabaseError:
        versions = []
    found = f"schema version {versions[0]}" if versions else "no alembic_version table"
    for name, needed in _COLUMNS.items():
        have = {row[1] for row in con.execute(f'pragma table_info("{name}")')}
        missing = [f"{name}.{column}" for column in needed if column not in have]
        if missing:
            raise InputError(
                f"{label}: {path}: "
                + (f"table {name}" if not have else f"column {', '.join(missing)}")
                + f" is missing ({found}); runcost reads "
                + "; ".join(f"{t}({', '.join(c)})" for t, c in _COLUMNS.items())
                + ". Point path at an MLflow tracking store, or read the tracking server with "
                "options.tracking_uri"
            )
    if not versions or versions[0] not in SUPPORTED_VERSIONS:
        log.info(
            "%s: %s: %s, not one runcost was checked on (%s); the columns it reads are there",
            label,
            path,
            found,
            ", ".join(SUPPORTED_VERSIONS),
        )


def _query(con: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _query_rows(con: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return list(con.execute(sql))


def _params(con: sqlite3.Connection) -> list[tuple[Any, ...]]:
    try:
        return _query_rows(con, "select run_uuid, key, value from params")
    except sqlite3.DatabaseError:
        return []


def _by_run(rows: list[tuple[Any, ...]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for run_uuid, key, value in rows:
        out.setdefault(run_uuid, {})[key] = value
    return out


def _latest_metrics(con: sqlite3.Connection) -> dict[str, dict[str, float | None]]:
    """run -> key -> the value at the highest step, then latest timestamp (MLflow's rule)."""
    rows = con.execute(
        "select run_uuid, key, value, is_nan from metrics "
        "order by run_uuid, key, step, timestamp, value"
    )
    out: dict[str, dict[str, float | None]] = {}
    for run_uuid, key, value, is_nan in rows:
        nan = bool(is_nan) or value is None or math.isnan(value)
        out.setdefault(run_uuid, {})[key] = None if nan else float(value)
    return out


def _ms(value: object, column: str) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{column} {value!r} is not epoch milliseconds")
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=value)


def _count(value: str | None, column: str) -> int | None:
    if value is None or not value.strip():
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(
            f"tag {column} {value!r} is not a whole number; log it as e.g. {column}=8"
        ) from None
    if number < 0:
        raise ValueError(f"tag {column} {value!r} is negative; log 0 or more")
    return number
