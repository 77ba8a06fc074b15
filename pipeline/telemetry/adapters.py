"""Telemetry source adapters: the read(source, label) contract, the kind registry, and merging."""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import arrow_schema, empty_table
from pipeline.telemetry.conversion import ID_CONTROLS, TAG_CONTROLS, control_character
from pipeline.telemetry.merge import merge
from pipeline.telemetry.plausible import check_source_tables, warn_unknown_experiments

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
    # measures the attempts the others report (gpu_usage), so it is read after them
    "prometheus": "pipeline.telemetry.prometheus:read",
}
# kinds that derive a table from the merged telemetry instead of reporting attempts
MEASURING = ("prometheus",)
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


def read(
    source: dict[str, object], label: str, now: dt.datetime | None = None
) -> dict[str, pa.Table]:
    """Read one configured source into canonical tables, dispatching on source["kind"].

    Every returned table has the canonical Arrow schema; missing tables are empty. What the
    telemetry files refuse is refused here too (pipeline.telemetry.plausible), judged by ``now``
    (default: now): a time past it by more than a day, a time before any bill, a NaN, more GPUs
    than the instance type has; on_error = "skip" leaves the attempts concerned out.
    """
    kind = str(source["kind"])
    if kind == "canonical":  # the files check their own times, against the run's clock
        source = {**source, "now": now}
    tables = reader(kind)(source, label)
    out = {}
    for name in ADAPTER_TABLES:
        table = tables.get(name)
        if table is None:
            out[name] = empty_table(name)
        elif table.schema != arrow_schema(name):
            raise AssertionError(f"{label}: adapter returned {name} with a non-canonical schema")
        else:
            check_controls(table, name, label)
            out[name] = in_nfc(table)
    if "experiments" in tables:
        check_controls(tables["experiments"], "experiments", label)
        out["experiments"] = in_nfc(tables["experiments"])
    if kind == "canonical":  # read as the telemetry files are, checked there
        return out
    return check_source_tables(out, label, now, skip=source.get("on_error") == "skip")


def check_controls(table: pa.Table, name: str, label: str) -> None:
    """Refuse an id, or a tag, holding a control character (a tag may hold tab and line breaks),
    as the telemetry files do: a NUL makes a look-alike id that matches no billing line."""
    key = "experiment_id" if name == "experiments" else "attempt_id"
    pairs = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
    for index, field in enumerate(table.schema):
        column = table.column(index)
        if field.name.endswith("_id") and pa.types.is_string(field.type):
            values, pattern, what = column, ID_CONTROLS, f"{field.name} "
        elif pa.types.is_map(field.type):
            flat = pc.list_flatten(column.cast(pairs))
            values = pc.binary_join_element_wise(
                pc.struct_field(flat, "key"), pc.struct_field(flat, "value"), "="
            )
            pattern, what = TAG_CONTROLS, "tag "
        else:
            continue
        found = pc.match_substring_regex(values, pattern)
        if not pc.any(found).as_py():
            continue
        value = pc.filter(values, found)[0].as_py()
        if what == "tag ":
            rows = pc.list_value_length(column.cast(pairs)).to_pylist()
            owners = [row for row, count in enumerate(rows) for _ in range(count or 0)]
            row = owners[pc.index(found, True).as_py()]
        else:
            row = pc.index(found, True).as_py()
        owner = table.column(key)[row].as_py() if key in table.schema.names else None
        raise InputError(
            f"{label}: {name} {key} {owner!r}: {what}{value!r} holds the control character "
            f"{control_character(value, pattern)}; an id or tag with one never matches the same "
            "one on the bill: fix it where the source records it"
        )


def in_nfc(table: pa.Table) -> pa.Table:
    """Ids (columns named *_id) and tags in Unicode NFC, as the telemetry files are read: the
    bill's tags and resource ids are compared with them as text."""
    for index, field in enumerate(table.schema):
        column = table.column(index)
        if field.name.endswith("_id") and pa.types.is_string(field.type):
            table = table.set_column(index, field, _nfc(column))
        elif pa.types.is_map(field.type) and column.num_chunks:
            chunks = []
            for chunk in column.chunks:
                keys, items = _nfc(chunk.keys), _nfc(chunk.items)
                if keys is chunk.keys and items is chunk.items:
                    chunks.append(chunk)
                else:
                    chunks.append(
                        pa.MapArray.from_arrays(chunk.offsets, keys, items, mask=chunk.is_null())
                    )
            table = table.set_column(index, field, pa.chunked_array(chunks, field.type))
    return table


def _nfc(values: Any) -> Any:
    # ASCII is NFC already: only text with a multi-byte character is normalised
    if not pc.any(pc.not_equal(pc.binary_length(values), pc.utf8_length(values))).as_py():
        return values
    return pc.utf8_normalize(values, form="NFC")


def read_canonical(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """A folder of canonical files (the [telemetry] path format) as a source; source["now"]:
    the run's clock (default: now)."""
    from pipeline.telemetry.files import load_telemetry

    return load_telemetry(source["path"], now=source.get("now"))  # type: ignore[arg-type]


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


def read_sources(config: Any, now: dt.datetime | None = None) -> dict[str, pa.Table]:
    """The canonical files of telemetry.path (if set) and every configured source, merged, with
    gpu_usage: what the measuring sources (prometheus) measured of the merged attempts.

    `config` is a pipeline.config.loader.Config; sources are read in config order after the files.
    ``now``: the run's clock, which no time may run past by more than a day (default: now).
    A source's attempt of an experiment no experiments list holds is warned about.
    """
    batches: list[tuple[str, Mapping[str, pa.Table]]] = []
    adapted: list[tuple[str, Mapping[str, pa.Table]]] = []
    measuring: list[tuple[str, dict[str, object]]] = []
    if config.telemetry is not None:
        from pipeline.telemetry.files import load_telemetry

        files = load_telemetry(config.telemetry, now=now)
        batches.append((f"telemetry.path {config.telemetry}", files))
    for number, item in enumerate(config.telemetry_sources, start=1):
        label = f"telemetry.sources[{number}] ({item.kind})"
        source = {
            "kind": item.kind,
            "path": item.path,
            "options": dict(item.options),
            "on_error": config.telemetry_on_error,
        }
        if item.kind in MEASURING:
            measuring.append((label, source))
            continue
        batches.append((label, read(source, label, now)))
        if item.kind != "canonical":  # canonical files warn about their own attempts
            adapted.append(batches[-1])
    warn_unknown_experiments(batches, adapted)
    merged = merge(batches)
    usage = [
        reader(str(source["kind"]))(source, label, merged, now or dt.datetime.now(dt.UTC))  # type: ignore[call-arg]
        for label, source in measuring
    ]
    merged["gpu_usage"] = pa.concat_tables(usage) if usage else empty_table("gpu_usage")
    return merged
