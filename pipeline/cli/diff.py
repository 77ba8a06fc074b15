"""runcost diff: how each attempt's and experiment's cost moved between two snapshots, and why."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click
from rich.table import Table

from pipeline.cli.common import config_option, console, reports_errors
from pipeline.config.loader import load_config
from pipeline.report.results import display_text, write_csv, write_json
from pipeline.run.as_of import cost_changes_between, resolve_pair

COLUMNS = (
    "change_level", "experiment_id", "attempt_id", "previous_total", "total", "change",
    "previous_cost_status", "cost_status", "reasons",
)  # fmt: skip


@click.command()
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@config_option
@click.option(
    "--allocation-model",
    type=click.Choice(["marginal", "fully_loaded"]),
    default="marginal",
    show_default=True,
    help="Which allocation model's costs to compare.",
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
    query = (
        f"select {', '.join(COLUMNS)} from marts.cost_changes where allocation_model = ? "
        "order by change_level, experiment_id, attempt_id"
    )
    with tempfile.TemporaryDirectory(prefix="runcost-diff-") as scratch:
        con = cost_changes_between(earlier, later, Path(scratch))
        try:
            cursor = con.execute(query, [allocation_model])
            if output_format == "csv":
                write_csv(cursor, sys.stdout)
            elif output_format == "json":
                write_json(cursor, sys.stdout)
            else:
                _print(cursor.fetchall(), earlier.name, later.name, allocation_model)
        finally:
            con.close()


def _print(rows: list[tuple], earlier: str, later: str, allocation_model: str) -> None:
    table = Table(title=f"Cost changes {earlier} -> {later} ({allocation_model}, billed basis)")
    for name in COLUMNS:
        numeric = name in ("previous_total", "total", "change")
        table.add_column(name, justify="right" if numeric else "left")
    for row in rows:
        table.add_row(*(display_text(value) for value in row))
    console.print(table)
    if not rows:
        console.print("no attempt or experiment cost moved", highlight=False)
