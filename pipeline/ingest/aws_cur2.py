"""AWS CUR 2.0 (Data Exports) ingest: validate each delivery, then copy it into raw/aws/."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.errors import InputError
from pipeline.ingest.cur_manifest import parse_manifest
from pipeline.ingest.cur_validate import PARQUET_HINT, check_columns, check_magic, check_period
from pipeline.ingest.raw_store import Delivery, RawStore, StagedFile, sha256_stream

log = logging.getLogger("runcost")

PROVIDER = "aws"
_PERIOD_DIR = re.compile(r"^BILLING_PERIOD=(\d{4}-(?:0[1-9]|1[0-2]))$")
# Create-new mode writes each refresh to <YYYYMMDDTHHMMSSZ>-<execution-id>/ inside the period.
_CREATE_NEW_DIR = re.compile(r"^\d{8}T\d{6}Z-.+$")
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")
_MANIFEST_SUFFIX = "-Manifest.json"


@dataclass(frozen=True)
class SourceFile:
    """A file of an export: its key relative to the export root (posix) and its size."""

    key: str
    size: int


class ExportSource(Protocol):
    """Read access to one export root: a local folder now, an S3 prefix later.

    Keys are posix paths relative to the root. ``list_files(prefix)`` returns every file below a
    folder key (ending in '/'), sorted; ``open`` returns a seekable stream (footers are read from
    the end); ``describe`` gives a key's full path or URI for messages.
    """

    location: str
    export_name: str

    def list_files(self, prefix: str) -> list[SourceFile]: ...
    def stat(self, key: str) -> SourceFile | None: ...
    def open(self, key: str) -> BinaryIO: ...
    def copy_to(self, key: str, target: Path) -> None: ...
    def describe(self, key: str) -> str: ...


class LocalExportSource:
    """An export copied to a local folder with the S3 layout (data/, metadata/)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)
        self.export_name = root.name

    def list_files(self, prefix: str) -> list[SourceFile]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return [
            SourceFile(path.relative_to(self.root).as_posix(), path.stat().st_size)
            for path in sorted(base.rglob("*"))
            if path.is_file()
        ]

    def stat(self, key: str) -> SourceFile | None:
        path = self.root / key
        return SourceFile(key, path.stat().st_size) if path.is_file() else None

    def open(self, key: str) -> BinaryIO:
        return (self.root / key).open("rb")

    def copy_to(self, key: str, target: Path) -> None:
        shutil.copyfile(self.root / key, target)

    def describe(self, key: str) -> str:
        return str(self.root / key)


@dataclass(frozen=True)
class _Planned:
    """One delivery found in a source, before anything is written."""

    source: ExportSource
    period: str
    delivery_id: str
    execution_id: str | None
    files: tuple[tuple[str, SourceFile], ...]  # (name in the delivery, source file)
    manifest: tuple[str, bytes] | None
    sha256: dict[str, str]  # source key -> sha256, when computed (deliveries without manifest)


def ingest_aws_exports(config: Config) -> list[Delivery]:
    """Ingest every new delivery of config.aws_exports into raw/aws/; return the current ones."""
    store = RawStore(config.warehouse / "raw", PROVIDER)
    sources = _open_sources(config.aws_exports)

    # Plan and validate everything first: an error leaves raw/ exactly as it was.
    to_copy: list[_Planned] = []
    shown: dict[tuple[str, str], str] = {}
    for source in sources:
        for period in _periods(source):
            planned = _plan(source, period)
            if planned is None:
                continue
            shown[(source.export_name, period)] = planned.delivery_id
            if store.has_delivery(source.export_name, period, planned.delivery_id):
                store.verify(source.export_name, period, planned.delivery_id)
            else:
                for _name, file in planned.files:
                    _validate(source, file, period, config)
                to_copy.append(planned)
    kept = [key for key in store.periods() if key not in shown]
    kept_ids = {key: store.current_delivery_id(*key) for key in kept}
    for (export, period), delivery_id in kept_ids.items():
        if delivery_id is not None:
            store.verify(export, period, delivery_id, full=False)

    new = set()
    for planned in to_copy:
        _copy(store, planned)
        store.set_current(planned.source.export_name, planned.period, planned.delivery_id)
        new.add((planned.source.export_name, planned.period))
    # What the source shows now is current (a no-op when it already is), so a run that crashed
    # between copying a delivery and switching to it recovers on the next run.
    for (export, period), delivery_id in shown.items():
        store.set_current(export, period, delivery_id)

    current = {**{key: value for key, value in kept_ids.items() if value}, **shown}
    return [
        store.load(export, period, current[(export, period)], new=(export, period) in new)
        for export, period in sorted(current)
    ]


