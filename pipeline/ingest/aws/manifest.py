"""AWS Data Exports manifests: read them defensively, and write them for the scenario."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pipeline.common.errors import InputError

# The documented top-level fields (AWS "Data Exports manifest file reference") are executionId,
# exportArn, columns, dataFiles and additionalOutputFiles. The CUR 2.0 billing period is not a
# documented field: readers take it from the BILLING_PERIOD=YYYY-MM partition in the manifest's
# path (metadata/BILLING_PERIOD=YYYY-MM/<export>-Manifest.json) or in the data file URIs.
# Legacy CUR manifests (reportKeys, assemblyId, billingPeriod.start) are accepted as variants.
_PARTITION = re.compile(r"BILLING_PERIOD=(\d{4}-\d{2})(?:/|$)")
_PERIOD = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_MANIFEST_SUFFIX = "-Manifest.json"

# Our column kinds (schemas.aws_cur2) -> the type names a Data Exports manifest uses.
_MANIFEST_TYPES = {
    "string": "string",
    "double": "double",
    "timestamp": "timestamp",
    "map_string": "map",
    "map_double": "map",
}


@dataclass(frozen=True)
class CurManifest:
    """What runcost needs from one Data Exports manifest (one delivery of one billing period)."""

    source: str
    export_name: str
    billing_period: str  # YYYY-MM
    execution_id: str | None
    data_files: tuple[str, ...]  # as listed: s3:// URIs or keys relative to the export root
    columns: tuple[str, ...]
    # Sizes in bytes, when an entry states one ({"key": ..., "size": N}); Data Exports
    # manifests list bare URIs, so this is usually empty and sizes come from the S3 listing.
    sizes: dict[str, int] = field(default_factory=dict)
    legacy: bool = False  # a legacy CUR <report>-Manifest.json (reportKeys, assemblyId)


def parse_manifest(text: str, source: str) -> CurManifest:
    """Parse a manifest; ``source`` is its path or URI (it names errors and gives the period)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{source}: manifest is not valid JSON ({error}); re-deliver the export or remove "
            "the broken manifest so the folder is read without one"
        ) from error
    if not isinstance(data, dict):
        raise InputError(
            f"{source}: manifest must be a JSON object with a 'dataFiles' list; "
            "re-deliver the export or remove the broken manifest"
        )

    files = _first(data, "dataFiles", "reportKeys", "files")
    if not isinstance(files, list) or not files:
        raise InputError(
            f"{source}: manifest lists no data files (expected a non-empty 'dataFiles' list of "
            "s3:// URIs); re-deliver the export or remove the broken manifest"
        )
    data_files = tuple(dict.fromkeys(_file_name(item, source) for item in files))
    sizes = {
        _file_name(item, source): item[key]
        for item in files
        if isinstance(item, dict)
        for key in ("size", "sizeInBytes", "contentLength")
        if isinstance(item.get(key), int) and not isinstance(item.get(key), bool)
    }

    columns_raw = _first(data, "columns") or []
    if not isinstance(columns_raw, list):
        raise InputError(f"{source}: manifest 'columns' must be a list of {{name, type}} objects")
    columns = tuple(
        str(item.get("name", "")) if isinstance(item, dict) else str(item) for item in columns_raw
    )
    execution = _first(data, "executionId", "assemblyId")
    return CurManifest(
        source=source,
        export_name=_export_name(data, source),
        billing_period=_billing_period(data, source, data_files),
        execution_id=str(execution) if execution else None,
        data_files=data_files,
        columns=columns,
        sizes=sizes,
        legacy="reportKeys" in data and "dataFiles" not in data,
    )


def write_manifest(
    path: Path,
    *,
    export_name: str,
    bucket: str,
    prefix: str,
    billing_period: str,
    execution_id: str,
    data_keys: list[str],
    columns: list[tuple[str, str]],
) -> None:
    """Write a manifest in the Data Exports layout (used by the scenario generator).

    ``data_keys`` are keys below ``s3://bucket/prefix/``, such as
    ``<export>/data/BILLING_PERIOD=2026-10/<export>-00001.snappy.parquet``.
    """
    start = datetime.strptime(billing_period + "-01", "%Y-%m-%d")
    end = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
    body = {
        "executionId": execution_id,
        "exportArn": f"arn:aws:bcm-data-exports:us-east-1:000000000000:export/{export_name}",
        "columns": [
            {"name": name, "type": _MANIFEST_TYPES.get(kind, kind)} for name, kind in columns
        ],
        "dataFiles": [_s3_uri(bucket, prefix, key) for key in data_keys],
        "additionalOutputFiles": [],
        # Not a documented field (see the note above); kept because it costs nothing and older
        # readers look for it. parse_manifest prefers it when present.
        "billingPeriod": {
            "start": start.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "end": end.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def _s3_uri(bucket: str, prefix: str, key: str) -> str:
    parts = [part.strip("/") for part in (prefix, key) if part.strip("/")]
    return f"s3://{bucket}/" + "/".join(parts)


def _first(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in data and data[key] not in (None, ""):
            return data[key]
    return None


def _file_name(item: Any, source: str) -> str:
    if isinstance(item, str) and item:
        return item
    if isinstance(item, dict):
        for key in ("key", "path", "uri", "s3Uri"):
            if isinstance(item.get(key), str) and item[key]:
                return item[key]
    raise InputError(f"{source}: manifest data file entry {item!r} has no path")


def _export_name(data: dict[str, Any], source: str) -> str:
    name = _first(data, "exportName", "reportName")
    if isinstance(name, str):
        return name
    file_name = source.replace("\\", "/").rsplit("/", 1)[-1]
    if file_name.endswith(_MANIFEST_SUFFIX) and len(file_name) > len(_MANIFEST_SUFFIX):
        return file_name[: -len(_MANIFEST_SUFFIX)]
    arn = str(_first(data, "exportArn") or "")
    return arn.rsplit("/", 1)[-1] if "/" in arn else ""


def _billing_period(data: dict[str, Any], source: str, data_files: tuple[str, ...]) -> str:
    period = _first(data, "billingPeriod")
    start = period.get("start") if isinstance(period, dict) else period
    if isinstance(start, str):
        # ISO (2026-10-01T00:00:00.000Z) or legacy CUR's compact form (20261001T000000.000Z).
        month = start[:7] if start[4:5] == "-" else f"{start[:4]}-{start[4:6]}"
        if _PERIOD.match(month):
            return month
    from_path = _PARTITION.search(source.replace("\\", "/"))
    if from_path:
        return _checked_period(from_path.group(1), source)
    from_files = {match.group(1) for key in data_files if (match := _PARTITION.search(key))}
    if len(from_files) == 1:
        return _checked_period(from_files.pop(), source)
    if len(from_files) > 1:
        raise InputError(
            f"{source}: manifest lists data files of several billing periods "
            f"({', '.join(sorted(from_files))}); a delivery holds exactly one billing period"
        )
    raise InputError(
        f"{source}: cannot tell the manifest's billing period; keep it under "
        "metadata/BILLING_PERIOD=YYYY-MM/ as AWS delivers it"
    )


def _checked_period(value: str, source: str) -> str:
    if not _PERIOD.match(value):
        raise InputError(f"{source}: BILLING_PERIOD={value} is not a valid YYYY-MM month")
    return value
