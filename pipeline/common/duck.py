"""The one way runcost opens DuckDB (UTC whatever the machine's zone) and quotes what it splices."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb


def connect(
    database: Path | str | None = None,
    *,
    read_only: bool = False,
    settings: dict[str, str | int | bool] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open ``database`` (in memory when None) in UTC, then apply ``settings`` (`set k = v`)."""
    con = duckdb.connect(":memory:" if database is None else str(database), read_only=read_only)
    # hour buckets and billing periods are UTC whatever the machine's zone
    con.execute("set TimeZone = 'UTC'")
    for name, value in (settings or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif not isinstance(value, int):
            value = literal(value)
        con.execute(f"set {name} = {value}")
    return con


def literal(text: object) -> str:
    """A SQL string literal: paths and names spliced where DuckDB takes no parameter."""
    return "'" + str(text).replace("'", "''") + "'"


def identifier(name: str) -> str:
    """A quoted SQL identifier (a column named by the data, such as a CUR header)."""
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def optimizer_disabled(con: duckdb.DuckDBPyConnection, name: str) -> Iterator[None]:
    """DuckDB's optimizer ``name`` off for the statements run inside, beside any already off."""
    before = con.execute("select current_setting('disabled_optimizers')").fetchone()[0] or ""
    con.execute(f"set disabled_optimizers = {literal(','.join(filter(None, (before, name))))}")
    try:
        yield
    finally:
        con.execute(f"set disabled_optimizers = {literal(before)}")
