"""GCP billing export files (NDJSON or Parquet extracts): check, split by day, store in raw/gcp/."""

from __future__ import annotations

import glob
import hashlib
import logging
import re
import secrets
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.common.duck import connect
from pipeline.common.errors import InputError
from pipeline.config.loader import Config
from pipeline.ingest.gcp_ndjson import FIX, read_ndjson
from pipeline.ingest.gcp_values import check_table, is_final
from pipeline.ingest.precision import note_rounding
from pipeline.ingest.redelivery import check_shrink
from pipeline.ingest.value_rules import AFRESH, check_distinct_files
from pipeline.warehouse.raw_store import Delivery, RawStore, sha256_file
from schemas import gcp_billing

log = logging.getLogger("runcost")

PROVIDER = "gcp"
DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".parquet")
# A column naming each row's partition day, as a query-based extract can add it; without one the
# rows are grouped by the UTC day of export_time.
PARTITION_COLUMNS = ("partition_date", "_PARTITIONDATE", "_PARTITIONTIME")
_STAGING = ".ingest-staging"
_EXPORT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class _Partition:
    """The rows of one partition day of one export, one table per source file."""

    export: str
    day: str
    parts: list[tuple[Path, pa.Table]]


def ingest_gcp_files(config: Config, allow_shrink: Iterable[str] = ()) -> list[Delivery]:
    """Store each partition day of every gcp.files source in raw/gcp/; return the current ones.

    ``allow_shrink``: partition days (YYYY-MM-DD, or EXPORT/YYYY-MM-DD) whose files may hold
    far fewer rows than the stored day this once (redelivery.py).
    """
    if not config.gcp.files:
        return []
    store = RawStore(config.warehouse / "raw", PROVIDER)
    sources = _sources(config.gcp.files)
    staging = config.warehouse / _STAGING / secrets.token_hex(4)
    try:
        # read and check every file first: an error leaves raw/ exactly as it was
        partitions = [item for export, paths in sources.items() for item in _read(export, paths)]
        return _store(store, partitions, staging, list(sources), config, tuple(allow_shrink))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if staging.parent.is_dir() and not any(staging.parent.iterdir()):
            staging.parent.rmdir()


def _sources(patterns: tuple[str, ...]) -> dict[str, list[Path]]:
    """export name -> data files, one export per gcp.files entry (named after its folder)."""
    sources: dict[str, list[Path]] = {}
    origin: dict[str, str] = {}
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            matches = sorted(item for item in path.iterdir() if item.suffix in DATA_SUFFIXES)
            folder = path
        else:
            matches = sorted(Path(item) for item in glob.glob(pattern) if Path(item).is_file())
            folder = Path(pattern).parent
            while glob.has_magic(str(folder)):
                folder = folder.parent
        if not matches:
            raise InputError(
                f"{pattern}: no export files match; gcp.files lists NDJSON (.json) or Parquet "
                "files written by a BigQuery extract job, a folder holding them, or a glob"
            )
        export = _EXPORT_NAME.sub("-", folder.name).strip("-") or "gcp-files"
        if export in sources:
            raise InputError(
                f"{pattern}: has the same source name {export!r} as {origin[export]}; both "
                f"would be stored in raw/gcp/{export}/, so keep each export in its own folder"
            )
        origin[export] = pattern
        sources[export] = matches
    return sources


def _read(export: str, paths: list[Path]) -> list[_Partition]:
    by_day: dict[str, list[tuple[Path, pa.Table]]] = defaultdict(list)
    months: dict[str, dict[str, str]] = defaultdict(dict)
    check_distinct_files(
        [(path, str(path)) for path in paths],
        f"an export never holds one file twice (gcp.files source {export})",
        "remove the copy from the folder",
    )
    for path in paths:
        if path.suffix == ".parquet":
            table, lines = _read_parquet(path), None
        else:
            table, lines = read_ndjson(path, PARTITION_COLUMNS)
        _check_table(table, path)
        check_table(
            table,
            str(path),
            (lambda index: f"row {index + 1}")
            if lines is None
            else (lambda index, lines=lines: f"row {lines[index]}"),
            FIX,
        )
        _note_rounding(table, path)
        for day, part in _split_by_day(table, path):
            by_day[day].append((path, part))
        _check_months(table, path, export, months[export])
    return [_Partition(export, day, parts) for day, parts in sorted(by_day.items())]


def _check_months(table: pa.Table, path: Path, export: str, months: dict[str, str]) -> None:
    """One invoice month has one currency (check_table has refused a month not YYYYMM)."""
    invoices = table.column("invoice").to_pylist()
    currencies = table.column("currency").to_pylist()
    for row, (invoice, currency) in enumerate(zip(invoices, currencies, strict=True), start=1):
        month = invoice["month"]
        seen = months.setdefault(month, currency)
        if currency != seen:
            raise InputError(
                f"GCP export {export} ({path}, row {row}): invoice month {month} is billed in "
                f"several currencies ({', '.join(sorted({str(seen), str(currency)}))}); an "
                "invoice month has one currency, so the files mix billing accounts: keep each "
                "billing account's export in its own gcp.files entry"
            )


