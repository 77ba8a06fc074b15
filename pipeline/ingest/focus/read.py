"""Read one FOCUS file (CSV or Parquet) into DuckDB as typed columns, or say what is wrong."""

from __future__ import annotations

import csv
import gzip
import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.common.duck import identifier, literal
from pipeline.common.errors import InputError
from pipeline.ingest import value_rules
from pipeline.ingest.focus import csv_blocks
from pipeline.ingest.focus import write as focus_write
from pipeline.ingest.focus.names import (
    SOURCE_FILE,
    SOURCE_LINE,
    check_names,
    detect_version,
    map_columns,
)
from pipeline.ingest.precision import note_rounding
from pipeline.ingest.provider import FILE_ROWS
from pipeline.ingest.unreadable import (
    GZIP_ERRORS,
    check_gzip,
    damaged,
    is_the_machine,
    reading,
)
from pipeline.ingest.utf8 import check_utf8
from schemas import focus

log = logging.getLogger("runcost")

NULL_TEXT = ["", "NULL", "null", "Null"]
TYPED = "focus_typed"
_TEXT = "focus_text"
_LINE = "runcost_line"
# ISO 8601 date or date-time, 'T' or space, optional fraction and zone (FOCUS writes ...Z; real
# files drop the T and the Z). A US date such as 5/1/25 is refused, never read as year 5.
_ISO = r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)? ?([Zz]|[+-]\d{2}(:?\d{2})?)?"
FIX = "Fix the value in the export (export the file again, or correct the copy)"
_WINDOWS = (("ChargePeriodStart", "ChargePeriodEnd"), ("BillingPeriodStart", "BillingPeriodEnd"))
_MONEY = (
    f"a finite amount below {value_rules.MAX_AMOUNT:.0e} in magnitude, as plain decimal text such "
    "as 12.5, -0.0000004 or 8e-7 (no currency symbol, no thousands separator, not NaN or Infinity)"
)
_UTF8 = "runcost reads FOCUS CSV as UTF-8 text"
# a file the provider wrote whole that arrived damaged: a FOCUS export rewrites the period's
# files with each delivery
WHOLE_COPY = (
    "copy the file again from the export, or export it again (the export's next delivery of "
    "the period replaces it)"
)
_HOW = {
    "decimal": "plain decimal text such as 12.5, -0.0000004 or 8e-7 (no currency symbol, no "
    "thousands separator)",
    "datetime": "an ISO 8601 UTC date-time such as 2024-09-01T00:00:00Z",
    "json": 'a JSON object such as {"team": "ml"}',
}


@dataclass(frozen=True)
class ReadFile:
    """A FOCUS file written typed, one Parquet part per billing period (the view focus_typed
    reads them): its version, row count, extra columns and periods (YYYY-MM)."""

    version: str
    rows: int
    extras: tuple[str, ...]
    periods: tuple[str, ...]


def read_focus_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    relative: str,
    provider_name: str | None,
    scratch: Path,
    part: Callable[[str], Path],
) -> ReadFile:
    """Write ``path`` typed (canonical FOCUS names, plus extra columns) as ``part(period)`` for
    each billing period it holds, checked in the same pass; or say what is wrong. A CSV is typed
    block by block (csv_blocks.py); a Parquet file, or a CSV the blocks leave to the row pass
    (written as text into ``scratch`` first), is read through a view: no copy is held in
    memory."""
    text_file = scratch.with_name(f"{scratch.stem}-text.parquet")
    is_csv = not path.name.lower().endswith(".parquet")
    if is_csv:  # a CSV is read as text only by the row pass
        names = _csv_header(path)
        check_names(names, path)
        native = dict.fromkeys(names, "VARCHAR")
    else:
        names, native = _load_text(con, path, text_file)
    mapping, extras = map_columns(names, path)
    try:
        version = detect_version(names, path)
        _check_required(path, version, mapping, provider_name)
    except InputError:
        if is_csv:  # a CSV that does not read is refused for that first
            _load_text(con, path, text_file)
        raise
    plan = focus_write.plan(mapping, native, provider_name, _parse, _MONEY)
    if is_csv:
        columns = csv_blocks.Columns(
            SOURCE_LINE,
            (SOURCE_FILE, relative),
            tuple(
                (name, None if name == "ProviderName" and provider_name else mapping[name])
                for name, _expression in plan.typed
            ),
            tuple(extras),
        )
        try:
            written = csv_blocks.write_csv(con, path, names, NULL_TEXT, plan, columns, part)
        except csv_blocks.Unsure:
            _load_text(con, path, text_file)
        else:
            read = ReadFile(version, written.rows, tuple(extras), written.periods)
            return _typed(con, path, mapping, plan, read, part, rounds=written.may_round)
    select = [f"{_LINE} as {SOURCE_LINE}", f"{literal(relative)} as {SOURCE_FILE}"]
    select += [f"{expression} as {name}" for name, expression in plan.typed]
    select += [
        f"{focus_write.text_of(name, native[name])} as {identifier(name)}" for name in extras
    ]
    with reading(str(path), WHOLE_COPY):  # a Parquet file's pages are decoded here
        periods = focus_write.periods(con, plan)
        try:
            rows = focus_write.write(con, select, plan, periods, scratch, part, guarded=True)
        except focus_write.Flagged:
            # only a file with a value the pass flags pays for naming the first bad row
            _check_values(con, path, mapping, provider_name)
            rows = focus_write.write(con, select, plan, periods, scratch, part, guarded=False)
    con.execute(f"drop view {_TEXT}")
    con.execute(f"drop view {focus_write.SOURCE}")
    read = ReadFile(version, rows, tuple(extras), periods)
    return _typed(con, path, mapping, plan, read, part, rounds=True)


