"""runcost report: write the published snapshot as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.common import (
    config_option,
    console,
    database_option,
    published_database,
    reports_errors,
)
from pipeline.report import DEFAULT_REPORT_NAME, write_report


@click.command()
@config_option
@database_option
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(DEFAULT_REPORT_NAME),
    show_default=True,
    help="The HTML file to write.",
)
@reports_errors
def report(config_path: Path | None, database: Path | None, output: Path) -> None:
    """Write an HTML report of the published snapshot: spend by day and service, cost per
    experiment by attempt status, reconciliation with period status, and tag coverage and
    cost against quality when those marts exist. One file; it opens without a network.
    """
    written = write_report(published_database(config_path, database), output)
    console.print(f"wrote {written}", highlight=False)