def _open_sources(locations: tuple[str, ...]) -> list[ExportSource]:
    sources: list[ExportSource] = []
    names: dict[str, str] = {}
    for location in locations:
        if "://" in location:
            name = location.rstrip("/").rsplit("/", 1)[-1]
            scheme = location.split("://", 1)[0]
            what = "S3 ingest is" if scheme == "s3" else f"reading {scheme}:// locations is"
            raise InputError(
                f"{location}: {what} not available in this version; copy the export to a "
                f"local folder (for example `aws s3 sync {location} ./exports/{name}`) and list "
                "that folder in aws.exports"
            )
        root = Path(location)
        if not root.is_dir():
            raise InputError(
                f"{location}: no such folder; aws.exports must name a local copy of a CUR 2.0 "
                "export (the folder that holds data/ and metadata/)"
            )
        if not (root / "data").is_dir() and not (root / "metadata").is_dir():
            raise InputError(
                f"{location}: not a CUR 2.0 export folder (no data/BILLING_PERIOD=YYYY-MM/ "
                "inside); point aws.exports at the export's own folder, <prefix>/<export-name>"
            )
        if root.name in names:
            raise InputError(
                f"{location}: has the same export name {root.name!r} as {names[root.name]}; "
                f"both would be stored in raw/aws/{root.name}/, so rename one of the folders"
            )
        names[root.name] = location
        sources.append(LocalExportSource(root))
    return sources


def _periods(source: ExportSource) -> list[str]:
    found: set[str] = set()
    skipped: set[str] = set()
    for top in ("data/", "metadata/"):
        for file in source.list_files(top):
            parts = PurePosixPath(file.key).parts
            if len(parts) < 3:
                continue
            match = _PERIOD_DIR.match(parts[1])
            if match:
                found.add(match.group(1))
            elif parts[1].startswith("BILLING_PERIOD="):
                skipped.add(f"{parts[0]}/{parts[1]}")
    for folder in sorted(skipped):
        log.warning("%s: not a BILLING_PERIOD=YYYY-MM folder; skipped", source.describe(folder))
    return sorted(found)


def _plan(source: ExportSource, period: str) -> _Planned | None:
    manifest_key = _manifest_key(source, period)
    data_prefix = f"data/BILLING_PERIOD={period}/"
    if manifest_key is None:
        return _plan_without_manifest(source, period, data_prefix)
    where = source.describe(manifest_key)
    with source.open(manifest_key) as handle:
        content = handle.read()
    manifest = parse_manifest(content.decode("utf-8", errors="replace"), where)
    if manifest.billing_period != period:
        raise InputError(
            f"{where}: the manifest is for billing period {manifest.billing_period} but lies "
            f"under BILLING_PERIOD={period}; re-copy the export exactly as AWS delivered it"
        )
    files = []
    for entry in manifest.data_files:
        key = _local_key(entry)
        if not key.startswith(data_prefix):
            raise InputError(
                f"{where}: lists {entry}, which is not under {data_prefix}; a delivery holds "
                "exactly one billing period, so re-copy the export as AWS delivered it"
            )
        file = source.stat(key)
        if file is None:
            raise InputError(
                f"{where}: lists {entry}, but {source.describe(key)} does not exist; copy the "
                "whole export again (every file the manifest lists) or wait until AWS has "
                "finished delivering it"
            )
        files.append((key[len(data_prefix) :], file))
    execution = manifest.execution_id
    delivery_id = (
        _SAFE_ID.sub("-", execution) if execution else hashlib.sha256(content).hexdigest()[:16]
    )
    manifest_file = (PurePosixPath(manifest_key).name, content)
    return _Planned(source, period, delivery_id, execution, tuple(files), manifest_file, {})


