"""GCP billing export files (NDJSON or Parquet extracts): check, split by day, store in raw/gcp/."""

from __future__ import annotations

import glob
import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import connect, literal
from pipeline.common.errors import InputError
from pipeline.ingest.gcp.days import BATCH, PARTITION_COLUMNS, DayParts
from pipeline.ingest.gcp.ndjson import FIX, export_schema
from pipeline.ingest.gcp.ndjson_blocks import write_typed
from pipeline.ingest.gcp.settings import GcpSettings
from pipeline.ingest.gcp.values import check_rows, is_final
from pipeline.ingest.precision import note_rounding
from pipeline.ingest.provider import IngestContext, scratch_folder
from pipeline.ingest.redelivery import check_shrink
from pipeline.ingest.value_rules import AFRESH, check_distinct_files
from pipeline.warehouse.raw_store import Delivery, RawStore, sha256_file
from schemas import gcp_billing

log = logging.getLogger("runcost")

PROVIDER = "gcp"
DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".parquet")


@dataclass(frozen=True)
class _Partition:
    """One partition day of one export."""

    export: str
    day: str


_EXPORT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def ingest_gcp_files(
    settings: GcpSettings, context: IngestContext, allow_shrink: Iterable[str] = ()
) -> list[Delivery]:
    """Store each partition day of every gcp.files source in raw/gcp/; return the current ones.

    ``allow_shrink``: partition days (YYYY-MM-DD, or EXPORT/YYYY-MM-DD) whose files may hold
    far fewer rows than the stored day this once (redelivery.py).
    """
    if not settings.files:
        return []
    store = RawStore(context.warehouse / "raw", PROVIDER)
    sources = _sources(settings.files)
    with scratch_folder(context.warehouse) as staging:
        # read and check every file first: an error leaves raw/ exactly as it was
        staging.mkdir(parents=True)
        parts = DayParts(staging / "parts")
        for export, paths in sources.items():
            _read(export, paths, parts, staging, context)
        return _store(store, parts, list(sources), context, tuple(allow_shrink))


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


def _read(
    export: str, paths: list[Path], parts: DayParts, staging: Path, context: IngestContext
) -> None:
    """Check each file of one export and split its rows by partition day into ``parts``."""
    months: dict[str, str] = {}
    # files of different sizes differ: only those sharing a size are hashed (sha256 takes about
    # 1.1 CPU s per 1.2 GB extract)
    sizes = Counter(path.stat().st_size for path in paths)
    check_distinct_files(
        [(path, str(path)) for path in paths if sizes[path.stat().st_size] > 1],
        f"an export never holds one file twice (gcp.files source {export})",
        "remove the copy from the folder",
    )
    for path in paths:
        # the split's outcome when the NDJSON reader split the rows by day as it typed them
        split: list[InputError | None] = []
        if path.suffix == ".parquet":
            typed, names, lines = path, None, None
        else:
            typed = staging / "typed.parquet"
            names, lines = write_typed(
                path,
                PARTITION_COLUMNS,
                typed,
                lambda batches, columns, path=path, split=split: split.append(
                    parts.split(export, path, batches, columns)
                ),
                lambda path=path, split=split: (split.clear(), parts.discard(export, path)),
            )
        try:
            file = _open_parquet(typed, path)
            # NDJSON rows are stored as the export's Arrow types (Parquet reads lists back with
            # other field names); a Parquet extract's as its file has them
            schema = file.schema_arrow if names is None else export_schema(names)
            _check_table(schema, file.metadata.num_rows, path)
            if split:
                problem = split[0]
            else:
                batches = _batches(file, schema, path, cast=names is not None)
                problem = parts.split(export, path, batches, schema.names)
            con = connect(settings=context.duckdb_limits(staging / ".spill"))
            try:
                source = f"read_parquet({literal(typed)}, file_row_number = true)"
                check_rows(
                    con,
                    source,
                    schema,
                    str(path),
                    (lambda index: f"row {index + 1}")
                    if lines is None
                    else (lambda index, lines=lines: f"row {lines[index]}"),
                    FIX,
                )
                if problem is not None:
                    raise problem
                _note_rounding(con, source, schema.names, path)
                _check_months(con, source, path, export, months)
            finally:
                con.close()
        finally:
            if typed != path:
                typed.unlink(missing_ok=True)


