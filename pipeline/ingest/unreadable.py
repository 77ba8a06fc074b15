"""A delivered file that cannot be read through (a corrupt Parquet page, a cut-off or damaged
gzip stream): one message naming the file and the fix, before anything reaches raw/."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.common.errors import InputError, RuncostError
from pipeline.ingest.value_rules import AFRESH

# how a gzip stream that is cut short or damaged fails in Python (BadGzipFile is an OSError)
GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
_CHUNK = 1 << 20


def is_the_machine(error: BaseException) -> bool:
    """Errors of the machine, not of the file's content: memory, a stop, a full disk, and an
    OSError with an errno (Arrow's and gzip's decoding errors have none)."""
    if isinstance(error, duckdb.OutOfMemoryException | duckdb.InterruptException):
        return True
    if isinstance(error, OSError) and error.errno is not None:
        return True
    return "No space left on device" in str(error)


def damaged(where: str, error: BaseException, fix: str, afresh: str = AFRESH) -> InputError:
    """The message of a file that cannot be read through: ``where`` names it, ``fix`` says how
    to get a whole copy (who wrote it)."""
    detail = " ".join(str(error).split()).split(" LINE 1: ")[0][:300]
    return InputError(
        f"{where}: cannot be read through ({detail}), so the copy is "
        f"damaged or cut short: {fix} and run again; {afresh}"
    )


@contextmanager
def reading(where: str, fix: str, afresh: str = AFRESH) -> Iterator[None]:
    """Turn a failure to decode the file named ``where`` (DuckDB, Arrow, gzip) into ``damaged``;
    runcost's own refusals and the machine's errors (memory, full disk, permissions) pass
    unchanged."""
    try:
        yield
    except RuncostError:
        raise
    except (duckdb.Error, pa.ArrowException, OSError, *GZIP_ERRORS) as error:
        if is_the_machine(error):
            raise
        raise damaged(where, error, fix, afresh) from error


def check_gzip(path: Path, where: str, fix: str, afresh: str = AFRESH) -> None:
    """Refuse ``path`` when its gzip stream is cut short or fails its CRC (read through once)."""
    with reading(where, fix, afresh), gzip.open(path, "rb") as handle:
        while handle.read(_CHUNK):
            pass
