"""Where each dollar of one attempt came from: its allocation slices grouped by method and pool."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import duckdb

from pipeline.common.errors import RuncostError

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
class CostGroup:
    """The slices of one attempt with one method, pool, driver and service, in the four bases.

    ``group["effective_cost"]`` reads one basis, as the marts name it.
    """

    allocation_method: str
    pool_name: str
    driver: str
    service_name: str
    cost_lines: int
    amounts: dict[str, Decimal]

    def __getitem__(self, basis: str) -> Decimal:
        return self.amounts[basis]


@dataclass(frozen=True)
class Explanation:
    """One attempt's cost under one model: the groups it came from and the mart's totals."""

    attempt_id: str
    experiment_id: str
    status: str
    allocation_model: str
    currency: str | None
    groups: list[CostGroup]
    totals: dict[str, Decimal]

    def group_sums(self) -> dict[str, Decimal]:
        """Each basis summed over the groups (equal to `totals` by construction of the marts)."""
        return {basis: sum((group[basis] for group in self.groups), Decimal(0)) for basis in BASES}


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
    groups = [
        CostGroup(
            allocation_method=method,
            pool_name=pool,
            driver=driver,
            service_name=service,
            cost_lines=lines,
            amounts={basis: Decimal(value) for basis, value in zip(BASES, rest, strict=True)},
        )
        for method, pool, driver, service, lines, *rest in con.execute(
            _GROUPS, [attempt_id, allocation_model]
        ).fetchall()
    ]
    return Explanation(
        attempt_id=attempt_id,
        experiment_id=found[0],
        status=found[1],
        allocation_model=allocation_model,
        currency=found[2],
        groups=groups,
        totals=dict(zip(BASES, (Decimal(value) for value in found[3:]), strict=True)),
    )