def _check_required(
    path: Path, version: str, mapping: dict[str, str], provider_name: str | None
) -> None:
    missing = [
        name
        for name in focus.REQUIRED
        if name not in mapping and not (name == "ProviderName" and provider_name)
    ]
    if missing:
        raise InputError(
            f"{path}: FOCUS {version} file (detected from its columns) lacks the required "
            f"column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; runcost needs "
            f"{', '.join(focus.REQUIRED)}. Export the file again with every FOCUS column"
            + (
                " (FOCUS 1.3 names it ServiceProviderName), or set provider_name for this source"
                if missing == ["ProviderName"]
                else ""
            )
        )


def _typed(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    mapping: dict[str, str],
    plan: focus_write.Plan,
    read: ReadFile,
    part: Callable[[str], Path],
    *,
    rounds: bool,
) -> ReadFile:
    """``read``, its parts as the view focus_typed, their values checked and the rounding
    noted (``rounds``: some amount may carry more than 10 decimal places)."""
    if read.rows > FILE_ROWS:  # its lines keep their row in this file, whatever part holds them
        raise InputError(
            f"{path}: {read.rows:,} rows in one file, more than the {FILE_ROWS:,} a file's line "
            "ids can number; export the period in smaller files and run again"
        )
    if not read.periods:
        return read
    files = ", ".join(literal(str(part(period))) for period in read.periods)
    con.execute(f"create or replace temp view {TYPED} as select * from read_parquet([{files}])")
    _check_typed(con, path, mapping)
    if rounds:
        note_rounding(con, TYPED, list(plan.may_round), str(path))
    return read


