"""The runcost command line: parse arguments, call the library, turn errors into exit codes."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import astuple
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from pipeline import __version__
from pipeline.cli.common import (
    TRACEBACKS,
    config_option,
    console,
    errors,
    reports_errors,
)
from pipeline.common.errors import RuncostError
from pipeline.config.loader import DEFAULT_CONFIG_NAME, load_config


def _setup_logging(log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    logger = logging.getLogger("runcost")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "level": record.levelname.lower(),
                "stage": getattr(record, "stage", None),
                "message": record.getMessage(),
                "at": record.created,
            }
        )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="runcost")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="How warnings and progress are logged to stderr.",
)
@click.option("--debug", is_flag=True, help="Print the traceback after an error line.")
def main(log_format: str, debug: bool) -> None:
    """runcost: the all-in, reconciled cost of every ML training attempt and experiment."""
    _setup_logging(log_format)
    TRACEBACKS["show"] = debug or log_format == "json"


top_option = click.option(
    "--top",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    metavar="N",
    help="How many experiments the summary lists, the costliest first (0: all).",
)


@main.command()
@config_option
@click.option(
    "--allow-shrink",
    "allow_shrink",
    multiple=True,
    metavar="PERIOD",
    help="Accept, this once, a re-delivery that empties billing period PERIOD (YYYY-MM, a GCP "
    "partition day YYYY-MM-DD, or EXPORT/PERIOD) or shrinks a final one by more than 10%. "
    "Repeatable.",
)
@click.option(
    "--full-refresh",
    "full_refresh",
    is_flag=True,
    help="Build every billing period, even when the inputs equal those of the current snapshot.",
)
@top_option
@reports_errors
def run(
    config_path: Path | None, allow_shrink: tuple[str, ...], full_refresh: bool, top: int
) -> None:
    """Run the nightly job: ingest, attribute, allocate, check, publish.

    Exits 0 when a new snapshot is published (or the content did not change), 1 when input
    is bad, a check fails or another run holds the warehouse (nothing is published), 2 on a
    usage error.
    """
    from pipeline.cli.status import print_summary, run_display
    from pipeline.cli.tables import terminal
    from pipeline.run.nightly import run_pipeline

    config = load_config(config_path)
    with run_display(errors) as display:
        result = run_pipeline(
            config,
            on_event=display.on_event,
            allow_shrink=allow_shrink,
            full_refresh=full_refresh,
        )
    if result.status == "published":
        _print_run_summary(result.database, result.run_id, top)
    print_summary(terminal(), result)


force_option = click.option(
    "--force", is_flag=True, help="Overwrite the runcost.toml (and scenario files) in DIRECTORY."
)


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", default=7, show_default=True, help="Seed of the scenario generator.")
@click.option(
    "--world",
    type=click.Choice(["aws", "aws-csv", "gcp"]),
    default="aws",
    show_default=True,
    help="Which bundled world: a CUR 2.0 Parquet export, the same as gzip CSV, or a GCP export.",
)
@force_option
@top_option
@reports_errors
def demo(directory: Path | None, seed: int, world: str, force: bool, top: int) -> None:
    """Write the bundled scenario into DIRECTORY (default ./runcost-demo), run it, show costs."""
    from pipeline.run.nightly import run_pipeline
    from pipeline.scenario.worlds import write_world

    target = directory or Path("runcost-demo")
    _refuse_overwrite(target, force)
    config_file = write_world(world, target, seed=seed)
    result = run_pipeline(load_config(config_file), progress=_progress)
    _print_run_summary(result.database, result.run_id, top)
    hints = (
        f"\nQuery it (from {target}, or add --config {config_file}):",
        f"  cd {target}",
        '  runcost sql "select * from marts.attempt_costs"',
        "  runcost report --output runcost-report.html",
        "Open it in any DuckDB 1.1 or later (pip install duckdb-cli), from the warehouse folder:",
        f"  cd {result.database.parent} && duckdb -readonly {result.database.name}",
    )
    for line in hints:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", default=7, show_default=True, help="Seed of the scenario generator.")
@click.option(
    "--world",
    type=click.Choice(["aws", "aws-csv", "gcp"]),
    default="aws",
    show_default=True,
    help="Which bundled world: a CUR 2.0 Parquet export, the same as gzip CSV, or a GCP export.",
)
@force_option
@reports_errors
def scenario(directory: Path, seed: int, world: str, force: bool) -> None:
    """Write a small consistent world (billing export, telemetry, ground truth) to DIRECTORY."""
    from pipeline.scenario.worlds import write_world

    _refuse_overwrite(directory, force)
    config_file = write_world(world, directory, seed=seed)
    console.print(f"wrote {directory} (configuration: {config_file})", soft_wrap=True)


def _refuse_overwrite(directory: Path, force: bool) -> None:
    existing = directory / DEFAULT_CONFIG_NAME
    if existing.exists() and not force:
        raise RuncostError(
            f"{existing} exists: the scenario would overwrite it; pick another DIRECTORY, or "
            "add --force to overwrite it"
        )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return f"{value:,.2f}"
    return str(value)


def _progress(message: str) -> None:
    # one line per stage; the per-model lines are there with a DEBUG logger
    level = logging.DEBUG if message.startswith("build: ") else logging.INFO
    logging.getLogger("runcost").log(level, message)


# one name per number: the report and docs/analyst-guide.md use these words for these columns
EXPERIMENT_COLUMNS = (
    "experiment", "attempts", "failed attempts", "marginal", "fully loaded",
    "failed attempts' cost (fully loaded)", "experiment-only cost (fully loaded)",
)  # fmt: skip


# every experiment in the order the summary lists them, for when it lists only the top ones
ALL_EXPERIMENTS_SQL = (
    "select experiment_id, effective_cost from marts.experiment_costs "
    "where allocation_model = 'fully_loaded' order by effective_cost desc, experiment_id"
)


def _print_run_summary(database: Path, run_id: str, top: int = 10) -> None:
    """The top experiments by fully loaded cost (all when top is 0) and the reconciliation."""
    from pipeline.cli.tables import Column, print_table
    from pipeline.warehouse.access import open_snapshot
    from pipeline.warehouse.queries import run_summary

    con = open_snapshot(database)
    try:
        summary = run_summary(con, top or None)
    finally:
        con.close()
    shown = len(summary.experiments)
    which = (
        f": the {'' if shown == 1 else f'{shown} '}costliest of {summary.experiment_count}"
        if summary.more_experiments
        else ""
    )
    print_table(
        f"Experiment costs, run {run_id}{which} (effective cost, rounded to the cent)",
        [Column(name, numeric=name != "experiment") for name in EXPERIMENT_COLUMNS],
        [[_cell(value) for value in astuple(row)] for row in summary.experiments],
    )
    if summary.more_experiments:
        console.print(
            f"and {summary.more_experiments} more "
            f"experiment{'' if summary.more_experiments == 1 else 's'}; all of them, costliest "
            f'first:\n  runcost sql "{ALL_EXPERIMENTS_SQL}"',
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    names = ("period", "currency", "bill", "attributed", "shared", "unallocated", "difference")
    print_table(
        "Reconciliation to the bill (effective cost, fully loaded)",
        [Column(name, numeric=name not in ("period", "currency")) for name in names],
        [[_cell(value) for value in astuple(row)] for row in summary.reconciliation],
    )


from pipeline.cli.status import status  # noqa: E402

main.add_command(status)

from pipeline.cli.sql import sql  # noqa: E402

main.add_command(sql)

from pipeline.cli.report import report  # noqa: E402

main.add_command(report)

from pipeline.cli.check import check  # noqa: E402

main.add_command(check)

from pipeline.cli.explain import explain  # noqa: E402

main.add_command(explain)

from pipeline.cli.diff import diff  # noqa: E402

main.add_command(diff)
