"""Whether a published snapshot is whole: its record, and each file there, of its size, readable."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.common.errors import RuncostError

SNAPSHOT_RECORD = "snapshot.json"


@dataclass(frozen=True)
class DamagedFile:
    """A file of a snapshot that is missing or damaged: its path, its table (None for
    snapshot.json), and what is wrong with it."""

    path: str
    table: str | None
    problem: str


class DamagedRecord(RuncostError):
    """snapshot.json is there but not a whole record (a truncated or overwritten file)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; the snapshot's record is damaged. Run `runcost run`, which "
            "publishes a whole snapshot again from raw/ and the telemetry"
        )
        self.path, self.problem = path, problem


def read_record(folder: Path) -> dict | None:
    """snapshot.json of a snapshot folder; None when there is none; DamagedRecord when it is
    not a whole record."""
    path = folder / SNAPSHOT_RECORD
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise DamagedRecord(path, f"cannot be read ({error})") from error
    try:
        body = json.loads(text)
    except ValueError as error:
        raise DamagedRecord(path, f"is not whole JSON (truncated?): {error}") from error
    if not isinstance(body, dict) or not isinstance(body.get("tables"), dict):
        raise DamagedRecord(path, "holds no table list")
    return body


def damaged_files(folder: Path) -> list[DamagedFile]:
    """Every missing or damaged file of the snapshot in ``folder``, cheaply: each file is there
    with the size snapshot.json records (snapshots that record sizes), its Parquet footer reads
    and the footers' row counts add up to each table's rows. The rows themselves are not read."""
    record_path = folder / SNAPSHOT_RECORD
    try:
        record = read_record(folder)
    except DamagedRecord as error:
        found = [DamagedFile(str(record_path), None, error.problem)]
        # no sizes or row counts to compare with: at least every footer must read
        for path in sorted(folder.rglob("*.parquet")):
            problem = _footer_problem(path)[1]
            if problem:
                found.append(DamagedFile(str(path), None, problem))
        return found
    if record is None:
        return [DamagedFile(str(record_path), None, "is missing")]
    found = []
    for name, entry in record["tables"].items():
        found.extend(_table_damage(folder, name, entry))
    return found


def table_files(folder: Path, entry: dict) -> dict[str, int]:
    """The files a table's entry in snapshot.json holds, relative to the snapshot, with sizes."""
    root = folder / entry["path"]
    paths = sorted(root.glob("*/*.parquet")) if root.is_dir() else [root]
    return {path.relative_to(folder).as_posix(): path.stat().st_size for path in paths}


def _table_damage(folder: Path, name: str, entry: dict) -> list[DamagedFile]:
    root = folder / str(entry.get("path", ""))
    recorded = entry.get("files")
    if isinstance(recorded, dict):
        expected = {str(path): int(size) for path, size in recorded.items()}
    elif root.is_file():
        expected = {root.relative_to(folder).as_posix(): -1}  # written before sizes were kept
    elif root.is_dir() and entry.get("partition_by"):
        expected = {path: -1 for path in table_files(folder, entry)}
    else:
        return [DamagedFile(str(root), name, "is missing")]
    found, rows = [], 0
    for relative, size in expected.items():
        path = folder / relative
        if not path.is_file():
            found.append(DamagedFile(str(path), name, "is missing"))
            continue
        actual = path.stat().st_size
        if size >= 0 and actual != size:
            found.append(
                DamagedFile(
                    str(path),
                    name,
                    f"holds {actual} bytes where snapshot.json records {size} (truncated or "
                    "overwritten)",
                )
            )
            continue
        count, problem = _footer_problem(path)
        if problem:
            found.append(DamagedFile(str(path), name, problem))
        rows += count
    if not found and rows != entry.get("rows", rows):
        # a partition file gone from a snapshot that records no file list
        found.append(
            DamagedFile(
                str(root),
                name,
                f"holds {rows} rows where snapshot.json records {entry['rows']} (a file is "
                "missing or was replaced)",
            )
        )
    return found


def _footer_problem(path: Path) -> tuple[int, str | None]:
    """(rows the Parquet footer counts, None), or (0, what is wrong) when it does not read."""
    try:
        return pq.read_metadata(path).num_rows, None
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        return 0, f"is not a readable Parquet file: {error}"
