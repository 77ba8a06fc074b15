"""The report's "what changed" section: cost moved against the previous snapshot, in the
report's basis (effective cost, fully loaded), or why there is nothing to compare."""

from __future__ import annotations

from html import escape
from pathlib import Path

import duckdb

from pipeline.report import data
from pipeline.report.analyst import Table
from pipeline.warehouse.queries.changes import (
    cost_changes,
    is_first_snapshot,
    previous_costs,
    previous_run_id,
)

MART = "marts.cost_changes"
BASIS = data.BASIS.removesuffix("_cost")
HEADERS = ["level", "experiment", "attempt", "previous", "now", "change", "reasons"]


def changes_section(con: duckdb.DuckDBPyConnection, snapshots: Path | None, table: Table) -> str:
    """The section's HTML; empty when the snapshot publishes no marts.cost_changes."""
    if not data.table_exists(con, MART):
        return ""
    note = (
        "Attempts and experiments whose cost (plus any unbilled estimate) moved against the "
        f"previous snapshot, and why; the reasons are found on billed cost. Amounts: "
        f"{data.BASIS_LABEL}. Source: {MART} and the previous snapshot's marts."
    )
    body = _body(con, snapshots, table)
    return (
        "<section id='changes'><h2>What changed since the last run</h2>"
        f"<p class='note'>{escape(note)}</p><div class='table'>{body}</div></section>"
    )


def _body(con: duckdb.DuckDBPyConnection, snapshots: Path | None, table: Table) -> str:
    if is_first_snapshot(con):
        return (
            "<p class='first-run'>This is the first snapshot: there is no previous one to "
            "compare with, so nothing is listed as changed. The next run lists what moved "
            "against this one.</p>"
        )
    run_id = previous_run_id(con)
    if run_id is None:
        return "<p>Nothing moved against the previous snapshot.</p>"
    previous = previous_costs(snapshots / run_id) if snapshots is not None else None
    if previous is None:
        return (
            f"<p>The previous snapshot {escape(run_id)} is no longer kept, so its "
            f"{escape(BASIS)} cost cannot be compared; keep snapshots longer with "
            "warehouse.snapshot_retention_days.</p>"
        )
    rows = [
        (
            row.change_level,
            row.experiment_id or "",
            row.attempt_id or "",
            row.previous_total,
            row.total,
            row.change,
            row.reasons,
        )
        for row in cost_changes(con, data.MODEL, BASIS, previous)
        if row.change
    ]
    if not rows:
        return f"<p>No {escape(BASIS)} cost moved against snapshot {escape(run_id)}.</p>"
    rows.sort(key=lambda row: (-abs(row[5]), row[0], row[1], row[2]))
    gone = "none (no longer in telemetry)"
    shown = [
        (
            *row[:3],
            "none (new)" if row[3] is None else row[3],
            gone if row[4] is None else row[4],
            *row[5:],
        )
        for row in rows
    ]
    return table(HEADERS, shown, {3, 4, 5})
