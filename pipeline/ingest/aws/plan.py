"""Find an export's billing periods and, per period, the delivery to ingest (before downloading)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

from pipeline.common.errors import InputError
from pipeline.ingest.aws.manifest import parse_manifest
from pipeline.ingest.export_source import ExportSource, SourceFile
from pipeline.warehouse.raw_store import RawStore

log = logging.getLogger("runcost")

_PERIOD_DIR = re.compile(r"^BILLING_PERIOD=(\d{4}-(?:0[1-9]|1[0-2]))$")
# Legacy CUR writes each period to <YYYYMMDD>-<YYYYMMDD>/ below the report's folder.
_LEGACY_DIR = re.compile(r"^(\d{4})(0[1-9]|1[0-2])01-\d{8}$")
# Create-new mode writes each refresh to <YYYYMMDDTHHMMSSZ>-<execution-id>/ inside the period.
_CREATE_NEW_DIR = re.compile(r"^(\d{8}T\d{6}Z)-.+$")
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_MANIFEST_SUFFIX = "-Manifest.json"
_DATA_SUFFIXES = (".parquet", ".csv.gz", ".csv", ".gz", ".zip")


@dataclass(frozen=True)
class Period:
    """A billing period as the export lays it out."""

    period: str  # YYYY-MM
    folder: str  # data/BILLING_PERIOD=YYYY-MM/ (CUR 2.0) or YYYYMMDD-YYYYMMDD/ (legacy)
    legacy: bool


@dataclass(frozen=True)
class Planned:
    """One delivery found in a source, before anything is downloaded."""

    source: ExportSource
    period: str
    delivery_id: str
    execution_id: str | None
    files: tuple[tuple[str, SourceFile], ...]  # (name in the delivery, source file)
    manifest: tuple[str, SourceFile, bytes | None] | None  # key, file, content (None: known)
    delivered_at: datetime | None
    where: str  # the manifest's URI, or the data folder's, for messages
    known: bool = False  # found in raw/ by the manifest's ETag: nothing to download


def periods(source: ExportSource) -> list[Period]:
    """Every billing period the export shows (CUR 2.0 layout, else legacy CUR layout)."""
    found: dict[str, Period] = {}
    skipped: set[str] = set()
    for top in ("metadata/", "data/"):
        for file in source.list_files(top):
            parts = PurePosixPath(file.key).parts
            if len(parts) < 3:
                continue
            match = _PERIOD_DIR.match(parts[1])
            if match:
                found[match.group(1)] = Period(match.group(1), f"data/{parts[1]}/", False)
            elif parts[1].startswith("BILLING_PERIOD="):
                skipped.add(f"{parts[0]}/{parts[1]}")
    for folder in sorted(skipped):
        log.warning("%s: not a BILLING_PERIOD=YYYY-MM folder; skipped", source.describe(folder))
    if not found and not skipped:
        for file in source.list_files(""):
            top = file.key.split("/", 1)[0]
            match = _LEGACY_DIR.match(top)
            if match and "/" in file.key:
                period = f"{match.group(1)}-{match.group(2)}"
                found[period] = Period(period, f"{top}/", True)
    return [found[key] for key in sorted(found)]


def plan(source: ExportSource, period: Period, store: RawStore) -> Planned | None:
    """The delivery the source shows for a period: its manifest's, else the data folder's."""
    manifest = _manifest(source, period)
    if manifest is None:
        if period.legacy:
            # legacy assembly folders carry no time: without the manifest there is no telling
            # which one is current, so the run stops rather than leave the period out silently
            raise InputError(
                f"{source.describe(period.folder)}: legacy CUR period {period.period} has no "
                f"{period.folder}<report>{_MANIFEST_SUFFIX}, and only the manifest says which "
                "assembly folder is current; copy the manifest AWS wrote into that folder, or "
                "move the folder out of the export to leave the period out"
            )
        return _plan_without_manifest(source, period)
    where = source.describe(manifest.key)
    delivered = _create_new_time(manifest.key) or manifest.modified
    known = store.find_by_manifest(
        source.export_name, period.period, manifest.key, manifest.etag, manifest.size
    )
    if known is not None:
        stored_at = store.delivered_at(source.export_name, period.period, known)
        return Planned(source, period.period, known, None, (), None, stored_at, where, True)
    content = source.read_bytes(manifest.key)
    parsed = parse_manifest(content.decode("utf-8", errors="replace"), where)
    if parsed.billing_period != period.period:
        raise InputError(
            f"{where}: the manifest is for billing period {parsed.billing_period} but lies "
            f"under {period.folder}; re-copy the export exactly as AWS delivered it"
        )
    files = []
    for entry in parsed.data_files:
        key = local_key(entry, period, where)
        file = source.stat(key)
        if file is None:
            raise InputError(
                f"{where}: lists {entry}, but {source.describe(key)} does not exist; copy the "
                "whole export again (every file the manifest lists) or wait until AWS has "
                "finished delivering it"
            )
        stated = parsed.sizes.get(entry)
        if stated is not None and stated != file.size:
            raise InputError(
                f"{where}: lists {entry} with {stated} bytes, but {source.describe(key)} has "
                f"{file.size} bytes; the delivery is incomplete or was changed: wait until AWS "
                "has finished delivering it, or copy it again"
            )
        files.append((key[len(period.folder) :], file))
    # Create-new mode: the refresh folder's time, whether the manifest sits in it or above it.
    folder_times = [moment for _name, file in files if (moment := _create_new_time(file.key))]
    delivered = _create_new_time(manifest.key) or max(folder_times, default=None) or delivered
    execution = parsed.execution_id
    delivery_id = (
        _SAFE_ID.sub("-", execution) if execution else hashlib.sha256(content).hexdigest()[:16]
    )
    stored = (manifest.key, manifest, content)
    return Planned(
        source, period.period, delivery_id, execution, tuple(files), stored, delivered, where
    )


def local_key(entry: str, period: Period, where: str) -> str:
    """Map a listed file (s3://bucket/prefix/<export>/data/... or a key) onto the export root.

    A legacy CUR report with no S3 prefix lists its keys with a leading `/`
    (`/<report>/20261001-20261101/<assembly>/<report>-1.csv.gz`): those are keys, not paths.
    """
    if period.legacy and entry.startswith("/") and not entry.startswith("//"):
        entry = entry.lstrip("/")
    if entry.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", entry):
        raise InputError(
            f"{where}: lists {entry}, an absolute path; manifest entries must be s3:// URIs or "
            "keys inside the export, so this manifest was refused and nothing was written"
        )
    path = entry.split("://", 1)[1].split("/", 1)[-1] if "://" in entry else entry
    parts = [part for part in path.replace("\\", "/").split("/") if part]
    if any(part in ("..", ".") for part in parts):
        raise InputError(
            f"{where}: lists {entry}, which contains '..' or '.'; manifest entries must stay "
            "inside the export, so this manifest was refused and nothing was written"
        )
    anchor = period.folder.rstrip("/").split("/")
    # The prefix may itself contain a "data" folder: use the one just above the period folder.
    starts = [i for i in range(len(parts) - len(anchor)) if parts[i : i + len(anchor)] == anchor]
    if not starts:
        raise InputError(
            f"{where}: lists {entry}, which is not under {period.folder}; a delivery holds "
            "exactly one billing period, so re-copy the export as AWS delivered it"
        )
    return "/".join(parts[starts[-1] :])


def _manifest(source: ExportSource, period: Period) -> SourceFile | None:
    prefix = period.folder if period.legacy else f"metadata/BILLING_PERIOD={period.period}/"
    candidates = [f for f in source.list_files(prefix) if f.key.endswith(_MANIFEST_SUFFIX)]
    top = [file for file in candidates if "/" not in file.key[len(prefix) :]]
    if len(top) > 1:
        raise InputError(
            f"{source.describe(prefix)}: several manifests "
            f"({', '.join(file.key for file in top)}); an export folder holds one export, so "
            "move the other exports to folders of their own"
        )
    if top:
        return top[0]
    if period.legacy:
        return None
    # Create-new mode: the newest refresh folder that has its manifest (AWS writes it last).
    nested = newest_create_new([file.key for file in candidates], prefix)
    return next((file for file in candidates if file.key in nested), None)


def _plan_without_manifest(source: ExportSource, period: Period) -> Planned | None:
    data_prefix = period.folder
    listed = source.list_files(data_prefix)
    chosen = newest_create_new([f.key for f in listed], data_prefix)
    keys = set(chosen) if chosen else {f.key for f in listed}
    files = [f for f in listed if f.key in keys and not PurePosixPath(f.key).name.startswith(".")]
    data = [f for f in files if f.key.endswith(_DATA_SUFFIXES)]
    folder = source.describe(data_prefix)
    if not data:
        if files:
            raise InputError(
                f"{source.describe(files[0].key)}: not a CUR data file (no .parquet or .csv.gz "
                f"files in {folder}); CUR 2.0 exports must use Format=PARQUET or TEXT_OR_CSV"
            )
        return None
    if chosen:
        folder = source.describe(str(PurePosixPath(chosen[0]).parent))
    log.warning(
        "%s: no manifest under metadata/BILLING_PERIOD=%s/; reading its %d data file(s) "
        "without one, so the delivery may be incomplete",
        folder,
        period.period,
        len(data),
    )
    named = [(f.key[len(data_prefix) :], f) for f in data]
    listing = sorted([name, f.size, source.fingerprint(f)] for name, f in named)
    digest = hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]
    delivered = _create_new_time(chosen[0]) if chosen else None
    if delivered is None:
        times = [f.modified for f in data if f.modified is not None]
        delivered = max(times) if times else None
    return Planned(source, period.period, digest, None, tuple(named), None, delivered, folder)


def newest_create_new(keys: list[str], prefix: str) -> list[str]:
    """The keys inside the newest <timestamp>-<execution-id>/ folder below prefix, if any."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        parts = key[len(prefix) :].split("/")
        if len(parts) > 1 and _CREATE_NEW_DIR.match(parts[0]):
            groups.setdefault(parts[0], []).append(key)
    return groups[max(groups)] if groups else []


def _create_new_time(key: str) -> datetime | None:
    for part in key.split("/"):
        match = _CREATE_NEW_DIR.match(part)
        if match:
            return datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return None
