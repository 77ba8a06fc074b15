"""The HTML report: one self-contained page of SVG charts and tables over the published snapshot."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Any

import duckdb

from pipeline import __version__
from pipeline.report import data
from pipeline.report.analyst import analyst_sections
from pipeline.report.changes import changes_section
from pipeline.report.gpu_idle import gpu_idle_section
from pipeline.report.layout_check import CHECK_SCRIPT
from pipeline.report.svg import PALETTE, Stack, line_chart, scatter, stacked_bars

KIND_COLORS = {"attributed": "#4e79a7", "shared": "#f28e2b", "unallocated": "#bab0ac"}
STATUS_COLORS = {
    "succeeded": "#59a14f",
    "running": "#76b7b2",
    "failed": "#e15759",
    "timeout": "#b07aa1",
    "interrupted": "#f28e2b",
    "cancelled": "#9c755f",
    "experiment only": "#4e79a7",
    "unknown": "#bab0ac",
}
TOP_SERVICES = 8
EXPERIMENT_HEADERS = ["experiment", "team", "attempts", "failed attempts", "marginal"]
EXPERIMENT_HEADERS += ["fully loaded", "failed attempts' cost (fully loaded)"]
# Marts that hold experiment cost against quality, in the order tried; the first that exists is
# drawn (a snapshot without the economics marts has neither, and the report leaves it out).
COST_QUALITY_MARTS = ("marts.cost_quality_frontier", "marts.cost_quality")

STYLE = """
body { font-family: system-ui, sans-serif; color: #1f2937; margin: 24px auto; max-width: 1200px;
  padding: 0 16px; box-sizing: border-box; }
