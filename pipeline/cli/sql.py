"""runcost sql: a read-only query on the published snapshot, as a table, CSV, JSON or Parquet."""

from __future__ import annotations

import logging
import sys
import tempfile
import warnings
from datetime import datetime
from pathlib import Path
from typing import TextIO

import click
import duckdb

from pipeline.cli.cells import cell_text, is_rounded
from pipeline.cli.common import (
    config_option,
    console,
    database_option,
    published_database,
    reports_errors,
)
from pipeline.cli.tables import Column, print_table
from pipeline.common.errors import RuncostError
from pipeline.config.loader import load_config
from pipeline.report.results import (
    BATCH_ROWS,
    column_names,
    column_types,
    display_text,
    write_csv,
    write_json,
    write_parquet,
)
from pipeline.run.as_of import snapshot_as_of, write_snapshot_database
from pipeline.warehouse.access import (
    check_read_only,
    open_snapshot,
    refuse_output_inside,
)
from pipeline.warehouse.snapshots import DATABASE_NAME

FORMATS = ("table", "csv", "json", "parquet")
TABLE_ROWS = 1000
_NUMERIC_TYPES = ("DECIMAL", "DOUBLE", "FLOAT", "REAL", "BIGINT", "INTEGER", "SMALLINT")
_NUMERIC_TYPES += ("TINYINT", "HUGEINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT")


@click.command()
@click.argument("query", required=False)
@click.option(
    "--file",
    "query_file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Read the query from this file ('-' for stdin) instead of the QUERY argument.",
)
@config_option
@database_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="table (default on a terminal), csv, json, or parquet (needs --output). "
    "Default with --output: from its suffix.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the result to this file instead of standard output.",
)
@click.option(
    "--as-of",
    "as_of",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    help="Read the snapshot that was current at the end of this UTC date (YYYY-MM-DD) instead "
    "of the current one; kept for warehouse.snapshot_retention_days.",
)
@click.option(
    "--exact",
    is_flag=True,
    help="In the table, print every digit of every number. Without it money is rounded to the "
    "cent and other numbers to 6 places (csv, json and parquet are always exact).",
)
@reports_errors
def sql(
    query: str | None,
    query_file: TextIO | None,
    config_path: Path | None,
    database: Path | None,
    output_format: str | None,
    output: Path | None,
    as_of: datetime | None,
    exact: bool,
) -> None:
    """Run one read-only SQL QUERY (or --file) against the published snapshot.

    Reads select, with, from, values, pivot, describe, show, summarize and explain; statements
    that write (insert, create, copy, attach, set, install, ...) are refused with exit code 2.
    csv, json and parquet keep every digit of a decimal; the table rounds money to the cent
    (--exact: every digit). Timestamps are UTC.
    """
    if (query is None) == (query_file is None):
        raise click.UsageError("pass a QUERY or --file PATH (one of them)")
    text = query if query is not None else query_file.read()  # type: ignore[union-attr]
    output_format = _resolve_format(output_format, output)
    check_read_only(text)
    if as_of is None:
        published = published_database(config_path, database)
        if output is not None:
            refuse_output_inside(output, published.parent)
        _query(published, text, output_format, output, exact)
        return
    warehouse = database.parent if database else load_config(config_path).warehouse
    if output is not None:
        refuse_output_inside(output, warehouse)
    folder = snapshot_as_of(warehouse, as_of.date())
    logging.getLogger("runcost").info(
        "as of %s: reading snapshot %s", as_of.date().isoformat(), folder.name
    )
    with tempfile.TemporaryDirectory(prefix="runcost-as-of-") as scratch:
        path = Path(scratch) / DATABASE_NAME
        write_snapshot_database(folder, path)
        _query(path, text, output_format, output, exact)


def _query(database: Path, text: str, output_format: str, output: Path | None, exact: bool) -> None:
    con = open_snapshot(database)
    try:
        _run(con, text, output_format, output, exact)
    except duckdb.Error as error:
        raise RuncostError(f"query failed: {duckdb_message(error)}") from error
    finally:
        con.close()


def duckdb_message(error: duckdb.Error) -> str:
    """DuckDB's message on one line, its hints kept ("Did you mean ...?", "Candidate bindings:
    ..."), the `LINE 1: ...` echo of the query and its caret underline left out."""
    lines = [line.strip() for line in str(error).splitlines()]
    kept = [
        line for line in lines if line and not line.startswith("LINE ") and line.strip("^ ") != ""
    ]
    return " ".join(kept) or type(error).__name__


def _resolve_format(output_format: str | None, output: Path | None) -> str:
    if output_format is None:
        suffix = output.suffix.lower().lstrip(".") if output else ""
        output_format = suffix if suffix in FORMATS[1:] else "table"
    if output_format == "parquet" and output is None:
        raise click.UsageError("--format parquet needs --output PATH (Parquet is a binary file)")
    if output_format == "table" and output is not None:
        raise click.UsageError("--output writes csv, json or parquet; add --format csv")
    return output_format


def _run(
    con: duckdb.DuckDBPyConnection,
    text: str,
    output_format: str,
    output: Path | None,
    exact: bool,
) -> None:
    if output_format == "parquet":
        assert output is not None
        count = write_parquet(con, text, output)
        console.print(
            f"wrote {rows_text(count)} to {output}", highlight=False, markup=False, soft_wrap=True
        )
        return
    cursor = con.execute(text)
    if output_format == "table":
        _print_table(cursor, exact)
        return
    writer = write_csv if output_format == "csv" else write_json
    if output is None:
        writer(cursor, sys.stdout)
        return
    with output.open("w", encoding="utf-8", newline="") as stream:
        count = writer(cursor, stream)
    console.print(
        f"wrote {rows_text(count)} to {output}", highlight=False, markup=False, soft_wrap=True
    )


def rows_text(count: int) -> str:
    """'1 row', '15,115 rows'."""
    return f"{count:,} row{'' if count == 1 else 's'}"


def _print_table(cursor: duckdb.DuckDBPyConnection, exact: bool) -> None:
    rows = cursor.fetchmany(TABLE_ROWS + 1)
    kinds = column_types(cursor)
    total = len(rows) + (_count_rest(cursor) if len(rows) > TABLE_ROWS else 0)
    columns = [
        Column(name, numeric=kind.startswith(_NUMERIC_TYPES))
        for name, kind in zip(column_names(cursor), kinds, strict=True)
    ]
    shown = rows[:TABLE_ROWS]
    cells = [
        [cell_text(value, kind, exact) for value, kind in zip(row, kinds, strict=True)]
        for row in shown
    ]
    rounded = any(
        text != display_text(value)
        for row, texts in zip(shown, cells, strict=True)
        for value, kind, text in zip(row, kinds, texts, strict=True)
        if is_rounded(kind)
    )
    title = rows_text(total) if total <= TABLE_ROWS else f"showing {TABLE_ROWS:,} of {total:,} rows"
    if rounded:
        title += "; numbers rounded, money to the cent (--exact: every digit)"
    print_table(title, columns, cells)
    if total > TABLE_ROWS:
        console.print(
            f"the first {TABLE_ROWS:,} of {total:,} rows are shown; add a limit, or "
            "--format csv --output PATH for all",
            highlight=False,
        )


def _count_rest(cursor: duckdb.DuckDBPyConnection) -> int:
    """The rows a result has left, counted in Arrow batches (not converted to Python)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "an extra copy of the rows": one batch at a time
        reader = cursor.to_arrow_reader(BATCH_ROWS)
    return sum(batch.num_rows for batch in reader)
