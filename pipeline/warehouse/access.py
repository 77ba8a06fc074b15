"""Read the published snapshot: open runcost.duckdb read-only and refuse statements that write."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

from pipeline.common.duck import connect, literal
from pipeline.common.errors import RuncostError
from pipeline.warehouse.snapshots import reader_settings, snapshots_folder

READ_STATEMENTS = "select, with, from, values, pivot, unpivot, describe, show, summarize, explain"
# Statement kinds a read can be made of. Anything else, and any of _WRITES anywhere inside one,
# is refused before DuckDB sees it; the connection is read-only as well.
_READS = (exp.Query, exp.Values, exp.Pivot, exp.Describe, exp.Show, exp.Summarize)
_WRITES = (exp.DML, exp.DDL, exp.Command, exp.Copy, exp.Pragma, exp.Set, exp.Transaction)
# First words of DuckDB statements that write or change the session; named in the refusal even
# when sqlglot cannot parse the rest (EXPORT DATABASE, IMPORT DATABASE, CREATE SECRET, ...)
# fmt: off
_WRITE_KEYWORDS = frozenset({
    "alter", "analyze", "attach", "begin", "call", "checkpoint", "comment", "commit", "copy",
    "create", "deallocate", "delete", "detach", "drop", "execute", "export", "force", "import",
    "insert", "install", "load", "merge", "pragma", "prepare", "reset", "rollback", "savepoint",
    "set", "start", "truncate", "update", "upsert", "use", "vacuum",
})
# fmt: on


ANALYST_SETTINGS = (
    "set autoinstall_known_extensions = false",
    "set autoload_known_extensions = false",
)


class QueryRefused(RuncostError):
    """A statement that is not a read, or that cannot be checked to be one."""

    exit_code = 2


class InvalidQuery(RuncostError):
    """A query DuckDB cannot parse: a bad query, exit 1 (docs/operations.md)."""


# the duckdb shell, for what runcost sql does not run; the package is on PyPI
SHELL_HINT = (
    "for anything else use the duckdb shell (pip install duckdb-cli), from the warehouse folder: "
    "duckdb -readonly runcost.duckdb"
)


def open_snapshot(database: Path) -> duckdb.DuckDBPyConnection:
    """Open a published database read-only, in UTC, with its settings locked.

    Analysts' queries never fetch code or data from the network: no extension is installed or
    loaded on demand, and files are readable only in the snapshot folders (the views' own).
    """
    try:
        con = connect(database, read_only=True, settings=reader_settings(database))
        folders = {database.resolve().parent, *_snapshot_folders(con, database)}
        for setting in ANALYST_SETTINGS:
            con.execute(setting)
        # the views name their Parquet relative to the warehouse (found through file_search_path)
        names = [*(f"{folder}/" for folder in sorted(folders)), "snapshots/"]
        allowed = "[" + ", ".join(literal(name) for name in names) + "]"
        con.execute(f"set allowed_directories = {allowed}")
        con.execute("set enable_external_access = false")
    except duckdb.Error as error:
        raise RuncostError(f"{database}: cannot be opened read-only: {error}") from error
    # a query cannot turn settings back on (external access, extensions, time zone)
    con.execute("set lock_configuration = true")
    return con


def _snapshot_folders(con: duckdb.DuckDBPyConnection, database: Path) -> list[Path]:
    """The snapshots folder holding the one this database serves (its views read there)."""
    try:
        row = con.execute("select snapshot_folder from main.runcost_snapshot").fetchone()
    except duckdb.Error:
        return []
    # relative to the database's folder (absolute in snapshots published before DuckDB 1.x views)
    return [snapshots_folder(database, str(row[0]))] if row and row[0] else []


def refuse_output_inside(output: Path, warehouse: Path) -> None:
    """--output may not write into the warehouse (it would overwrite CURRENT or the database)."""
    target, root = output.resolve(), warehouse.resolve()
    if target == root or target.is_relative_to(root):
        raise QueryRefused(
            f"--output {output}: is inside the warehouse {warehouse}; runcost sql never writes "
            "there (it could overwrite CURRENT, runcost.duckdb or a snapshot): write the result "
            "outside it"
        )
    linked = _same_file_in(target, root)
    if linked is not None:
        raise QueryRefused(
            f"--output {output}: is the same file as {linked} (a hard link into the warehouse); "
            "runcost sql never writes there (it would overwrite that file): write the result to "
            "a new path outside the warehouse"
        )


def _same_file_in(target: Path, root: Path) -> Path | None:
    """The file under ``root`` that ``target`` is a hard link of, if any."""
    try:
        found = target.stat()
    except FileNotFoundError:
        return None  # a new file: its folder is outside the warehouse (checked above)
    if found.st_nlink < 2:
        return None  # its only name is outside the warehouse
    key = (found.st_dev, found.st_ino)
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            try:
                item = path.lstat()
            except OSError:  # removed while walking (a run pruning a snapshot)
                continue
            if (item.st_dev, item.st_ino) == key:
                return path
    return None


def check_read_only(sql: str) -> str:
    """Return the one statement in ``sql`` if it only reads; raise QueryRefused otherwise."""
    first_word = _first_word(sql)
    if first_word in _WRITE_KEYWORDS:
        raise QueryRefused(_refusal(first_word))
    check_syntax(sql)
    try:
        with _quiet_sqlglot():
            parsed = sqlglot.parse(sql, dialect="duckdb")
        statements = [item for item in parsed if item is not None]
    except sqlglot.errors.SqlglotError as error:
        first = str(error).splitlines()[0]
        raise QueryRefused(
            f"the query could not be checked to be read-only ({first}); runcost sql runs "
            f"{READ_STATEMENTS} statements; {SHELL_HINT}"
        ) from error
    if not statements:
        raise QueryRefused("the query is empty; pass a statement such as select 1")
    if len(statements) > 1:
        raise QueryRefused(
            f"the query holds {len(statements)} statements; runcost sql runs one at a time"
        )
    _refuse_writes(statements[0])
    return sql


def check_syntax(sql: str) -> None:
    """Raise InvalidQuery with DuckDB's own parser message when DuckDB cannot parse ``sql``."""
    con = connect()
    try:
        con.extract_statements(sql)
    except duckdb.ParserException as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        where = next((line for line in lines if line.startswith("LINE ")), "")
        raise InvalidQuery(
            f"the query is not valid SQL: {lines[0] if lines else error}"
            + (f" ({where})" if where else "")
            + "; fix it and run again, for example: "
            'runcost sql "select * from marts.attempt_costs limit 5"'
        ) from error
    finally:
        con.close()


def _refuse_writes(statement: exp.Expression) -> None:
    if isinstance(statement, exp.Command) and statement.name.upper() == "EXPLAIN":
        # sqlglot keeps EXPLAIN's operand as text; EXPLAIN ANALYZE runs it, so check it too
        operand = statement.expression.name.strip()
        if operand.lower().startswith("analyze"):
            operand = operand[len("analyze") :]
        check_read_only(operand)
        return
    writes = [node for node in statement.walk() if isinstance(node, _WRITES)]
    if writes or not isinstance(statement, _READS):
        raise QueryRefused(_refusal(_keyword(writes[0] if writes else statement)))


def _refusal(keyword: str) -> str:
    return (
        f"`{keyword}` statements are refused: runcost sql reads the published snapshot and "
        f"never changes it; it runs {READ_STATEMENTS}. To save a result, use "
        "--output PATH with --format csv, json or parquet"
    )


def _first_word(sql: str) -> str:
    try:
        tokens = sqlglot.tokenize(sql, dialect="duckdb")
    except sqlglot.errors.SqlglotError:
        return ""
    return tokens[0].text.lower() if tokens else ""


def _keyword(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return node.name.lower()
    if isinstance(node, _WRITES):
        return {"truncatetable": "truncate"}.get(
            type(node).__name__.lower(), type(node).__name__.lower()
        )
    words = node.sql(dialect="duckdb").split()
    return words[0].lower() if words else type(node).__name__.lower()


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    # sqlglot warns when it keeps a statement as raw text (EXPLAIN); the check handles those
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
