"""Telemetry source adapters: the read(source, label) contract, the kind registry, and merging."""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import arrow_schema, empty_table

log = logging.getLogger("runcost")

# An adapter: read(source, label) -> canonical tables (any subset of ADAPTER_TABLES).
#   source: {"kind": str, "path": pathlib.Path (resolved against runcost.toml), "options": dict,
#            "on_error": "fail" | "skip"}
#   label:  how messages name the source, e.g. "telemetry.sources[1] (slurm)".
Reader = Callable[[dict[str, object], str], dict[str, pa.Table]]
ADAPTER_TABLES = ("attempts", "attempt_resources", "attempt_events")
# kind -> "module:function"; imported on first use so one adapter's bug cannot break the others.
REGISTRY: dict[str, str] = {
    "mlflow": "pipeline.telemetry.mlflow:read",
    "slurm": "pipeline.telemetry.slurm:read",
    "kubernetes": "pipeline.telemetry.kubernetes:read",
    "sagemaker": "pipeline.telemetry.sagemaker:read",
    "checkpoint_log": "pipeline.telemetry.checkpoint_log:read",
    "canonical": "pipeline.telemetry.adapters:read_canonical",
}
# A raw status no adapter knows becomes this, with the raw value in tags["raw_status"].
UNKNOWN_STATUS = "unknown"


def kinds() -> tuple[str, ...]:
    """The source kinds runcost.toml may name in [[telemetry.sources]]."""
    return tuple(REGISTRY)


def reader(kind: str) -> Reader:
    """The read function registered for a source kind."""
    if kind not in REGISTRY:
        raise InputError(
            f"telemetry source kind {kind!r} is not known; use one of {', '.join(REGISTRY)}"
        )
    module, function = REGISTRY[kind].split(":")
    return getattr(importlib.import_module(module), function)


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """Read one configured source into canonical tables, dispatching on source["kind"].

    Every returned table has the canonical Arrow schema; missing tables are empty.
    """
    tables = reader(str(source["kind"]))(source, label)
    out = {}
    for name in ADAPTER_TABLES:
        table = tables.get(name)
        if table is None:
            out[name] = empty_table(name)
        elif table.schema != arrow_schema(name):
            raise AssertionError(f"{label}: adapter returned {name} with a non-canonical schema")
        else:
            out[name] = table
    if "experiments" in tables:
        out["experiments"] = tables["experiments"]
    return out


