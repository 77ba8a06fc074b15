"""A stored delivery file that does not decode, named when the build fails reading it.

Ingest decodes the columns it checks, not every column the models read: a delivered Parquet file
whose footer reads but one of whose other pages is corrupt reaches raw/, and DuckDB's error at
the build names no file. Only then, so a healthy night pays nothing, the files the run registered
(raw.aws_cur2_files, raw.gcp_billing_files, raw.focus_billing_files) are decoded column by column
to name the file, the column and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from pipeline.common.duck import connect, identifier, literal
from pipeline.common.errors import InputError
from pipeline.warehouse.raw_store import DELIVERY_FILE, RawStore

# the file lists register_sources writes into the build database, by provider
REGISTERED = (
    ("aws", "raw.aws_cur2_files"),
    ("gcp", "raw.gcp_billing_files"),
    ("focus", "raw.focus_billing_files"),
)
# errors of the SQL, of the build database or of the machine, never of an input file's content
NOT_THE_INPUT = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConstraintException,
    duckdb.TransactionException,
    duckdb.OutOfMemoryException,
    duckdb.InterruptException,
)
UNCHANGED = "nothing was published; the current snapshot stays current"


def name_undecodable(con: duckdb.DuckDBPyConnection, error: BaseException) -> None:
    """Raise InputError naming the first registered delivery file (in ``con``'s raw.*_files)
    that does not decode, when ``error`` (the build's failure on ``con``) may come from one;
    return when it cannot, or when every file decodes (the caller reports ``error``)."""
    if _not_the_input(error):
        return
    files = registered_files(con)
    if not files:
        return
    scan = connect()
    try:
        for provider, path in files:
            found = undecodable_column(scan, path)
            if found is not None:
                raise refusal(provider, path, *found) from error
    finally:
        scan.close()


def registered_files(con: duckdb.DuckDBPyConnection) -> list[tuple[str, Path]]:
    """(provider, stored file) of every delivery file the build reads, in registration order."""
    found: list[tuple[str, Path]] = []
    for provider, table in REGISTERED:
        try:
            rows = con.execute(f"select filename from {table} order by file_index").fetchall()
        except duckdb.Error:  # not registered (a build of given tables), or the database failed
            continue
        found.extend((provider, Path(row[0])) for row in rows)
    return found


def undecodable_column(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[str | None, str] | None:
    """(column, DuckDB's error) of the first column of ``path`` that does not decode; column
    None when the whole file fails but no single column does; None when the file decodes."""
    reader = f"read_parquet({literal(str(path))})"
    try:
        # hashing every value decodes every page (statistics answer min, max and counts)
        con.execute(f"select bit_xor(hash(columns(*))) from {reader}").fetchall()
        return None
    except duckdb.Error as error:
        if _not_the_input(error):
            raise
        whole = error
    try:
        names = [row[0] for row in con.execute(f"describe select * from {reader}").fetchall()]
    except duckdb.Error:
        return None, _detail(whole)
    for name in names:
        try:
            con.execute(f"select bit_xor(hash({identifier(name)})) from {reader}").fetchall()
        except duckdb.Error as error:
            if _not_the_input(error):
                raise
            return name, _detail(error)
    return None, _detail(whole)


def refusal(provider: str, path: Path, column: str | None, detail: str) -> InputError:
    """The message of a stored file that does not decode: raw/'s own message when the file is
    no longer the one stored (it changed on disk), else the delivered file and its fix."""
    folder = _delivery_folder(path)
    if folder is None:
        return InputError(
            f"{path}{_column(column)} cannot be read through ({detail}), so the file is damaged: "
            f"replace it with a whole copy and run again; {UNCHANGED}"
        )
    period, delivery_id = folder.parent.name.split("=", 1)[1], folder.name.split("=", 1)[1]
    store = RawStore(folder.parents[3], provider)
    store.verify(folder.parent.parent.name, period, delivery_id)  # raises when it changed
    record = _read_record(folder)
    entry = _entry(record, path.relative_to(folder).as_posix())
    export = record.get("export", folder.parent.parent.name)
    delivery = f"delivery {delivery_id} of {export} {period}"
    source = entry.get("source") or entry.get("original")
    if provider == "aws" and not record.get("converted") and source:
        # CUR 2.0 Parquet is stored byte for byte as delivered (its sha256 says so)
        return InputError(
            f"{source}{_column(column)} cannot be read through ({detail}), "
            f"so the delivered file is damaged (stored as delivered in {path}, {delivery}): "
            "re-deliver the file as AWS wrote it (copy it again from the export's bucket and "
            f"delete {folder}, or wait for the export's next delivery of the period, which "
            f"replaces it) and run again; {UNCHANGED}"
        )
    written = f", written from {source}" if source else ""
    return InputError(
        f"{path} ({delivery}{written}){_column(column)} cannot be read through ({detail}), so "
        "runcost stored it damaged (a disk or memory fault): delete "
        f"{folder} and run again with the export's files still holding the period, so it is "
        f"stored afresh; {UNCHANGED}"
    )


def _not_the_input(error: BaseException) -> bool:
    return isinstance(error, NOT_THE_INPUT) or "No space left on device" in str(error)


def _column(column: str | None) -> str:
    return f": column {column}" if column else ":"


def _delivery_folder(path: Path) -> Path | None:
    for folder in path.parents:
        if folder.name.startswith("delivery=") and (folder / DELIVERY_FILE).is_file():
            return folder if len(folder.parents) > 3 else None
    return None


def _read_record(folder: Path) -> dict[str, Any]:
    try:
        body = json.loads((folder / DELIVERY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _entry(record: dict[str, Any], name: str) -> dict[str, Any]:
    for item in [*(record.get("converted") or []), *(record.get("files") or [])]:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return {}


def _detail(error: BaseException) -> str:
    return " ".join(str(error).split()).split(" LINE 1: ")[0][:300]