div.table { max-width: 100%; overflow-x: auto; }
p.basis { font-size: 14px; font-weight: 600; margin: 8px 0 4px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 36px; }
h3 { font-size: 14px; margin: 18px 0 6px; color: #374151; }
p.note, p.meta { color: #6b7280; font-size: 13px; margin: 4px 0; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { padding: 3px 5px; border-bottom: 1px solid #e5e7eb; text-align: left; }
td { white-space: nowrap; } th { vertical-align: bottom; }
td.wrap { white-space: normal; min-width: 5em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.legend { font-size: 12px; margin: 4px 0 8px; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.status-final { color: #166534; } .status-open, .status-provisional { color: #92400e; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg .mark:hover { opacity: 0.75; }
"""


def render(con: duckdb.DuckDBPyConnection, source: str, snapshots: Path | None = None) -> str:
    """The whole report as one HTML document; ``snapshots`` holds the kept snapshot folders
    (the previous one is read to show what changed in the report's basis)."""
    snapshot = data.snapshot(con)
    sections = [
        _spend_by_day(con),
        _experiments(con),
        *analyst_sections(con, _table),
        gpu_idle_section(con, _table),
        changes_section(con, snapshots, _table),
        _reconciliation(con),
        _tag_coverage(con),
        _cost_quality(con),
    ]
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    periods = ", ".join(snapshot.periods) or "none"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>runcost report {escape(snapshot.run_id)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>runcost: what training cost</h1>
<p class="meta">Snapshot {escape(snapshot.run_id)} · billing periods {escape(periods)} ·
{snapshot.cost_lines} cost lines · currencies {escape(", ".join(snapshot.currencies))} ·
generated {generated} by runcost {__version__}</p>
<p class="basis">All amounts: {escape(data.BASIS_LABEL)} (commitments amortized: Savings
Plans, Reserved Instances, committed use discounts; shared and unallocated cost spread over
attempts). Only the reconciliation shows every
basis and both models, as it ties each to the bill.</p>
<p class="note">Every number is a SQL aggregate over {escape(source)}.</p>
{"".join(section for section in sections if section)}
<script>{CHECK_SCRIPT}</script>
</body>
</html>
"""


def _spend_by_day(con: duckdb.DuckDBPyConnection) -> str:
    rows = data.daily_spend(con)
    parts = ["<section id='spend'><h2>Spend by day</h2>"]
    parts.append(
        "<p class='note'>Each cost line's slices (attributed to attempts, shared by pools, "
        "unallocated) by the UTC day of their charge period; a charge spanning several days "
        "(monthly tax) is spread by its seconds in each day.</p>"
    )
    if not rows:
        return parts[0] + "<p>No cost lines in this snapshot.</p></section>"
    for currency in sorted({row[0] for row in rows}):
        mine = [row for row in rows if row[0] == currency]
        days = sorted({row[1] for row in mine})
        one_year = len({day.year for day in days}) == 1
        labels = [day.strftime("%m-%d" if one_year else "%Y-%m-%d") for day in days]
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for row in mine:
            totals[row[2]] += row[4]
        ranked = sorted(totals, key=lambda name: (-abs(totals[name]), name))
        shown = ranked[:TOP_SERVICES]
        by_service: dict[str, list[float]] = {}
        by_kind: dict[str, list[float]] = {kind: [0.0] * len(days) for kind in KIND_COLORS}
        for _, day, service, kind, amount in mine:
            name = service if service in shown else "other services"
            by_service.setdefault(name, [0.0] * len(days))[days.index(day)] += float(amount)
            by_kind.setdefault(kind, [0.0] * len(days))[days.index(day)] += float(amount)
        order = [name for name in ranked if name in by_service]
        if "other services" in by_service:
            order.append("other services")
        services = [
            Stack(name, PALETTE[index % len(PALETTE)], by_service[name])
            for index, name in enumerate(order)
        ]
        kinds = [
            Stack(kind, KIND_COLORS.get(kind, "#888888"), values)
            for kind, values in by_kind.items()
        ]
        money = _money_formatter(currency)
        parts.append(f"<h3>By service ({escape(currency)})</h3>")
        parts.append(_legend([(stack.name, stack.color) for stack in services]))
        parts.append(
            stacked_bars(
                f"spend-by-service-{currency}",
                f"Spend by day and service, {currency}",
                labels,
                services,
                money=money,
            )
        )
        parts.append(f"<h3>Attributed, shared and unallocated ({escape(currency)})</h3>")
        parts.append(_legend([(stack.name, stack.color) for stack in kinds]))
        parts.append(
            stacked_bars(
                f"spend-by-kind-{currency}",
                f"Spend by day: attributed, shared, unallocated, {currency}",
                labels,
                kinds,
                money=money,
            )
        )
    split = data.service_split(con)
    parts.append("<h3>Per service over the snapshot</h3>")
    parts.append(
        _table(
            ["currency", "service", "attributed", "shared", "unallocated", "total"],
            split,
            numeric={2, 3, 4, 5},
        )
    )
    parts.append("</section>")
    return "\n".join(parts)


def _experiments(con: duckdb.DuckDBPyConnection) -> str:
    rows = data.experiment_status(con)
    parts = ["<section id='experiments'><h2>Cost per experiment</h2>"]
    parts.append(
        "<p class='note'>Fully loaded cost of every attempt, stacked by the attempt's status; "
        "'experiment only' is cost tagged to the experiment and to no attempt.</p>"
    )
    for currency in sorted({row[0] for row in rows if row[0] is not None}):
        mine = [row for row in rows if row[0] == currency]
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for _, experiment, _, amount in mine:
            totals[experiment] += amount
        experiments = sorted(totals, key=lambda name: (-totals[name], name))
        statuses = [name for name in STATUS_COLORS if any(row[2] == name for row in mine)]
        statuses += sorted({row[2] for row in mine} - set(statuses))
        stacks = []
        for status in statuses:
            values = [0.0] * len(experiments)
            for _, experiment, row_status, amount in mine:
                if row_status == status:
                    values[experiments.index(experiment)] += float(amount)
            stacks.append(Stack(status, STATUS_COLORS.get(status, "#888888"), values))
        parts.append(f"<h3>By attempt status ({escape(currency)})</h3>")
        parts.append(_legend([(stack.name, stack.color) for stack in stacks]))
        parts.append(
            stacked_bars(
                f"experiment-cost-{currency}",
                f"Cost per experiment by attempt status, {currency}",
                experiments,
                stacks,
                horizontal=True,
                money=_money_formatter(currency),
            )
        )
    parts.append("<h3>Marginal and fully loaded</h3>")
    parts.append(
        _table(
            EXPERIMENT_HEADERS,
            data.experiment_table(con),
            numeric={2, 3, 4, 5, 6},
        )
    )
    parts.append("</section>")
    return "\n".join(parts)


def _reconciliation(con: duckdb.DuckDBPyConnection) -> str:
    names, rows = data.reconciliation(con)
    # invoiced is what makes a period final: the status column says it, in a 900 px window
    drop = names.index("invoiced")
    names = names[:drop] + names[drop + 1 :]
    rows = [row[:drop] + row[drop + 1 :] for row in rows]
    status = names.index("period_status")
    numeric = {index for index, name in enumerate(names) if name in _RECONCILIATION_MONEY}
    numeric.add(names.index("cost_lines"))
    # thirteen columns fit a 900 px window only with short words: "fully loaded", "effective"
    model, basis = names.index("allocation_model"), names.index("cost_basis")
    shown = [
        tuple(
            value.replace("_", " ")
            if index == model
            else value.removesuffix("_cost")
            if index == basis
            else value
            for index, value in enumerate(row)
        )
        for row in rows
    ]
    headers = [_RECONCILIATION_HEADERS.get(name, name.replace("_", " ")) for name in names]
    wrap = {names.index(name) for name in ("billing_account_id", "allocation_model")}
    return (
        "<section id='reconciliation'><h2>Reconciliation to the bill</h2>"
        "<p class='note'>Per billing period, account, currency, model and cost basis: "
        "attributed + shared + unallocated = the bill, and the difference must be 0. "
        "A period is final once every line carries an invoice id (it is invoiced), open while the "
        "period runs, provisional after it ends until it is invoiced.</p>"
        + "<div class='table'>"
        + _table(headers, shown, numeric, status_column=status, wrap=wrap)
        + "</div></section>"
    )


_RECONCILIATION_MONEY = {"bill_total", "attributed", "shared", "unallocated", "difference"}
_RECONCILIATION_HEADERS = {
    "billing_period": "period",
    "billing_account_id": "account",
    "billing_currency": "currency",
    "allocation_model": "model",
    "cost_basis": "basis",
    "cost_lines": "lines",
    "period_status": "status",
}


def _tag_coverage(con: duckdb.DuckDBPyConnection) -> str:
    if not data.table_exists(con, "marts.tag_coverage"):
        return ""
    series, how = data.tag_coverage(con)
    parts = ["<section id='tag-coverage'><h2>Tag coverage over time</h2>"]
    if not series:
        parts.append(
            "<p class='note'>marts.tag_coverage has no time and coverage columns the report "
            f"knows how to draw ({escape(how)}).</p></section>"
        )
        return "\n".join(parts)
    parts.append(
        "<p class='note'>Share of cost that carries an attempt or experiment tag: "
        f"{escape(how)}.</p>"
    )
    lines = [(item.name, PALETTE[i % len(PALETTE)], item.points) for i, item in enumerate(series)]
    parts.append(_legend([(name, color) for name, color, _ in lines]))
    parts.append(line_chart("tag-coverage", "Tag coverage", lines))
    parts.append("</section>")
    return "\n".join(parts)


def _cost_quality(con: duckdb.DuckDBPyConnection) -> str:
    table = next((name for name in COST_QUALITY_MARTS if data.table_exists(con, name)), None)
    if table is None:
        return ""
    points, how = data.cost_quality(con, table)
    parts = ["<section id='cost-quality'><h2>Cost and quality</h2>"]
    if not points:
        parts.append(
            f"<p class='note'>{escape(table)} has no experiment, cost and metric columns the "
            f"report knows how to draw ({escape(how)}).</p></section>"
        )
        return "\n".join(parts)
    parts.append(
        f"<p class='note'>Each experiment's {escape(how)} from {escape(table)}; red points are "
        "on the frontier (no cheaper experiment measuring the same metric is as good); above "
        "the dashed line an experiment beat its own quality bar.</p>"
    )
    parts.append(
        scatter(
            "cost-quality",
            "Cost and quality",
            points,
            x_label="cost",
            y_label="quality / bar" if "relative" in how else "metric",
            reference=1.0 if "relative" in how else None,
        )
    )
    parts.append("</section>")
    return "\n".join(parts)


def _legend(items: list[tuple[str, str]]) -> str:
    spans = "".join(
        f"<span><i style='background:{color}'></i>{escape(name)}</span>" for name, color in items
    )
    return f"<div class='legend'>{spans}</div>"


def _table(
    headers: list[str],
    rows: list[tuple],
    numeric: set[int],
    status_column: int | None = None,
    wrap: set[int] | None = None,
) -> str:
    head = "".join(
        f"<th class='{'num' if index in numeric else ''}'>{escape(name)}</th>"
        for index, name in enumerate(headers)
    )
    body = []
    for row in rows:
        cells = []
        for index, value in enumerate(row):
            css = "num" if index in numeric else ""
            if index == status_column:
                css = f"status-{value}"
            elif wrap and index in wrap:
                css = "wrap"
            cells.append(f"<td class='{css}'>{escape(_display(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _display(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return f"{value:,.2f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _money_formatter(currency: str) -> Callable[[float], str]:
    def money(value: float) -> str:
        return f"{value:,.2f} {currency}"

    return money
