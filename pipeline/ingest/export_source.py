"""Where an export is read from: the ExportSource protocol and the local-folder source."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pipeline.warehouse.raw_store import sha256_stream


@dataclass(frozen=True)
class SourceFile:
    """A file of an export: its key relative to the export root (posix), size, ETag, mtime."""

    key: str
    size: int
    etag: str | None = None
    modified: datetime | None = None


class ExportSource(Protocol):
    """Read access to one export root: a local folder or an S3 prefix.

    Keys are posix paths relative to the root. ``list_files(prefix)`` returns every file below a
    folder key (ending in '/'), sorted; ``read_bytes`` reads a small file (a manifest) whole;
    ``download`` streams a file to a local path; ``fingerprint`` identifies a file's content
    (sha256 of a local file, the ETag of an S3 object); ``describe`` gives a key's full path or URI.
    """

    location: str
    export_name: str

    def list_files(self, prefix: str) -> list[SourceFile]: ...
    def stat(self, key: str) -> SourceFile | None: ...
    def read_bytes(self, key: str) -> bytes: ...
    def download(self, file: SourceFile, target: Path) -> None: ...
    def fingerprint(self, file: SourceFile) -> str: ...
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
            _stat(path, path.relative_to(self.root).as_posix())
            for path in sorted(base.rglob("*"))
            if path.is_file()
        ]

    def stat(self, key: str) -> SourceFile | None:
        path = self.root / key
        return _stat(path, key) if path.is_file() else None

    def read_bytes(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def download(self, file: SourceFile, target: Path) -> None:
        shutil.copyfile(self.root / file.key, target)

    def fingerprint(self, file: SourceFile) -> str:
        with (self.root / file.key).open("rb") as handle:
            return sha256_stream(handle)

    def describe(self, key: str) -> str:
        return str(self.root / key)


def _stat(path: Path, key: str) -> SourceFile:
    info = path.stat()
    return SourceFile(key, info.st_size, None, datetime.fromtimestamp(info.st_mtime, UTC))