def _check_months(
    con: duckdb.DuckDBPyConnection, source: str, path: Path, export: str, months: dict[str, str]
) -> None:
    """One invoice month has one currency (check_rows has refused a month not YYYYMM)."""
    found = con.execute(
        "select invoice.month, currency, min(file_row_number) as first_row "
        f"from {source} group by all order by first_row"
    ).fetchall()
    seen = dict(months)
    for month, currency, _first in found:
        seen.setdefault(month, currency)
    mixed = [
        (first, month, currency) for month, currency, first in found if currency != seen[month]
    ]
    if mixed:
        first, month, currency = min(mixed)
        raise InputError(
            f"GCP export {export} ({path}, row {first + 1}): invoice month {month} is billed in "
            f"several currencies ({', '.join(sorted({str(seen[month]), str(currency)}))}); an "
            "invoice month has one currency, so the files mix billing accounts: keep each "
            "billing account's export in its own gcp.files entry"
        )
    months.update(seen)


def _open_parquet(typed: Path, path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(typed)
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, error) from error


def _batches(
    file: pq.ParquetFile, schema: pa.Schema, path: Path, cast: bool
) -> Iterator[pa.RecordBatch]:
    """The file's rows in batches (of ``schema`` exactly, list field names too, when ``cast``);
    a damaged page is the file's error, named."""
    # one thread: decoding the columns on every thread costs more CPU (1.0-1.4 s per 1M rows
    # against 0.75-0.9)
    batches = file.iter_batches(batch_size=BATCH, columns=schema.names, use_threads=False)
    while True:
        try:
            batch = next(batches)
            yield batch.cast(schema) if cast else batch
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as error:
            raise _unreadable(path, error) from error


def _unreadable(path: Path, error: Exception) -> InputError:
    detail = " ".join(str(error).split())
    return InputError(
        f"{path}: not a readable Parquet file ({detail}), so the copy is damaged or cut "
        "short, or not Parquet: extract the table again with destination_format PARQUET "
        f"(or copy the file again) and run again; {AFRESH}"
    )


def _check_table(schema: pa.Schema, rows: int, path: Path) -> None:
    """The required columns, and the credits column as a list of records."""
    for name, fix in gcp_billing.REQUIRED.items():
        if name not in schema.names:
            raise InputError(f"{path}: the required column {name} is missing; {fix}")
    invoice = schema.field("invoice").type
    if not pa.types.is_struct(invoice) or invoice.get_field_index("month") < 0:
        raise InputError(
            f"{path}: column invoice is {invoice}, not a record with a month field; extract the "
            "export table itself, whose invoice.month names each row's invoice month"
        )
    credits = schema.field("credits").type
    if not pa.types.is_list(credits) or not pa.types.is_struct(credits.value_type):
        raise InputError(
            f"{path}: column credits is {credits}, not a list of records (REPEATED RECORD); "
            "extract the export table itself, whose credits are nested, not a flattened copy"
        )
    if not rows:
        log.warning("%s: no rows", path)


def _note_rounding(
    con: duckdb.DuckDBPyConnection, source: str, names: list[str], path: Path
) -> None:
    """Log money (cost, cost_at_list, credits) with more than 10 decimal places."""
    money = [name for name in ("cost", "cost_at_list") if name in names]
    parts = [f"select {name} as amount from {source}" for name in money]
    parts.append(
        f"select unnest(list_transform(credits, lambda c: c.amount)) as amount from {source}"
    )
    note_rounding(con, "(" + " union all ".join(parts) + ")", ["amount"], str(path))


def _store(
    store: RawStore,
    parts: DayParts,
    exports: list[str],
    context: IngestContext,
    allow_shrink: tuple[str, ...],
) -> list[Delivery]:
    staged = []
    for export in exports:
        for key in sorted(key for key in parts.parts if key[0] == export):
            paths = [path for _source, path in parts.parts[key]]
            folder = paths[0].parent
            files = [
                {"name": path.name, "source": str(source), "etag": None}
                for source, path in parts.parts[key]
            ]
            digest = "".join(sha256_file(path) for path in paths)
            delivery_id = sha256_text(key[1] + digest)[:16]
            staged.append((_Partition(*key), folder, files, delivery_id))
    now = datetime.now(UTC)
    for partition, folder, files, delivery_id in staged:  # every check before the first commit
        check_shrink(
            store, partition.export, partition.day, delivery_id,
            [folder / item["name"] for item in files], f"gcp.files source {partition.export}",
            allow_shrink, lambda stored: is_final(stored, now, context.settle_days),
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
    store.prune(context.raw_retention_days)
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
