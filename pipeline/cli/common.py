"""What every runcost command shares: consoles, the --config option, errors as exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pipeline.common.errors import RuncostError
from pipeline.config.loader import DEFAULT_CONFIG_NAME
from pipeline.warehouse.snapshots import DATABASE_NAME

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
console = Console()
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


def reports_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Print a RuncostError as `error: ...` on stderr and exit with its code."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except RuncostError as error:
            errors.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
            sys.exit(error.exit_code)

    return wrapper
