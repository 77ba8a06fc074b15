"""runcost explain: where each dollar of one attempt came from, by method, pool and service."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import click

from pipeline.cli.common import (
    config_option,
    console,
    database_option,
    published_database,
    reports_errors,
)
from pipeline.cli.tables import Column, print_table
from pipeline.common.errors import RuncostError
from pipeline.warehouse.access import open_snapshot
from pipeline.warehouse.queries.explain import BASES, MODELS, explain_attempt


def _money(value: Decimal) -> str:
    return f"{value:,.6f}"


@click.command()
@click.argument("attempt_id")
@click.option(
    "--model",
    "allocation_model",
    type=click.Choice(MODELS),
    default="fully_loaded",
    show_default=True,
    help="The allocation model to explain.",
)
@config_option
@database_option
@reports_errors
def explain(
    attempt_id: str, allocation_model: str, config_path: Path | None, database: Path | None
) -> None:
    """Print where each dollar of ATTEMPT_ID came from: per method (tag, split_cost,
    resource_time, pool, split_unused), pool and driver, and service, in the four bases, with
    totals equal to marts.attempt_costs.
    """
    con = open_snapshot(published_database(config_path, database))
    try:
        result = explain_attempt(con, attempt_id, allocation_model)
    finally:
        con.close()
    title = (
        f"{result.attempt_id} ({result.experiment_id}, {result.status}): "
        f"{result.allocation_model}, {result.currency or 'no cost'}"
    )
    columns = [Column(name) for name in ("method", "pool", "driver", "service")]
    columns += [Column("lines", numeric=True)]
    columns += [Column(basis.removesuffix("_cost"), numeric=True) for basis in BASES]
    rows = [
        [
            group.allocation_method,
            group.pool_name,
            group.driver,
            group.service_name,
            str(group.cost_lines),
            *(_money(group[basis]) for basis in BASES),
        ]
        for group in result.groups
    ]
    footer = ["total", "", "", "", "", *(_money(result.totals[basis]) for basis in BASES)]
    print_table(title, columns, rows, footer=footer)
    if result.group_sums() != result.totals:
        raise RuncostError(
            f"the slices of {attempt_id} do not add up to marts.attempt_costs "
            f"({result.group_sums()} against {result.totals}); the snapshot is inconsistent"
        )
    console.print("totals equal marts.attempt_costs", highlight=False)
