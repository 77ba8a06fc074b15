"""gzip CSV and legacy CUR files converted to CUR 2.0 Parquet: streamed via DuckDB, in parallel."""

from __future__ import annotations

import csv
import gzip
import io
import os
import shutil
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.ingest.aws.legacy import LegacyHeader, is_legacy_header, map_header
from pipeline.ingest.aws.values import FIX, WHOLE_COPY
from pipeline.ingest.unreadable import GZIP_ERRORS, check_gzip, damaged
from pipeline.ingest.utf8 import check_utf8
from pipeline.ingest.value_rules import AFRESH, refused
from schemas import aws_cur2

BATCH_ROWS = 64_000
MAX_WORKERS = 4
_KINDS = dict(aws_cur2.ALL_COLUMNS)
_CSV = "AWS writes CUR CSV in UTF-8"
_MAP_SQL = {"map_string": "map(varchar, varchar)", "map_double": "map(varchar, double)"}


@dataclass(frozen=True)
class Converted:
    """One converted file: where it is, its rows, and the source columns it did not read."""

    path: Path
    rows: int
    legacy: bool
    extras: tuple[str, ...]


def file_format(path: Path) -> str:
    """'parquet', 'gzip', 'zip' or 'csv', from the first bytes (names can lie)."""
    with path.open("rb") as handle:
        head = handle.read(4)
    if head == b"PAR1":
        return "parquet"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head == b"PK\x03\x04":
        return "zip"
    return "csv"


def read_header(path: Path, kind: str, where: str | None = None) -> list[str]:
    """The column names of a CSV (plain or gzip) or Parquet file, stripped of spaces; ``where``
    names the file in messages (the export's name, not the staging copy's)."""
    if kind == "parquet":
        try:
            return list(pq.read_schema(path).names)
        except (pa.ArrowException, OSError) as error:
            raise unreadable_footer(where or str(path), error) from error
    opener = gzip.open if kind == "gzip" else open
    with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:  # type: ignore[operator]
        try:
            first = next(csv.reader(handle), [])
        except UnicodeDecodeError as error:
            check_utf8(path, kind == "gzip", where or str(path), _CSV)
            raise InputError(f"{where or path}: cannot read the CSV header ({error})") from error
        except GZIP_ERRORS as error:
            raise damaged(where or str(path), error, WHOLE_COPY) from error
        except (OSError, EOFError, csv.Error) as error:
            raise InputError(f"{where or path}: cannot read the CSV header ({error})") from error
    return [name.strip() for name in first]


def unreadable_footer(where: str, error: BaseException) -> InputError:
    """A .parquet file whose footer (its schema) cannot be read."""
    detail = " ".join(str(error).split())
    return InputError(
        f"{where}: not a Parquet file (its footer cannot be read: {detail}); if it is Parquet, "
        f"the copy is damaged or truncated: {WHOLE_COPY} and run again; {AFRESH}"
    )


def needs_conversion(path: Path, where: str | None = None) -> bool:
    """Every CSV, and Parquet that is legacy CUR; CUR 2.0 Parquet is read as delivered."""
    kind = file_format(path)
    return kind != "parquet" or is_legacy_header(read_header(path, kind, where))


def output_schema(path: Path, where: str) -> tuple[pa.Schema, bool, tuple[str, ...]]:
    """The CUR 2.0 schema a file converts to, whether it is legacy, and its ignored columns."""
    kind = file_format(path)
    if kind == "zip":
        return pa.schema([]), True, ()
    names = read_header(path, kind, where)
    plan = _plan(names, where, typed=kind == "parquet")
    return plan.schema, plan.legacy, plan.extras


