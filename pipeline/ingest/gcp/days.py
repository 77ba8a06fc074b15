"""GCP export rows split by partition day into staged Parquet parts, a batch at a time.

A file is never held whole: its rows are read in batches of BATCH, each day's rows are kept in
file order and written to that day's part once BUFFERED rows wait in all (the day holding most
first), so memory stays bounded whatever the file's size and order of days.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.common.errors import InputError

# A column naming each row's partition day, as a query-based extract can add it; without one the
# rows are grouped by the UTC day of export_time.
PARTITION_COLUMNS = ("partition_date", "_PARTITIONDATE", "_PARTITIONTIME")
BATCH = 65_536
BUFFERED = 262_144


class DayParts:
    """The staged part files of every (export, partition day), filled file by file."""

    def __init__(self, staging: Path) -> None:
        self.staging = staging
        # (export, day) -> (source file, staged part), in the order the files are read
        self.parts: dict[tuple[str, str], list[tuple[Path, Path]]] = defaultdict(list)

    def split(
        self, export: str, source: Path, batches: Iterable[pa.RecordBatch], names: list[str]
    ) -> InputError | None:
        """Write the rows of ``source`` (its columns ``names``) to one part per day it holds,
        without the partition column (raw/ keeps export columns); a row without a partition day
        is not written, and the first one is returned, to be raised after the value checks."""
        present = [name for name in PARTITION_COLUMNS if name in names]
        if not present and "export_time" not in names:
            return InputError(
                f"{source}: the column export_time is missing, and there is no partition_date "
                "column; one of them says which partition day a row belongs to"
            )
        writers: dict[str, pq.ParquetWriter] = {}
        pending: dict[str, list[pa.RecordBatch]] = defaultdict(list)
        problem, offset = None, 0
        try:
            for batch in batches:
                days, found = _days(batch, present, source, offset)
                problem = problem or found
                data = batch.select([name for name in names if name not in present])
                for day in sorted(pc.unique(days).drop_null().to_pylist()):
                    pending[day].append(data.filter(pc.equal(days, day)))  # keeps file order
                offset += batch.num_rows
                while sum(part.num_rows for parts in pending.values() for part in parts) > BUFFERED:
                    largest = max(pending, key=lambda day: sum(p.num_rows for p in pending[day]))
                    self._flush(export, source, largest, pending.pop(largest), writers)
            for day in sorted(pending):
                self._flush(export, source, day, pending[day], writers)
        finally:
            for writer in writers.values():
                writer.close()
        return problem

    def _flush(
        self,
        export: str,
        source: Path,
        day: str,
        batches: list[pa.RecordBatch],
        writers: dict[str, pq.ParquetWriter],
    ) -> None:
        table = pa.Table.from_batches(batches)
        if day not in writers:
            parts = self.parts[(export, day)]
            folder = self.staging / export / day
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"part-{len(parts):03d}.parquet"
            parts.append((source, path))
            writers[day] = pq.ParquetWriter(path, table.schema)
        writers[day].write_table(table)


def _days(
    batch: pa.RecordBatch, present: list[str], source: Path, offset: int
) -> tuple[pa.Array, InputError | None]:
    """Each row's partition day (YYYY-MM-DD, NULL where it has none), and the first such row."""
    if present:
        where = f"{source}: {present[0]}"
        days = []
        for value in batch.column(present[0]).to_pylist():
            try:
                days.append(_day(value, where))
            except InputError as error:
                return pa.nulls(batch.num_rows, pa.string()), error
        return pa.array(days, pa.string()), None
    # the UTC day of each export_time, computed over the column (a row at a time in Python
    # cost 13 CPU s per 1M rows; strftime 0.92 against 0.07 through a date)
    exported = pc.cast(batch.column("export_time"), pa.timestamp("us", tz="UTC"))
    days = pc.cast(pc.cast(exported, pa.date32()), pa.string())
    if not days.null_count:
        return days, None
    row = offset + pc.index(pc.is_null(days), True).as_py() + 1
    return days, InputError(f"{source}: row {row}: no partition day (export_time is empty)")


def _day(value: Any, where: str) -> str:
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo else value
        return moment.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)[:10]
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as error:
        raise InputError(f"{where}: {value!r} is not a date (YYYY-MM-DD)") from error