def _read_parquet(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        detail = " ".join(str(error).split())
        raise InputError(
            f"{path}: not a readable Parquet file ({detail}), so the copy is damaged or cut "
            "short, or not Parquet: extract the table again with destination_format PARQUET "
            f"(or copy the file again) and run again; {AFRESH}"
        ) from error


def _check_table(table: pa.Table, path: Path) -> None:
    """The required columns, and the credits column as a list of records."""
    for name, fix in gcp_billing.REQUIRED.items():
        if name not in table.column_names:
            raise InputError(f"{path}: the required column {name} is missing; {fix}")
    invoice = table.schema.field("invoice").type
    if not pa.types.is_struct(invoice) or invoice.get_field_index("month") < 0:
        raise InputError(
            f"{path}: column invoice is {invoice}, not a record with a month field; extract the "
            "export table itself, whose invoice.month names each row's invoice month"
        )
    credits = table.schema.field("credits").type
    if not pa.types.is_list(credits) or not pa.types.is_struct(credits.value_type):
        raise InputError(
            f"{path}: column credits is {credits}, not a list of records (REPEATED RECORD); "
            "extract the export table itself, whose credits are nested, not a flattened copy"
        )
    if not table.num_rows:
        log.warning("%s: no rows", path)


def _note_rounding(table: pa.Table, path: Path) -> None:
    """Log money (cost, cost_at_list, credits) with more than 10 decimal places."""
    con = connect()
    try:
        con.register("export_rows", table)
        money = [name for name in ("cost", "cost_at_list") if name in table.column_names]
        parts = [f"select {name} as amount from export_rows" for name in money]
        parts.append(
            "select unnest(list_transform(credits, lambda c: c.amount)) as amount from export_rows"
        )
        note_rounding(con, "(" + " union all ".join(parts) + ")", ["amount"], str(path))
    finally:
        con.close()


def _split_by_day(table: pa.Table, path: Path) -> list[tuple[str, pa.Table]]:
    """(partition day, rows) pairs, without the partition column (raw/ keeps export columns)."""
    present = [name for name in PARTITION_COLUMNS if name in table.column_names]
    if present:
        values = table.column(present[0]).to_pylist()
        days = pa.array([_day(value, f"{path}: {present[0]}") for value in values], pa.string())
    elif "export_time" in table.column_names:
        # the UTC day of each export_time, computed over the column (a row at a time in Python
        # cost 13 CPU s per 1M rows)
        exported = pc.cast(table.column("export_time"), pa.timestamp("us", tz="UTC"))
        days = pc.strftime(exported, format="%Y-%m-%d")
    else:
        raise InputError(
            f"{path}: the column export_time is missing, and there is no partition_date column; "
            "one of them says which partition day a row belongs to"
        )
    if days.null_count:
        row = pc.index(pc.is_null(days), True).as_py() + 1
        raise InputError(f"{path}: row {row}: no partition day (export_time is empty)")
    data = table.drop_columns(present)
    return [
        (day, data.filter(pc.equal(days, day)))  # a filter keeps the file's row order
        for day in sorted(pc.unique(days).to_pylist())
    ]


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


def _store(
    store: RawStore,
    partitions: list[_Partition],
    staging: Path,
    exports: list[str],
    config: Config,
    allow_shrink: tuple[str, ...],
) -> list[Delivery]:
    staged = []
    for number, partition in enumerate(partitions):
        folder = staging / f"{number:05d}"
        folder.mkdir(parents=True)
        files = []
        for index, (source, table) in enumerate(partition.parts):
            name = f"part-{index:03d}.parquet"
            pq.write_table(table, folder / name)
            files.append({"name": name, "source": str(source), "etag": None})
        digest = "".join(sha256_file(folder / item["name"]) for item in files)
        delivery_id = sha256_text(partition.day + digest)[:16]
        staged.append((partition, folder, files, delivery_id))
    now = datetime.now(UTC)
    for partition, folder, files, delivery_id in staged:  # every check before the first commit
        check_shrink(
            store, partition.export, partition.day, delivery_id,
            [folder / item["name"] for item in files], f"gcp.files source {partition.export}",
            allow_shrink, lambda stored: is_final(stored, now, config.periods.gcp_settle_days),
            "Google", "partition day",
        )  # fmt: skip
    new = set()
    for partition, folder, files, delivery_id in staged:
        key = (partition.export, partition.day)
        if store.has_delivery(*key, delivery_id):
            store.verify(*key, delivery_id)
        else:
            record = {"source_location": "gcp.files", "delivered_at": None, "manifest": None}
            store.commit(*key, delivery_id, folder, files, [], record)
            new.add(key)
        store.set_current(*key, delivery_id)
    store.prune(config.raw_retention_days)
    current = []
    for export, day in store.periods():
        if export not in exports:
            continue  # another GCP source's export (the BigQuery ingester's tables)
        delivery_id = store.current_delivery_id(export, day)
        if delivery_id is not None:
            current.append(store.load(export, day, delivery_id, new=(export, day) in new))
    return current


def sha256_text(text: str) -> str:
    """The sha256 hex digest of a text."""
    return hashlib.sha256(text.encode()).hexdigest()
