"""raw/: one immutable folder per delivery, and a current.json naming each period's current one."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import pyarrow.parquet as pq

from pipeline.errors import InputError

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


@dataclass(frozen=True)
class StagedFile:
    """A data file to copy into a new delivery: its name there and how to write its bytes."""

    name: str  # posix path relative to the delivery folder
    source: str  # where it came from (recorded in delivery.json)
    copy_to: Callable[[Path], None]
    expected_sha256: str | None = None  # when known, the copy must match it


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
        for entry in self._record(folder)["files"]:
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

    def write_delivery(
        self,
        export: str,
        period: str,
        delivery_id: str,
        files: list[StagedFile],
        record: dict[str, Any],
        manifest: tuple[str, bytes] | None = None,
    ) -> Path:
        """Copy a delivery into a temp folder beside its place, then rename it into place."""
        final = self.delivery_folder(export, period, delivery_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        self._drop_stale_temp(final.parent)
        temp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{final.name}-", dir=final.parent))
        try:
            entries = [self._copy(temp, staged) for staged in files]
            body = {
                **record,
                "provider": self.provider,
                "export": export,
                "billing_period": period,
                "delivery_id": delivery_id,
                "ingested_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "manifest": None,
                "files": entries,
            }
            if manifest is not None:
                name, content = manifest
                (temp / _safe_name(name)).write_bytes(content)
                body["manifest"] = name
            write_json_atomic(temp / DELIVERY_FILE, body)
            try:
                os.replace(temp, final)
            except OSError:
                if not (final / DELIVERY_FILE).is_file():
                    raise
                shutil.rmtree(temp, ignore_errors=True)  # another run stored it first
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        return final

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
        body = {
            "provider": self.provider,
            "export": export,
            "billing_period": period,
            "delivery_id": delivery_id,
            "replaces": previous,
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        write_json_atomic(self.period_folder(export, period) / CURRENT_FILE, body)

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
            files=tuple(folder / entry["name"] for entry in record["files"]),
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

    def _copy(self, temp: Path, staged: StagedFile) -> dict[str, Any]:
        target = temp / _safe_name(staged.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        staged.copy_to(target)
        digest = sha256_file(target)
        if staged.expected_sha256 is not None and digest != staged.expected_sha256:
            raise InputError(
                f"{staged.source}: the file changed while it was being ingested; "
                "run again once the export has finished writing"
            )
        rows = pq.read_metadata(target).num_rows if target.suffix == ".parquet" else None
        return {
            "name": staged.name,
            "source": staged.source,
            "size": target.stat().st_size,
            "sha256": digest,
            "rows": rows,
        }

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


def _safe_name(name: str) -> str:
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