def read_canonical(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """A folder of canonical files (the [telemetry] path format) as a source."""
    from pipeline.telemetry.files import load_telemetry

    return load_telemetry(source["path"])  # type: ignore[arg-type]


# ---- helpers adapters may use ----------------------------------------------------------


def table(name: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Canonical Arrow table from dict rows: absent keys are NULL, tags a dict[str, str]."""
    schema = arrow_schema(name)
    rows = list(rows)
    columns = {}
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if field.name == "tags":
            values = [sorted((v or {}).items()) for v in values]
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=schema)


def utc(value: dt.datetime | None) -> dt.datetime | None:
    """A timezone-aware datetime in UTC; refuses naive ones (a bug in the adapter)."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise AssertionError("naive datetime reached a canonical table")
    return value.astimezone(dt.UTC)


class Outcome:
    """Per-source bookkeeping: bad records (fail or skip per on_error) and unknown statuses."""

    def __init__(self, source: Mapping[str, object], label: str) -> None:
        self.label = label
        self.skip = source.get("on_error", "fail") == "skip"
        self.skipped: list[str] = []
        self.unknown: dict[str, int] = {}

    def bad(self, where: str, problem: str) -> None:
        """A bad record: raise InputError naming it, or (on_error = "skip") count it."""
        message = f"{self.label}: {where}: {problem}"
        if not self.skip:
            raise InputError(message)
        self.skipped.append(message)

    def status(self, raw: object, mapping: Mapping[str, str], tags: dict[str, str]) -> str:
        """Map a raw status; unknown ones become 'unknown' with tags['raw_status']."""
        key = str(raw).strip() if raw is not None else ""
        if key in mapping:
            return mapping[key]
        tags["raw_status"] = key
        self.unknown[key] = self.unknown.get(key, 0) + 1
        return UNKNOWN_STATUS

    def report(self) -> None:
        """Log skipped records and unknown statuses (call once, after reading)."""
        if self.skipped:
            log.warning(
                '%s: skipped %d bad record(s) (telemetry.on_error = "skip"); first: %s',
                self.label,
                len(self.skipped),
                self.skipped[0],
                extra={"stage": "telemetry"},
            )
        if self.unknown:
            counts = ", ".join(f"{raw!r} x{n}" for raw, n in sorted(self.unknown.items()))
            log.warning(
                "%s: %d attempt(s) with a status runcost does not know, kept as 'unknown' "
                "(raw value in tags.raw_status): %s",
                self.label,
                sum(self.unknown.values()),
                counts,
                extra={"stage": "telemetry"},
            )


def read_sources(config: Any) -> dict[str, pa.Table]:
    """The canonical files of telemetry.path (if set) and every configured source, merged.

    `config` is a pipeline.config.loader.Config; sources are read in config order after the files.
    """
    batches: list[tuple[str, Mapping[str, pa.Table]]] = []
    if config.telemetry is not None:
        from pipeline.telemetry.files import load_telemetry

        batches.append((f"telemetry.path {config.telemetry}", load_telemetry(config.telemetry)))
    for number, item in enumerate(config.telemetry_sources, start=1):
        label = f"telemetry.sources[{number}] ({item.kind})"
        source = {
            "kind": item.kind,
            "path": item.path,
            "options": dict(item.options),
            "on_error": config.telemetry_on_error,
        }
        batches.append((label, read(source, label)))
    return merge(batches)


# ---- merging sources ---------------------------------------------------------------------


def _identity(row: Mapping[str, Any]) -> tuple[str, str]:
    """(source kind, native id) of an attempt row; canonical rows carry neither tag."""
    tags = dict(row["tags"] or [])
    return tags.get("source", "canonical"), tags.get("source_native_id", row["attempt_id"])


def merge(batches: Iterable[tuple[str, Mapping[str, pa.Table]]]) -> dict[str, pa.Table]:
    """Merge (label, tables) batches in order into the four canonical tables.

    Identity rules: an attempt id reported again by the same source for the same native record
    updates the attempt (the last batch wins; its resources and events replace the earlier ones
    when it has any, else the earlier ones stay); the same attempt id from a different source or
    native record is an InputError (two different attempts never merge). Experiments: last wins.
    """
    attempts: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    children: dict[str, dict[str, list[dict[str, Any]]]] = {
        "attempt_resources": {},
        "attempt_events": {},
    }
    experiments: dict[str, dict[str, Any]] = {}
    for label, tables in batches:
        for row in _rows(tables, "attempts"):
            attempt_id = row["attempt_id"]
            if attempt_id in attempts and _identity(attempts[attempt_id]) != _identity(row):
                was_source, was_id = _identity(attempts[attempt_id])
                source, native = _identity(row)
                raise InputError(
                    f"{label}: attempt id {attempt_id!r} ({source} record {native!r}) is already "
                    f"used by {origin[attempt_id]} ({was_source} record {was_id!r}); two "
                    "different attempts never merge: give one of them another attempt id tag "
                    "(or drop the attempt id tag option so runcost prefixes the source's own id)"
                )
            attempts[attempt_id] = row
            origin[attempt_id] = label
        for name, by_attempt in children.items():
            fresh: dict[str, list[dict[str, Any]]] = {}
            for row in _rows(tables, name):
                fresh.setdefault(row["attempt_id"], []).append(row)
            by_attempt.update(fresh)
        for row in _rows(tables, "experiments"):
            experiments[row["experiment_id"]] = row
    merged = {"attempts": table("attempts", _untagged(attempts.values()))}
    for name, by_attempt in children.items():
        unknown = sorted(set(by_attempt) - set(attempts))
        if unknown:
            shown = ", ".join(map(repr, unknown[:5]))
            raise InputError(
                f"telemetry: {name} name attempt(s) no source reports ({shown}"
                f"{f' and {len(unknown) - 5} more' if len(unknown) > 5 else ''}); add the "
                "attempts or remove the rows"
            )
        merged[name] = table(name, [row for rows in by_attempt.values() for row in rows])
    merged["experiments"] = table("experiments", experiments.values())
    return merged


def _rows(tables: Mapping[str, pa.Table], name: str) -> list[dict[str, Any]]:
    found = tables.get(name)
    return [] if found is None else found.to_pylist()


def _untagged(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose tags (pylist: [(key, value), ...]) become dicts again, for table()."""
    return [{**row, "tags": dict(row["tags"] or [])} for row in rows]
