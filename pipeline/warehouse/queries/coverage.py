"""marts.tag_coverage of the published snapshot, and the share of cost that carries a tag."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipeline.common.duck import connect
from pipeline.warehouse.snapshots import DATABASE_NAME, reader_settings


def tag_coverage(warehouse: Path) -> list[dict[str, Any]] | None:
    """marts.tag_coverage of the published snapshot; None before the first published run."""
    database = warehouse / DATABASE_NAME
    if not database.is_file():
        return None
    con = connect(database, read_only=True, settings=reader_settings(database))
    try:
        cursor = con.execute(
            "select provider, source_format, billing_period, sub_account_id, service_name, "
            "billing_currency, total_cost, attempt_tagged_share, experiment_tagged_share, "
            "attempt_tag_keys, experiment_tag_keys from marts.tag_coverage "
            "order by provider, source_format, billing_period, sub_account_id, total_cost desc, "
            "service_name"
        )
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    except duckdb.CatalogException:
        return None
    finally:
        con.close()


def overall_share(rows: list[dict[str, Any]], column: str) -> Decimal | None:
    """Cost-weighted share over rows (one currency assumed), None when the total is 0."""
    total = sum((Decimal(row["total_cost"]) for row in rows), Decimal(0))
    if not total:
        return None
    tagged = sum(
        (Decimal(row["total_cost"]) * Decimal(row[column] or 0) for row in rows), Decimal(0)
    )
    return (tagged / total).quantize(Decimal("0.0001"))