def _manifest_key(source: ExportSource, period: str) -> str | None:
    prefix = f"metadata/BILLING_PERIOD={period}/"
    candidates = [f.key for f in source.list_files(prefix) if f.key.endswith(_MANIFEST_SUFFIX)]
    top = [key for key in candidates if "/" not in key[len(prefix) :]]
    if len(top) > 1:
        raise InputError(
            f"{source.describe(prefix)}: several manifests ({', '.join(top)}); an export folder "
            "holds one export, so move the other exports to folders of their own"
        )
    if top:
        return top[0]
    nested = _newest_create_new(candidates, prefix)
    return nested[0] if nested else None


def _plan_without_manifest(source: ExportSource, period: str, data_prefix: str) -> _Planned | None:
    listed = source.list_files(data_prefix)
    chosen = _newest_create_new([f.key for f in listed], data_prefix)
    keys = set(chosen) if chosen else {f.key for f in listed}
    files = [f for f in listed if f.key in keys and not PurePosixPath(f.key).name.startswith(".")]
    parquet = [f for f in files if f.key.endswith(".parquet")]
    folder = source.describe(data_prefix)
    if not parquet:
        if files:
            raise InputError(
                f"{source.describe(files[0].key)}: not a Parquet file (no .parquet files in "
                f"{folder}); {PARQUET_HINT}"
            )
        return None
    if chosen:
        folder = source.describe(str(PurePosixPath(chosen[0]).parent))
    log.warning(
        "%s: no manifest under metadata/BILLING_PERIOD=%s/; reading its %d Parquet file(s) "
        "without one, so the delivery may be incomplete",
        folder,
        period,
        len(parquet),
    )
    sha256 = {}
    for file in parquet:
        with source.open(file.key) as handle:
            sha256[file.key] = sha256_stream(handle)
    named = [(f.key[len(data_prefix) :], f) for f in parquet]
    listing = sorted([name, f.size, sha256[f.key]] for name, f in named)
    digest = hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]
    return _Planned(source, period, digest, None, tuple(named), None, sha256)


def _newest_create_new(keys: list[str], prefix: str) -> list[str]:
    """The keys inside the newest <timestamp>-<execution-id>/ folder below prefix, if any."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        parts = key[len(prefix) :].split("/")
        if len(parts) > 1 and _CREATE_NEW_DIR.match(parts[0]):
            groups.setdefault(parts[0], []).append(key)
    return groups[max(groups)] if groups else []


def _local_key(entry: str) -> str:
    """Map a listed file (s3://bucket/prefix/<export>/data/... or a key) onto the export root."""
    path = entry.split("://", 1)[1].split("/", 1)[-1] if "://" in entry else entry
    parts = [part for part in path.split("/") if part]
    if ".." in parts:
        raise InputError(f"{entry}: a manifest entry must not contain '..'")
    # The prefix may itself contain a "data" folder: use the one just above BILLING_PERIOD=.
    starts = [i for i, part in enumerate(parts[:-1]) if part == "data"]
    partitioned = [i for i in starts if parts[i + 1].startswith("BILLING_PERIOD=")]
    start = (partitioned or starts or [0])[-1]
    return "/".join(parts[start:])


def _validate(source: ExportSource, file: SourceFile, period: str, config: Config) -> None:
    """Check one data file from its Parquet footer only: format, columns, types, period."""
    where = source.describe(file.key)
    with source.open(file.key) as handle:
        check_magic(handle, file.size, where)
        try:
            parquet = pq.ParquetFile(handle)
            schema = parquet.schema_arrow
        except (pa.ArrowException, OSError) as error:
            raise InputError(
                f"{where}: not a Parquet file (its footer cannot be read: {error}); "
                f"{PARQUET_HINT}; if it is Parquet, the copy is damaged, so copy it again"
            ) from error
        check_columns(schema, where, config)
        check_period(parquet.metadata, where, period)


def _copy(store: RawStore, planned: _Planned) -> None:
    source = planned.source
    staged = [
        StagedFile(
            name=name,
            source=source.describe(file.key),
            copy_to=lambda target, key=file.key: source.copy_to(key, target),
            expected_sha256=planned.sha256.get(file.key),
        )
        for name, file in planned.files
    ]
    record = {"source_location": source.location, "execution_id": planned.execution_id}
    store.write_delivery(
        source.export_name, planned.period, planned.delivery_id, staged, record, planned.manifest
    )
