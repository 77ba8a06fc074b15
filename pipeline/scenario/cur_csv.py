"""The scenario's CUR 2.0 export rewritten as gzip CSV (Format=TEXT_OR_CSV, Compression=GZIP)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.scenario import EXPORT_DIR, write_scenario

_BATCH_ROWS = 10_000


def csv_cell(value: Any, kind: pa.DataType) -> str:
    """One value as the CSV export writes it: maps as a JSON object, times as ISO 8601 UTC."""
    if value is None:
        return ""
    if pa.types.is_map(kind):
        return json.dumps(dict(value), separators=(",", ":"), sort_keys=True)
    if pa.types.is_timestamp(kind):
        moment: datetime = value.astimezone(UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if pa.types.is_floating(kind):
        return repr(float(value))  # shortest text that reads back as the same double
    return str(value)


def parquet_to_csv_gz(source: Path, target: Path) -> None:
    """Write one Parquet data file as a gzip CSV file with the same header and values."""
    parquet = pq.ParquetFile(source)
    types = [field.type for field in parquet.schema_arrow]
    with (
        target.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        open_text(zipped) as handle,
    ):
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(parquet.schema_arrow.names)
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS):
            columns = [column.to_pylist() for column in batch.columns]
            for row in zip(*columns, strict=True):
                writer.writerow(csv_cell(v, t) for v, t in zip(row, types, strict=True))


def open_text(binary: gzip.GzipFile) -> io.TextIOWrapper:
    """A text view of a binary stream, for the csv module."""
    return io.TextIOWrapper(binary, encoding="utf-8", newline="")


def write_csv_export(export_root: Path) -> list[Path]:
    """Turn every Parquet delivery under export_root into gzip CSV; manifests point at .csv.gz."""
    written = []
    for manifest in sorted((export_root / "metadata").rglob("*-Manifest.json")):
        body = json.loads(manifest.read_text(encoding="utf-8"))
        listed = []
        for uri in body["dataFiles"]:
            key = uri[uri.index("/data/") + 1 :]
            source = export_root / key
            target = source.with_name(source.name.split(".", 1)[0] + ".csv.gz")
            parquet_to_csv_gz(source, target)
            source.unlink()
            listed.append(uri[: uri.rindex("/") + 1] + target.name)
            written.append(target)
        body["dataFiles"] = listed
        manifest.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return written


def write_csv_scenario(out_dir: Path, seed: int = 7) -> Path:
    """The demo world with its export as gzip CSV; returns its runcost.toml."""
    config = write_scenario(out_dir, seed)
    write_csv_export(Path(out_dir) / EXPORT_DIR)
    return config
