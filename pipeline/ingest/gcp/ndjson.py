"""GCP billing export rows from newline-delimited JSON (a BigQuery extract), typed as the export.

A value that cannot be stored in its column's type (a cost that is not a number, a time that is
not a timestamp) is refused here, with value_rules' message; every other rule runs on the typed
table (gcp/values.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.ingest.utf8 import check_utf8
from pipeline.ingest.value_rules import AFRESH, MONEY_WANTED, refused
from schemas import gcp_billing

log = logging.getLogger("runcost")

FIX = "Fix the extract (extract the export table again with a BigQuery extract job, or correct "
FIX += "the copy)"
WHOLE_EXTRACT = "extract the export table again (or copy the file again)"
TIME_WANTED = "a timestamp such as '2026-10-12 10:00:00 UTC' or ISO 8601"


def read_ndjson(path: Path, partition_columns: tuple[str, ...]) -> tuple[pa.Table, list[int]]:
    """The file typed by the export schema, and the file line of each row (blank lines skip)."""
    try:
        return _read(path, partition_columns)
    except UnicodeDecodeError as error:
        check_utf8(path, False, str(path), "BigQuery extract jobs write NDJSON in UTF-8")
        raise InputError(f"{path}: not UTF-8 text ({error})") from error


def _read(path: Path, partition_columns: tuple[str, ...]) -> tuple[pa.Table, list[int]]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    columns: dict[str, None] = {}
    ignored: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                if not text.endswith("\n"):  # the last line, without its newline
                    raise InputError(
                        f"{path}: row {number}: cut short (not JSON: "
                        f"{error.msg}), so the copy is damaged or truncated: {WHOLE_EXTRACT} "
                        f"and run again; {AFRESH}"
                    ) from error
                raise InputError(
                    f"{path}: row {number}: not JSON ({error.msg}); the file must be "
                    "newline-delimited JSON, one export row per line"
                ) from error
            if not isinstance(record, dict):
                raise InputError(f"{path}: row {number}: not a JSON object (one row per line)")
            row: dict[str, Any] = {}
            for name, value in record.items():
                if name in gcp_billing.TYPES:
                    row[name] = _converter(gcp_billing.TYPES[name], name)(value, path, number)
                    columns.setdefault(name)
                elif name in partition_columns:
                    row[name] = None if value is None else str(value)
                    columns.setdefault(name)
                else:
                    ignored.add(name)
            rows.append(row)
            lines.append(number)
    if ignored:
        log.warning("%s: columns outside the billing export ignored: %s", path, sorted(ignored))
    names = [name for name, _ in gcp_billing.DETAILED if name in columns]
    names += [name for name in partition_columns if name in columns]
    return pa.Table.from_pylist(rows, schema=export_schema(names)), lines


def export_schema(names: list[str]) -> pa.Schema:
    """The Arrow schema of an extract's columns ``names``: the export's types, partition
    columns as text."""
    return pa.schema([pa.field(name, gcp_billing.TYPES.get(name, pa.string())) for name in names])


Converter = Callable[[Any, Path, int], Any]


@cache
def _converter(kind: pa.DataType, column: str) -> Converter:
    """A function turning one JSON value of ``column`` into what Arrow stores for ``kind``;
    built once per column, so a row costs no type dispatch."""

    def fail(path: Path, row: int, what: str, value: Any) -> InputError:
        return InputError(f"{path}: row {row}: {column} must be {what}, not {value!r}")

    if pa.types.is_struct(kind):
        fields = [(item.name, _converter(item.type, f"{column}.{item.name}")) for item in kind]

        def record(value: Any, path: Path, row: int) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                raise fail(path, row, "a JSON object (a RECORD)", value)
            return {name: convert(value.get(name), path, row) for name, convert in fields}

        return record
    if pa.types.is_list(kind):
        element = _converter(kind.value_type, column)

        def repeated(value: Any, path: Path, row: int) -> Any:
            if value is None:
                return None
            if not isinstance(value, list):
                raise InputError(
                    f"{path}: row {row}: {column} must be a JSON list (a REPEATED field), not "
                    f"{value!r}; export the table with a BigQuery extract job, which keeps "
                    "repeated fields as lists"
                )
            return [element(item, path, row) for item in value]

        return repeated
    if pa.types.is_timestamp(kind):

        def moment(value: Any, path: Path, row: int) -> Any:
            if value is None:
                return None
            parsed = _timestamp(value)
            if parsed is None:
                raise refused(str(path), f"row {row}", column, value, TIME_WANTED, FIX)
            return parsed

        return moment
    if pa.types.is_decimal(kind) or pa.types.is_floating(kind):
        exact = pa.types.is_decimal(kind)

        def number(value: Any, path: Path, row: int) -> Any:
            if value is None or (type(value) is float and not exact):
                return value  # NaN and Infinity are refused with the other rules
            parsed = None
            if not isinstance(value, bool) and isinstance(value, int | float | str):
                try:
                    parsed = Decimal(str(value).strip())
                except InvalidOperation:
                    parsed = None
            if parsed is None or not parsed.is_finite():
                raise refused(str(path), f"row {row}", column, value, MONEY_WANTED, FIX)
            return parsed if exact else float(parsed)

        return number
    if pa.types.is_boolean(kind):

        def boolean(value: Any, path: Path, row: int) -> Any:
            if value is None or isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise fail(path, row, "true or false", value)

        return boolean

    def text(value: Any, path: Path, row: int) -> Any:
        if value is None or type(value) is str:
            return value
        return json.dumps(value) if isinstance(value, dict | list) else str(value)

    return text


def _timestamp(value: Any) -> datetime | None:
    """BigQuery's JSON timestamps: '2026-10-12 10:00:00 UTC', ISO 8601, or epoch seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (ValueError, OverflowError, OSError):
            return None
    text = str(value).strip()
    if text.endswith(" UTC"):
        text = text[:-4]
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
