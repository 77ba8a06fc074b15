"""runcost diff: how each attempt's and experiment's cost moved between two snapshots, and why."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from pipeline.cli.common import config_option, console, published_database, reports_errors
from pipeline.cli.tables import Column, print_table
from pipeline.common.errors import RuncostError
from pipeline.config.loader import load_config
from pipeline.report.results import display_text, write_csv, write_json
from pipeline.run.as_of import cost_changes_between, resolve_pair
from pipeline.warehouse.access import open_snapshot
from pipeline.warehouse.queries.changes import (
    ALLOCATION_MODELS,
    COST_BASES,
    COST_CHANGE_COLUMNS,
    MART_BASIS,
    MONEY_COLUMNS,
    CostChange,
    PreviousCosts,
    cost_changes,
    is_first_snapshot,
    previous_costs,
    select_cost_changes,
)
from pipeline.warehouse.snapshots import DATABASE_NAME, current_snapshot, kept_snapshots


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
    "--basis",
    type=click.Choice(COST_BASES),
    default="effective",
    show_default=True,
    help="Which cost to compare: effective (amortized, as the report shows), billed, list or "
    "net; totals are that cost plus the unbilled estimate.",
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
    basis: str,
    output_format: str,
) -> None:
    """Print how costs moved from snapshot RUN_A to RUN_B, and why (marts.cost_changes).

    RUN_B defaults to the current snapshot and RUN_A to the kept snapshot before it; a run id
    may be shortened to a unique prefix. Totals are the --basis cost plus unbilled estimates;
    reasons are found on billed cost. After the first run there is nothing to compare yet.
    """
    warehouse = load_config(config_path).warehouse
    if run_a is None and run_b is None and _first_run(warehouse):
        return
    earlier, later = resolve_pair(warehouse, run_a, run_b)
    previous = _previous(earlier, basis)
    with tempfile.TemporaryDirectory(prefix="runcost-diff-") as scratch:
        con = cost_changes_between(earlier, later, Path(scratch))
        try:
            if is_first_snapshot(con):
                raise RuncostError(
                    f"{earlier}: has no snapshot.json, so {later.name} cannot be compared with "
                    "it; name two runs published by this runcost (runcost diff RUN_A RUN_B)"
                )
            if output_format == "table":
                changes = cost_changes(con, allocation_model, basis, previous)
                _print(changes, earlier.name, later.name, allocation_model, basis)
            else:
                writer = write_csv if output_format == "csv" else write_json
                writer(select_cost_changes(con, allocation_model, basis, previous), sys.stdout)
        finally:
            con.close()


def _first_run(warehouse: Path) -> bool:
    """Say so and return True when the current snapshot is the only one ever kept."""
    current = current_snapshot(warehouse)
    kept = kept_snapshots(warehouse / "snapshots")
    if current is None or len(kept) != 1 or kept[0][0].name != current["run_id"]:
        return False
    # one kept snapshot is the first only if it compared with none (older ones may be pruned)
    con = open_snapshot(published_database(database=warehouse / DATABASE_NAME))
    try:
        if not is_first_snapshot(con):
            return False
    finally:
        con.close()
    console.print(
        f"{current['run_id']} is the first snapshot: there is no earlier one to compare it with. "
        "The next run's changes are listed against it.",
        highlight=False,
    )
    return True


def _previous(earlier: Path, basis: str) -> PreviousCosts | None:
    if basis == MART_BASIS:
        return None
    previous = previous_costs(earlier)
    if previous is None:
        raise RuncostError(
            f"{earlier}: holds no marts.attempt_costs and marts.experiment_costs to compare "
            f"{basis} cost with; use --basis billed (compared through its run history)"
        )
    return previous


def _print(
    rows: list[CostChange], earlier: str, later: str, allocation_model: str, basis: str
) -> None:
    models = "fully_loaded and marginal" if allocation_model == "both" else allocation_model
    if not rows:
        console.print(
            f"{earlier} -> {later}: no attempt or experiment {basis} cost moved ({models})",
            highlight=False,
        )
        return
    columns = [Column(name, numeric=name in MONEY_COLUMNS) for name in COST_CHANGE_COLUMNS]
    cells = [[display_text(value) for value in row.values()] for row in rows]
    print_table(f"Cost changes {earlier} -> {later} ({models}, {basis} basis)", columns, cells)
