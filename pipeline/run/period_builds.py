"""What a run did with each billing month: built or carried forward, why, and whether its
published rows changed (written) or stayed (hard-linked from the previous snapshot)."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.run.fingerprints import ALL_DELIVERIES, month_of_part
from pipeline.warehouse.views import TableContent

BUILT_WITH_OTHERS = "built with the months that moved"
NOT_MOVED = "its inputs did not move"


def built(
    months: Iterable[str],
    moved: list[str],
    contents: list[TableContent],
    shared: dict[str, list[str]],
    carried: Iterable[str] = (),
) -> dict[str, dict[str, object]]:
    """Each month of a run that built: why (its own parts that moved, then the shared ones), and
    its rows: ``unchanged`` when every partitioned table linked the month's partition from the
    previous snapshot, ``changed`` when some table wrote it, ``none`` when no table has it.
    ``carried``: the months the run did not build (pipeline.run.carry), carried forward."""
    carried = set(carried)
    common = [part for part in moved if not month_of_part(part)]
    if carried:  # the one shared part that moved sums the built months' own deliveries
        common = [part for part in common if part != ALL_DELIVERIES]
    found: dict[str, dict[str, object]] = {}
    for month in sorted(set(months)):
        if month in carried:
            found[month] = {"action": "carried forward", "why": [NOT_MOVED], "rows": "unchanged"}
            continue
        own = [part.split(" ", 1)[1] for part in moved if month_of_part(part) == month]
        holding = {
            table.name
            for table in contents
            if any(value == month for value, _rows, _total in table.partitions)
        }
        linked = {name for name in holding if month in shared.get(name, [])}
        rows = "none" if not holding else "unchanged" if linked == holding else "changed"
        found[month] = {"action": "built", "why": own + common or [BUILT_WITH_OTHERS], "rows": rows}
    return found


def carried(months: Iterable[str]) -> dict[str, dict[str, object]]:
    """Each month of a run that found nothing new: carried forward as published."""
    return {
        month: {"action": "carried forward", "why": ["nothing new"], "rows": "unchanged"}
        for month in sorted(set(months))
    }
