"""raw/: one immutable folder per delivery, and a current.json naming each period's current one."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import pyarrow.parquet as pq

from pipeline.common.errors import InputError

log = logging.getLogger("runcost")

DELIVERY_FILE = "delivery.json"
CURRENT_FILE = "current.json"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 24 * 3600
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Delivery:
    """One delivery of one billing period of one export, as stored in raw/."""

    provider: str
    export: str
    billing_period: str
    delivery_id: str
    folder: Path
    files: tuple[Path, ...]  # absolute paths of the data files in raw/
    new: bool  # ingested by this call


def sha256_stream(handle: BinaryIO) -> str:
    """The sha256 of a binary stream, read in chunks (never whole into memory)."""
    digest = hashlib.sha256()
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """The sha256 of a file."""
    with path.open("rb") as handle:
        return sha256_stream(handle)


def write_json_atomic(path: Path, body: dict[str, Any]) -> None:
    """Write JSON beside ``path``, then rename it into place: readers see old or new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=_TMP_PREFIX, suffix=".json")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


class RawStore:
    """The deliveries of one provider under ``<warehouse>/raw/<provider>/``."""

    def __init__(self, raw_root: Path, provider: str) -> None:
        self.provider = provider
        self.root = raw_root / provider

    def period_folder(self, export: str, period: str) -> Path:
        return self.root / export / f"BILLING_PERIOD={period}"

    def delivery_folder(self, export: str, period: str, delivery_id: str) -> Path:
        return self.period_folder(export, period) / f"delivery={delivery_id}"

    def has_delivery(self, export: str, period: str, delivery_id: str) -> bool:
        return (self.delivery_folder(export, period, delivery_id) / DELIVERY_FILE).is_file()

    def verify(self, export: str, period: str, delivery_id: str, *, full: bool = True) -> None:
        """Check a stored delivery against its delivery.json (sha256 when ``full``, else sizes)."""
        folder = self.delivery_folder(export, period, delivery_id)
        record = self._record(folder)
        for entry in [*record["files"], *(record.get("converted") or [])]:
            path = folder / entry["name"]
            if not path.is_file():
                problem = "is missing"
            elif path.stat().st_size != entry["size"]:
                problem = "has changed size"
            elif full and sha256_file(path) != entry["sha256"]:
                problem = "no longer matches its recorded sha256"
            else:
                continue
            raise InputError(
                f"{path}: raw/ was modified: the file {problem} (see {folder / DELIVERY_FILE}); "
                "deliveries in raw/ are immutable. To recover, restore the folder from a backup, "
                f"or delete {folder} and run again with the export folder that still holds "
                "this delivery, so it is copied afresh"
            )

    def commit(
        self,
        export: str,
        period: str,
        delivery_id: str,
        staged: Path,
        files: list[dict[str, Any]],
        converted: list[dict[str, Any]],
        record: dict[str, Any],
    ) -> Path:
        """Record a fully staged delivery folder in delivery.json, then rename it into place.

        ``files`` hold name (relative to ``staged``), source, etag, and the file's sha256 when the
        caller computed it already; ``converted`` hold name and the original it came from. Sizes,
        row counts and the sha256 sums not given are computed here.
        """
        final = self.delivery_folder(export, period, delivery_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        self._drop_stale_temp(final.parent)
        body = {
            **record,
            "provider": self.provider,
            "export": export,
            "billing_period": period,
            "delivery_id": delivery_id,
            "ingested_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": [_entry(staged, item) for item in files],
            "converted": [_entry(staged, item) for item in converted],
        }
        write_json_atomic(staged / DELIVERY_FILE, body)
        try:
            os.replace(staged, final)
        except OSError:
            if not (final / DELIVERY_FILE).is_file():
                raise
            shutil.rmtree(staged, ignore_errors=True)  # another run stored it first
        return final

    def find_by_manifest(
        self, export: str, period: str, key: str, etag: str | None, size: int
    ) -> str | None:
        """The stored delivery whose manifest had this key, ETag and size (no download needed)."""
        if etag is None:
            return None
        for folder in sorted(self.period_folder(export, period).glob("delivery=*")):
            if not (folder / DELIVERY_FILE).is_file():
                continue
            stored = self._record(folder).get("manifest_source") or {}
            if (stored.get("key"), stored.get("etag"), stored.get("size")) == (key, etag, size):
                return folder.name.split("=", 1)[1]
        return None

    def delivered_at(self, export: str, period: str, delivery_id: str) -> datetime | None:
        """When AWS delivered a stored delivery (manifest time or create-new folder time)."""
        folder = self.delivery_folder(export, period, delivery_id)
        if not (folder / DELIVERY_FILE).is_file():
            return None
        value = self._record(folder).get("delivered_at")
        return datetime.fromisoformat(value) if isinstance(value, str) else None

    def prune(self, retention_days: int, now: datetime | None = None) -> list[Path]:
        """Delete superseded deliveries superseded more than retention_days ago; never current."""
        cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
        removed = []
        for export, period in self.periods():
            current = self.current_id(export, period)
            if current is None:
                continue
            path = self.period_folder(export, period) / CURRENT_FILE
            superseded = _read_json(path).get("superseded", {})
            for folder in sorted(self.period_folder(export, period).glob("delivery=*")):
                delivery_id = folder.name.split("=", 1)[1]
                if delivery_id == current or not folder.is_dir():
                    continue
                since = superseded.get(delivery_id)
                if since is None and (folder / DELIVERY_FILE).is_file():
                    since = self._record(folder).get("ingested_at")
                if since is not None and datetime.fromisoformat(since) <= cutoff:
                    shutil.rmtree(folder)
                    removed.append(folder)
                    log.info("%s: superseded on %s; removed (raw_retention_days)", folder, since)
        return removed

    def current_id(self, export: str, period: str) -> str | None:
        path = self.period_folder(export, period) / CURRENT_FILE
        if not path.is_file():
            return None
        return str(_read_json(path)["delivery_id"])

    def set_current(self, export: str, period: str, delivery_id: str) -> None:
        """Make a stored delivery the one every query reads for this (export, period)."""
        previous = self.current_id(export, period)
        if previous == delivery_id:
            return
        path = self.period_folder(export, period) / CURRENT_FILE
        now = datetime.now(UTC).isoformat(timespec="seconds")
        superseded = dict(_read_json(path).get("superseded", {})) if path.is_file() else {}
        if previous is not None:
            superseded[previous] = now
        superseded.pop(delivery_id, None)
        body = {
            "provider": self.provider,
            "export": export,
            "billing_period": period,
            "delivery_id": delivery_id,
            "replaces": previous,
            "updated_at": now,
            "superseded": superseded,
        }
        write_json_atomic(path, body)

    def periods(self) -> list[tuple[str, str]]:
        """Every (export, billing period) that has a folder in raw/, sorted."""
        found = []
        if self.root.is_dir():
            for export_dir in sorted(self.root.iterdir()):
                if not export_dir.is_dir() or export_dir.name.startswith("."):
                    continue
                for period_dir in sorted(export_dir.glob("BILLING_PERIOD=*")):
                    if period_dir.is_dir():
                        found.append((export_dir.name, period_dir.name.split("=", 1)[1]))
        return found

    def current_delivery_id(self, export: str, period: str) -> str | None:
        """The current delivery id; without current.json (a crash), the latest one stored."""
        current = self.current_id(export, period)
        if current is not None:
            return current
        stored = [
            (self._record(folder).get("ingested_at", ""), folder.name.split("=", 1)[1])
            for folder in self.period_folder(export, period).glob("delivery=*")
            if (folder / DELIVERY_FILE).is_file()
        ]
        if not stored:
            return None
        latest = max(stored)[1]
        log.warning(
            "%s has no %s; using the latest stored delivery %s",
            self.period_folder(export, period),
            CURRENT_FILE,
            latest,
        )
        return latest

    def load(self, export: str, period: str, delivery_id: str, *, new: bool = False) -> Delivery:
        """The stored delivery as a Delivery (raises InputError if it is missing)."""
        folder = self.delivery_folder(export, period, delivery_id)
        record = self._record(folder)
        return Delivery(
            provider=self.provider,
            export=export,
            billing_period=period,
            delivery_id=delivery_id,
            folder=folder,
            files=tuple(
                folder / entry["name"] for entry in (record.get("converted") or record["files"])
            ),
            new=new,
        )

    def _record(self, folder: Path) -> dict[str, Any]:
        path = folder / DELIVERY_FILE
        if not path.is_file():
            raise InputError(
                f"{folder}: raw/ was modified: the delivery (or its {DELIVERY_FILE}) is missing. "
                f"To recover, restore it from a backup, or delete {folder.parent / CURRENT_FILE} "
                "and run again with the export folder that still holds the period"
            )
        return _read_json(path)

    @staticmethod
    def _drop_stale_temp(folder: Path) -> None:
        # Leftovers of a crashed run; young ones may belong to a run still copying.
        cutoff = time.time() - _STALE_TMP_SECONDS
        for path in folder.glob(f"{_TMP_PREFIX}*"):
            if path.stat().st_mtime < cutoff:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def _entry(folder: Path, item: dict[str, Any]) -> dict[str, Any]:
    path = folder / safe_name(item["name"])
    rows = pq.read_metadata(path).num_rows if path.suffix == ".parquet" else None
    given = {key: value for key, value in item.items() if key != "sha256"}
    digest = item.get("sha256") or sha256_file(path)
    return {**given, "size": path.stat().st_size, "sha256": digest, "rows": rows}


def safe_name(name: str) -> str:
    """A relative posix name with no '..', '.' or empty parts (never lands outside its folder)."""
    parts = PurePosixPath(name).parts
    if not parts or name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise InputError(f"{name}: not a safe relative file name for raw/")
    return name


def _read_json(path: Path) -> dict[str, Any]:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(
            f"{path}: raw/ was modified: cannot read it ({error}); restore it from a backup"
        ) from error
    if not isinstance(body, dict):
        raise InputError(f"{path}: raw/ was modified: expected a JSON object")
    return body