def _load_text(
    con: duckdb.DuckDBPyConnection, path: Path, text_file: Path
) -> tuple[list[str], dict[str, str]]:
    """The file as the view focus_text, every column VARCHAR plus its 0-based row (runcost_line),
    and as the view focus_source, every column as stored: of the Parquet file itself, or of
    ``text_file``, which a CSV is written to block by block. The names, and each one's type."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        try:
            described = con.execute(
                f"describe select * from read_parquet({literal(str(path))})"
            ).fetchall()
        except duckdb.Error as error:
            detail = " ".join(str(error).split()).split(" LINE 1: ")[0]
            raise InputError(
                f"{path}: not a readable Parquet file ({detail}); {WHOLE_COPY}"
            ) from error
        names = [row[0] for row in described]
        columns = [
            f"{focus_write.text_of(column, kind)} as {identifier(column)}"
            for column, kind, *_ in described
        ]
        check_names(names, path)
        reader = f"read_parquet({literal(str(path))}, file_row_number = true)"
        con.execute(
            f"create or replace temp view {_TEXT} as select {', '.join(columns)}, "
            f"file_row_number as {_LINE} from {reader}"
        )
        con.execute(
            f"create or replace temp view {focus_write.SOURCE} as select * exclude "
            f"(file_row_number), file_row_number as {_LINE} from {reader}"
        )
        return names, {column: kind for column, kind, *_ in described}
    names = _csv_header(path)
    check_names(names, path)
    try:
        reader = pacsv.open_csv(
            path,
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={column: pa.string() for column in names},
                null_values=NULL_TEXT,
                strings_can_be_null=True,
            ),
        )
        schema = reader.schema.append(pa.field(_LINE, pa.int64()))
        line = 0
        with pq.ParquetWriter(text_file, schema, compression="snappy") as writer:
            for batch in reader:  # a block at a time: the file is never held whole
                numbers = pa.array(range(line, line + batch.num_rows), pa.int64())
                writer.write_batch(
                    pa.RecordBatch.from_arrays([*batch.columns, numbers], schema=schema)
                )
                line += batch.num_rows
    except (pa.ArrowInvalid, OSError) as error:
        if is_the_machine(error):  # writing the scratch file: a full disk is not the CSV's
            raise
        if path.name.lower().endswith(".gz"):
            check_gzip(path, str(path), WHOLE_COPY)
        check_utf8(path, path.name.lower().endswith(".gz"), str(path), _UTF8)
        raise InputError(
            f"{path}: not a readable CSV file ({error}); FOCUS CSV has one header row and "
            "the same number of fields on every row"
        ) from error
    con.execute(
        f"create or replace temp view {_TEXT} as "
        f"select * from read_parquet({literal(str(text_file))})"
    )
    con.execute(f"create or replace temp view {focus_write.SOURCE} as select * from {_TEXT}")
    return names, dict.fromkeys(names, "VARCHAR")


def _csv_header(path: Path) -> list[str]:
    try:
        opener = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rb") as raw, io.TextIOWrapper(raw, "utf-8-sig", newline="") as text:
            return next(csv.reader(text), [])
    except GZIP_ERRORS as error:
        raise damaged(str(path), error, WHOLE_COPY) from error
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        if isinstance(error, UnicodeDecodeError):
            check_utf8(path, path.name.lower().endswith(".gz"), str(path), _UTF8)
        raise InputError(
            f"{path}: cannot read the CSV header ({error}); FOCUS CSV is UTF-8 text"
        ) from error


def _check_values(
    con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str], provider: str | None
) -> None:
    """The first unparseable value, or missing required value, in file order: InputError."""
    probes: list[tuple[str, str, str]] = []  # (column, problem, SQL condition)
    for name, column in mapping.items():
        kind = focus.KINDS[name]
        text = identifier(column)
        if kind != "string":
            bad = f"{text} is not null and {_parse(text, kind)} is null"
            probes.append((name, "unparseable", bad))
        if name in focus.NOT_NULL and not (name == "ProviderName" and provider):
            probes.append((name, "null", f"{text} is null"))
    money = [
        value_rules.quantity(column, f"trim({identifier(column)})")
        if name.endswith("Quantity")  # usage measures, not money: they may pass 10^15
        else value_rules.money(column, f"trim({identifier(column)})", _MONEY)
        for name, column in mapping.items()
        if focus.KINDS[name] == "decimal"
    ]
    # the probes are counted in the money rules' scan: only a file failing one pays for the
    # query naming its first row
    probed = " or ".join(f"({condition})" for *_, condition in probes) or None
    bad, failing = value_rules.scan_values(con, _TEXT, _LINE, money, probed)
    if bad is not None:
        raise value_rules.refusal(str(path), _row(path, bad.row), bad, FIX)
    if not failing:
        return
    firsts = ", ".join(f"min(case when {condition} then {_LINE} end)" for *_, condition in probes)
    found = con.execute(f"select {firsts} from {_TEXT}").fetchone()
    failures = [(line, index) for index, line in enumerate(found) if line is not None]
    if not failures:
        return
    line, index = min(failures)
    name, problem, _condition = probes[index]
    where = f"{path}: {_row(path, line)}, column {mapping[name]}"
    if problem == "null":
        raise InputError(
            f"{where}: is empty, but FOCUS requires a value in every row (runcost needs it to "
            "cost and reconcile the line); fill it in the export, or drop the row"
        )
    value = con.execute(
        f"select {identifier(mapping[name])} from {_TEXT} where {_LINE} = ?", [line]
    ).fetchone()[0]
    raise InputError(
        f"{where}: {value!r} is not {_HOW[focus.KINDS[name]]}; fix the value in the export"
    )


def _check_typed(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str]) -> None:
    """value_rules over the typed rows: times a bill can hold, windows that do not end before
    they start, an ISO 4217 BillingCurrency and a BillingAccountId that is not blank."""
    rules = [
        value_rules.timestamp(mapping[name], name)
        for name in mapping
        if focus.KINDS[name] == "datetime"
    ]
    rules += [
        value_rules.window(mapping[start], mapping[end], start, end)
        for start, end in _WINDOWS
        if start in mapping and end in mapping
    ]
    if "BillingCurrency" in mapping:
        rules.append(value_rules.currency(mapping["BillingCurrency"], "BillingCurrency"))
    if "BillingAccountId" in mapping:
        rules.append(value_rules.required_id(mapping["BillingAccountId"], "BillingAccountId"))
    bad = value_rules.first_bad(con, TYPED, SOURCE_LINE, rules)
    if bad is not None:
        raise value_rules.refusal(str(path), _row(path, bad.row), bad, FIX)


def _row(path: Path, line: int) -> str:
    """How a message counts the 0-based row ``line`` of a file."""
    return (
        f"row {line + 1}"
        if path.name.lower().endswith(".parquet")
        else (f"row {line + 1} (after the header)")
    )


def _parse(text: str, kind: str) -> str:
    """SQL that turns the VARCHAR expression ``text`` into the kind's type, NULL when it can't."""
    wanted = focus.DUCKDB_TYPES[kind]
    if kind == "decimal":
        return f"try_cast(trim({text}) as {wanted})"
    if kind == "datetime":
        return (
            f"case when regexp_full_match(trim({text}), '{_ISO}') "
            f"then try_cast(trim({text}) as {wanted}) end"
        )
    if kind == "json":
        return (
            f"case when json_valid({text}) and json_type(json({text})) = 'OBJECT' then {text} end"
        )
    return text
