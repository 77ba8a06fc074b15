"""runcost explain: where each dollar of one attempt came from, by method, pool and service."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import click
import duckdb

from pipeline.cli.common import config_option, console, database_option, reports_errors
from pipeline.cli.tables import Column, print_table
from pipeline.common.errors import RuncostError
from pipeline.warehouse.access import open_snapshot, published_database

BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
MODELS = ("fully_loaded", "marginal")
_GROUPS = f"""
select
    allocation_method,
    coalesce(pool_name, '') as pool_name,
    coalesce(driver, '') as driver,
    service_name,
    count(distinct line_id) as cost_lines,
    {", ".join(f"sum({basis}) as {basis}" for basis in BASES)}
from marts.allocation_detail
where attempt_id = ? and allocation_model = ?
group by all
order by allocation_method, pool_name, service_name
"""
_TOTALS = f"""
select experiment_id, status, billing_currency, {", ".join(BASES)}
from marts.attempt_costs
where attempt_id = ? and allocation_model = ?
"""


@dataclass(frozen=True)
class Explanation:
    """One attempt's cost under one model: the groups it came from and the mart's totals."""

    attempt_id: str
    experiment_id: str
    status: str
    allocation_model: str
    currency: str | None
    groups: list[dict[str, object]]
    totals: dict[str, Decimal]

    def group_sums(self) -> dict[str, Decimal]:
        """Each basis summed over the groups (equal to `totals` by construction of the marts)."""
        return {
            basis: sum((Decimal(row[basis]) for row in self.groups), Decimal(0))  # type: ignore[arg-type]
            for basis in BASES
        }


def explain_attempt(
    con: duckdb.DuckDBPyConnection, attempt_id: str, allocation_model: str = "fully_loaded"
) -> Explanation:
    """Group marts.allocation_detail for one attempt and model; totals from marts.attempt_costs."""
    found = con.execute(_TOTALS, [attempt_id, allocation_model]).fetchone()
    if found is None:
        raise RuncostError(
            f"attempt {attempt_id!r} is not in marts.attempt_costs of the published snapshot; "
            'list the attempts with: runcost sql "select attempt_id from marts.attempt_costs"'
        )
    cursor = con.execute(_GROUPS, [attempt_id, allocation_model])
    names = [column[0] for column in cursor.description]
    groups = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return Explanation(
        attempt_id=attempt_id,
        experiment_id=found[0],
        status=found[1],
        allocation_model=allocation_model,
        currency=found[2],
        groups=groups,
        totals=dict(zip(BASES, (Decimal(value) for value in found[3:]), strict=True)),
    )


def _money(value: object) -> str:
    return f"{Decimal(value):,.6f}"  # type: ignore[arg-type]


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
            str(row["allocation_method"]),
            str(row["pool_name"]),
            str(row["driver"]),
            str(row["service_name"]),
            str(row["cost_lines"]),
            *(_money(row[basis]) for basis in BASES),
        ]
        for row in result.groups
    ]
    footer = ["total", "", "", "", "", *(_money(result.totals[basis]) for basis in BASES)]
    print_table(title, columns, rows, footer=footer)
    if result.group_sums() != result.totals:
        raise RuncostError(
            f"the slices of {attempt_id} do not add up to marts.attempt_costs "
            f"({result.group_sums()} against {result.totals}); the snapshot is inconsistent"
        )
    console.print("totals equal marts.attempt_costs", highlight=False)
