"""What every runcost command shares: consoles, the --config option, errors as exit codes."""

from __future__ import annotations

import errno
import os
import select
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pipeline.cli.tables import Terminal
from pipeline.common.errors import RuncostError, redact_urls
from pipeline.config.loader import DEFAULT_CONFIG_NAME, load_config
from pipeline.warehouse.snapshots import DATABASE_NAME

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
console = Terminal()
errors = Console(stderr=True)

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Configuration file (default: ./{DEFAULT_CONFIG_NAME}).",
)

database_option = click.option(
    "--database",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"A published {DATABASE_NAME} (default: the one in the configured warehouse).",
)


DISK_FULL = (
    "the disk is full: free space on the disk holding the warehouse and run again; a run that "
    "fails publishes nothing, so the current snapshot stays current"
)
# set by `runcost --debug` and `--log-format json`: print the traceback after the error line
TRACEBACKS = {"show": False}


def reports_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Print any failure as one `error: ...` line on stderr and exit with its code.

    A RuncostError says what to fix; a full disk or another OS error names the path; anything
    else is an internal error. Tracebacks only with --debug or --log-format json. A reader that
    stops reading standard output (`runcost sql ... | head -1`) ends the command quietly, exit 0.
    """

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = function(*args, **kwargs)
            sys.stdout.flush()  # the last buffered rows: a closed pipe fails here, not at exit
            return result
        except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt):
            raise
        except BrokenPipeError as error:
            if not stdout_closed():
                _exit_with(error)
            _discard_stdout()
            sys.exit(EXIT_OK)
        except Exception as error:
            _exit_with(error)

    return wrapper


def _exit_with(error: BaseException) -> None:
    text, code = describe_failure(error)
    text = redact_urls(text)
    errors.print(f"error: {text}", markup=False, highlight=False, soft_wrap=True)
    if TRACEBACKS["show"]:
        errors.print(traceback.format_exc(), markup=False, highlight=False)
    sys.exit(code)


def stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (not some other broken pipe)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):
        return True  # no poll (Windows): a broken pipe while printing is standard output's
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def _discard_stdout() -> None:
    # what Python's docs advise: the interpreter flushes stdout on exit, which would fail again
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def describe_failure(error: BaseException) -> tuple[str, int]:
    """(one-line message with the fix, exit code) of any exception."""
    if isinstance(error, RuncostError):
        text = str(error)
        if "No space left on device" in text and "stays current" not in text:
            text = " ".join(text.split()) + f"; {DISK_FULL}"
        return text, error.exit_code
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        cause = error.strerror or str(error)
        fix = (
            "free space on that disk and run again"
            if error.errno == errno.ENOSPC
            else "check the path and its permissions and run again"
        )
        return (
            f"{cause}{where}: {fix}; a run that fails publishes nothing, so the current "
            "snapshot stays current",
            EXIT_FAILED,
        )
    text = " ".join(str(error).split())
    if "No space left on device" in text:
        return f"{text[:300]}; {DISK_FULL}", EXIT_FAILED
    return (
        f"internal error: {type(error).__name__}: {text[:500]}; nothing was published. Run "
        "again with `runcost --debug ...` for the traceback and report it",
        EXIT_FAILED,
    )


def published_database(config_path: Path | None = None, database: Path | None = None) -> Path:
    """The database to read: the one given, or runcost.duckdb in the configured warehouse."""
    if database is None:
        database = load_config(config_path).warehouse / DATABASE_NAME
    if not database.is_file():
        raise RuncostError(f"{database}: nothing is published yet; run `runcost run` first")
    return database
