"""The report's idle GPU section: idle accelerator cost per experiment from marts.gpu_utilisation,
and a timeline of the idle and busy windows (telemetry.gpu_usage) of the attempts idling most."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from html import escape

import duckdb

from pipeline.report import data
from pipeline.report.svg import Span, timeline

MART = "marts.gpu_utilisation"
WINDOWS = "telemetry.gpu_usage"
WORST_ATTEMPTS = 3
# GPUs drawn per attempt: the ones with the most idle time; a timeline of 64 rows reads as noise
TIMELINE_GPUS = 12
STATE_COLORS = {"idle": "#e15759", "busy": "#59a14f", "unsampled": "#bab0ac"}
HEADERS = ["experiment", "currency", "attempts", "held GPU-hours", "coverage"]
HEADERS += ["idle GPU-hours", "accelerator cost", "idle cost", "idle share", "unsampled cost"]

EXPERIMENTS = f"""
select
    experiment_id,
    billing_currency,
    count(*) as attempts,
    sum(held_gpu_hours) as held_gpu_hours,
    sum(sampled_gpu_hours) / nullif(sum(held_gpu_hours), 0) as coverage,
    sum(idle_gpu_hours) as idle_gpu_hours,
    sum(accelerator_cost) as accelerator_cost,
    sum(idle_cost) as idle_cost,
    sum(idle_cost) / nullif(sum(accelerator_cost), 0) as idle_share,
    sum(unsampled_cost) as unsampled_cost
from {MART}
where allocation_model = '{data.MODEL}'
group by experiment_id, billing_currency
order by sum(idle_cost) desc, sum(idle_gpu_hours) desc, experiment_id, billing_currency
"""

WORST = f"""
select attempt_id, experiment_id, billing_currency, idle_cost, coverage, method
from {MART}
where allocation_model = '{data.MODEL}' and idle_gpu_hours > 0
order by idle_cost desc, idle_gpu_hours desc, attempt_id
limit {WORST_ATTEMPTS}
"""

ATTEMPT_WINDOWS = f"""
select
    resource_id,
    gpu,
    state,
    epoch(started_at) as started,
    epoch(ended_at) as ended,
    sum(epoch(ended_at) - epoch(started_at)) filter (where state = 'idle')
        over (partition by resource_id, gpu) as idle_seconds
from {WINDOWS}
where attempt_id = ?
order by idle_seconds desc nulls last, resource_id, gpu nulls last, started
"""

Table = Callable[[list[str], list[tuple], set[int]], str]


def gpu_idle_section(con: duckdb.DuckDBPyConnection, table: Table) -> str:
    """The section's HTML; empty when the snapshot does not publish the mart."""
    if not data.table_exists(con, MART):
        return ""
    parts = ["<section id='gpu-idle'><h2>Idle GPU cost</h2>"]
    rows = con.execute(EXPERIMENTS).fetchall()
    if not rows:
        parts.append(
            "<p class='note'>No GPU utilisation measured in this snapshot: no prometheus "
            "telemetry source reported DCGM samples for the attempts (docs/telemetry.md).</p>"
        )
        return "\n".join([*parts, "</section>"])
    parts.append(
        "<p class='note'>Measured GPU utilisation (DCGM samples from Prometheus) beside each "
        "experiment's accelerator cost. Idle cost is that cost's share of the held GPU-hours "
        "sampled idle; coverage is the share of held GPU-hours that had samples (an unsampled "
        f"hour is neither idle nor busy: its cost is unsampled cost). Amounts: "
        f"{escape(data.BASIS_LABEL)}. Source: {MART}.</p>"
    )
    shown = [_experiment_row(row) for row in rows]
    parts.append(f"<div class='table'>{table(HEADERS, shown, {2, 3, 4, 5, 6, 7, 8, 9})}</div>")
    parts.extend(_timelines(con))
    parts.append("</section>")
    return "\n".join(parts)


def _experiment_row(row: tuple) -> tuple:
    experiment, currency, attempts, held, coverage, idle, cost, idle_cost, share, unsampled = row
    return (
        experiment,
        currency,
        attempts,
        f"{held:,.1f}",
        _percent(coverage),
        f"{idle:,.1f}",
        cost,
        idle_cost,
        _percent(share),
        unsampled,
    )


def _timelines(con: duckdb.DuckDBPyConnection) -> list[str]:
    worst = con.execute(WORST).fetchall()
    if not worst or not data.table_exists(con, WINDOWS):
        return []
    parts = [
        "<h3>Timelines of the attempts idling most</h3>",
        "<div class='legend'>"
        + "".join(
            f"<span><i style='background:{color}'></i>{state}</span>"
            for state, color in STATE_COLORS.items()
        )
        + "<span>blank: no sample</span></div>",
    ]
    for index, (attempt, experiment, currency, idle_cost, coverage, method) in enumerate(worst):
        windows = con.execute(ATTEMPT_WINDOWS, [attempt]).fetchall()
        if not windows:
            continue
        rows: dict[str, list[Span]] = {}
        for resource, gpu, state, started, ended, _ in windows:
            label = f"{resource} · {gpu if gpu is not None else 'no sample'}"
            if label not in rows and len(rows) == TIMELINE_GPUS:
                continue
            tip = f"{label} · {state} {_clock(started)} to {_clock(ended)} UTC"
            rows.setdefault(label, []).append(
                Span(float(started), float(ended), STATE_COLORS.get(state, "#888888"), tip)
            )
        gpus = len({(resource, gpu) for resource, gpu, *_ in windows})
        start = min(float(row[3]) for row in windows)
        end = max(float(row[4]) for row in windows)
        cost = f"{idle_cost:,.2f} {currency}" if currency else "no accelerator cost"
        held = f" (the {TIMELINE_GPUS} of its {gpus} GPUs idle longest)" if gpus > len(rows) else ""
        parts.append(
            f"<p class='note'>{escape(attempt)} ({escape(experiment)}): idle cost "
            f"{escape(cost)}, coverage {_percent(coverage)}, matched "
            f"{escape(method.replace('prometheus_', 'by '))}"
            f"{escape(held)}; {_clock(start)} to {_clock(end)} UTC.</p>"
        )
        parts.append(
            timeline(
                f"gpu-timeline-{index + 1}",
                f"GPU idle and busy windows of {attempt}",
                [(label[:34], spans) for label, spans in rows.items()],
                start,
                end,
                _tick(end - start),
            )
        )
    return parts


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%Y-%m-%d %H:%M")


def _tick(span: float) -> Callable[[float], str]:
    form = "%H:%M" if span <= 86400 else "%m-%d %H:%M"
    return lambda epoch: datetime.fromtimestamp(epoch, UTC).strftime(form)
