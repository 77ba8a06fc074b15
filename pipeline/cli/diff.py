"""runcost diff: how each attempt's and experiment's cost moved between two snapshots, and why."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from pipeline.cli.common import config_option, console, reports_errors
from pipeline.cli.tables import Column, print_table
from pipeline.config.loader import load_config
from pipeline.report.results import display_text, write_csv, write_json
from pipeline.run.as_of import cost_changes_between, resolve_pair
from pipeline.warehouse.queries.changes import (
    ALLOCATION_MODELS,
    COST_CHANGE_COLUMNS,
    MONEY_COLUMNS,
    CostChange,
    cost_changes,
    select_cost_changes,
)


@click.command()
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@config_option
@click.option(
    "--allocation-model",
    type=click.Choice(ALLOCATION_MODELS),
    default="both",
    show_default=True,
    help="Which allocation model's costs to compare (both: a row per model).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="table, or csv / json on standard output.",
)
@reports_errors
def diff(
    run_a: str | None,
    run_b: str | None,
    config_path: Path | None,
    allocation_model: str,
    output_format: str,
) -> None:
    """Print how costs moved from snapshot RUN_A to RUN_B, and why (marts.cost_changes).

    RUN_B defaults to the current snapshot and RUN_A to the kept snapshot before it; a run id
    may be shortened to a unique prefix. Totals are billed cost plus unbilled estimates.
    """
    warehouse = load_config(config_path).warehouse
    earlier, later = resolve_pair(warehouse, run_a, run_b)
    with tempfile.TemporaryDirectory(prefix="runcost-diff-") as scratch:
        con = cost_changes_between(earlier, later, Path(scratch))
        try:
            if output_format == "table":
                changes = cost_changes(con, allocation_model)
                _print(changes, earlier.name, later.name, allocation_model)
            else:
                writer = write_csv if output_format == "csv" else write_json
                writer(select_cost_changes(con, allocation_model), sys.stdout)
        finally:
            con.close()


def _print(rows: list[CostChange], earlier: str, later: str, allocation_model: str) -> None:
    models = "fully_loaded and marginal" if allocation_model == "both" else allocation_model
    if not rows:
        console.print(
            f"{earlier} -> {later}: no attempt or experiment cost moved ({models})",
            highlight=False,
        )
        return
    columns = [Column(name, numeric=name in MONEY_COLUMNS) for name in COST_CHANGE_COLUMNS]
    cells = [[display_text(value) for value in row.values()] for row in rows]
    print_table(f"Cost changes {earlier} -> {later} ({models}, billed basis)", columns, cells)