def convert_all(
    jobs: list[tuple[Path, Path, str]], check: Callable[[pa.Schema, str], None]
) -> list[Converted]:
    """Convert (source, target, where) jobs in a small thread pool; DuckDB releases the GIL."""
    if not jobs:
        return []
    workers = max(1, min(MAX_WORKERS, len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cur-convert") as pool:
        futures = [pool.submit(convert_file, *job, check) for job in jobs]
        return [future.result() for future in futures]


def convert_file(
    source: Path, target: Path, where: str, check: Callable[[pa.Schema, str], None]
) -> Converted:
    """Convert one file to Parquet with the CUR 2.0 Arrow types, never holding it whole."""
    kind = file_format(source)
    unzipped: Path | None = None
    try:
        if kind == "zip":
            unzipped = _unzip(source, target.with_name(target.name + ".csv"), where)
            source, kind = unzipped, "csv"
        names = read_header(source, kind, where)
        plan = _plan(names, where, typed=kind == "parquet")
        check(plan.schema, where)
        rows = _run(source, kind, plan, target, where)
    finally:
        if unzipped is not None:
            unzipped.unlink(missing_ok=True)
    return Converted(target, rows, plan.legacy, plan.extras)


@dataclass(frozen=True)
class _Plan:
    schema: pa.Schema
    select: str
    legacy: bool
    extras: tuple[str, ...]
    source_columns: int
    typed_columns: tuple[tuple[str, str, int], ...] = ()  # (name, kind, position) read from text


def _plan(names: list[str], where: str, typed: bool = False) -> _Plan:
    legacy = is_legacy_header(names)
    if legacy:
        header = map_header(names)
    else:
        header = LegacyHeader()
        for position, name in enumerate(names):
            if name in _KINDS and name not in header.columns:
                header.columns[name] = position
            else:
                header.extras.append(name)
    outputs: list[tuple[str, str]] = []
    expressions: list[str] = []
    typed_columns: list[tuple[str, str, int]] = []
    for name, kind in aws_cur2.ALL_COLUMNS:
        if name in header.columns:
            expressions.append(_cast(f"c{header.columns[name]}", kind, typed))
            if kind in ("double", "timestamp"):
                typed_columns.append((name, kind, header.columns[name]))
        elif legacy and name in header.maps:
            expressions.append(_legacy_map(header.maps[name]))
        else:
            continue
        outputs.append((name, kind))
    if not outputs:
        raise InputError(f"{where}: no CUR column in its header; it is not a cost and usage report")
    select = ", ".join(
        f"{expr} as {name}" for expr, (name, _) in zip(expressions, outputs, strict=True)
    )
    return _Plan(
        aws_cur2.arrow_schema(tuple(outputs)),
        select,
        legacy,
        tuple(header.extras),
        len(names),
        tuple(typed_columns),
    )


def _cast(column: str, kind: str, typed: bool) -> str:
    """typed: the source column has a type of its own (Parquet); else it is CSV text."""
    text = f"nullif(trim(cast({column} as varchar)), '')"
    if kind == "string":
        return f"coalesce(cast({column} as varchar), '')"
    if kind in ("double", "timestamp"):
        wanted = "double" if kind == "double" else "timestamptz"
        return f"cast({column if typed else text} as {wanted})"
    # A map arrives as one JSON object in a cell (CSV), or is already a map (Parquet).
    return f"cast(cast({text} as json) as {_MAP_SQL[kind]})"


def _legacy_map(entries: list[tuple[str, int]]) -> str:
    if not entries:
        return "cast(map() as map(varchar, varchar))"
    items = ", ".join(
        f"{{'key': {literal(key)}, 'value': cast(c{position} as varchar)}}"
        for key, position in entries
    )
    return (
        f"map_from_entries(list_filter([{items}], lambda e: e.value is not null and e.value <> ''))"
    )


def _run(source: Path, kind: str, plan: _Plan, target: Path, where: str) -> int:
    if kind == "parquet":
        names = read_header(source, kind)
        renamed = ", ".join(f"{identifier(name)} as c{i}" for i, name in enumerate(names))
        reader = f"(select {renamed} from read_parquet({literal(str(source))}))"
    else:
        columns = ", ".join(f"'c{i}': 'VARCHAR'" for i in range(plan.source_columns))
        reader = (
            f"read_csv({literal(str(source))}, header = true, auto_detect = false, delim = ',', "
            f"quote = '\"', escape = '\"', columns = {{{columns}}}, "
            f"compression = '{'gzip' if kind == 'gzip' else 'none'}', strict_mode = true, "
            "null_padding = false, allow_quoted_nulls = false)"
        )
    con = connect(settings={"threads": 2})
    rows = 0
    try:
        con.execute("set preserve_insertion_order = true")
        batches = con.sql(f"select {plan.select} from {reader}").to_arrow_reader(BATCH_ROWS)
        with pq.ParquetWriter(target, plan.schema, compression="snappy") as writer:
            for batch in batches:
                table = pa.Table.from_batches([batch]).cast(plan.schema)
                writer.write_table(table)
                rows += table.num_rows
    except duckdb.Error as error:
        target.unlink(missing_ok=True)
        if kind == "parquet":
            raise damaged(where, error, WHOLE_COPY) from error
        if kind == "gzip":
            check_gzip(source, where, WHOLE_COPY)
        check_utf8(source, kind == "gzip", where, _CSV)
        _refuse_bad_cell(con, reader, plan, where)
        detail = " ".join(str(error).split())
        raise InputError(
            f"{where}: cannot read it as a CUR CSV export ({detail[:600]}); the file is damaged "
            "or was not written by AWS: re-deliver it"
        ) from error
    finally:
        con.close()
    return rows


def _refuse_bad_cell(con: duckdb.DuckDBPyConnection, reader: str, plan: _Plan, where: str) -> None:
    """After a failed conversion: name the first cell that is not a number or a time."""
    for name, kind, position in plan.typed_columns:
        wanted = "double" if kind == "double" else "timestamptz"
        text = f"nullif(trim(c{position}), '')"
        try:
            found = con.execute(
                f"select line, value from (select row_number() over () + 1 as line, "
                f"c{position} as value, {text} as text from {reader}) where text is not null "
                f"and try_cast(text as {wanted}) is null order by line limit 1"
            ).fetchone()
        except duckdb.Error:
            return  # the CSV itself is broken: the caller says so
        if found is not None:
            what = (
                "a number such as 12.5 (no currency sign)"
                if kind == "double"
                else ("a time such as 2026-10-01T00:00:00Z")
            )
            raise refused(where, f"line {found[0]}", name, found[1], what, FIX)


def _unzip(source: Path, target: Path, where: str) -> Path:
    try:
        with zipfile.ZipFile(source) as archive:
            members = [item for item in archive.infolist() if not item.is_dir()]
            if len(members) != 1:
                raise InputError(f"{where}: a legacy CUR .zip must hold exactly one CSV file")
            with archive.open(members[0]) as inner, target.open("wb") as out:
                shutil.copyfileobj(io.BufferedReader(inner), out, 1 << 20)  # type: ignore[arg-type]
    except GZIP_ERRORS as error:  # a deflate stream cut short inside the archive
        raise damaged(where, error, WHOLE_COPY) from error
    except zipfile.BadZipFile as error:
        raise InputError(f"{where}: not a readable .zip file ({error}); re-deliver it") from error
    return target
