"""The history benchmark's result as text: CPU seconds per stage and night, ratios, targets."""

from __future__ import annotations

from bench.baselines import STAGES
from bench.history import NIGHTS, REDELIVERED
from bench.targets import history_targets

HEADINGS = {
    "first": "first",
    "one_month_first": "1-mo first",
    "redelivery": "re-delivery",
    "one_month_redelivery": "1-mo re-del.",
    "nothing_new": "nothing new",
}
WIDTH = 13


def _row(label: str, values: list[str]) -> str:
    return f"{label:<22}" + "".join(f"{value:>{WIDTH}}" for value in values)


def _load(values: list[float]) -> str:
    return " ".join(f"{value:.2f}" for value in values)


def render_history(result: dict) -> str:
    """Stage CPU seconds (rows) by night (columns), then totals, memory, status and ratios."""
    nights = result["nights"]
    names = [name for name, _world, _what in NIGHTS if name in nights]
    months = result["history_months"]
    first = nights["first"]["expected"]
    machine = result["machine"]
    lines = [
        f"{months} months x {result['rows_per_month']:,} requested lines "
        f"({first['cost_lines']:,} cost lines, {first['attempts']:,} attempts, "
        f"{first['billing_periods'][0]}..{first['billing_periods'][-1]}), "
        f"{'skew' if result['skew'] else 'uniform'}, engine={result['engine']}, "
        f"memory_limit={result['memory_limit']}",
        f"machine: {machine['cores']} cores, load {_load(machine['load_average'])} at start, "
        f"{_load(result['load_average_end'])} at end (1, 5, 15 min)",
        f"re-delivery: {REDELIVERED}",
        f"worlds: first / re-delivery / nothing new hold {months} months; 1-mo holds the newest; "
        f"every night's clock {result['clock']}",
        "",
        _row("CPU s", [HEADINGS[name] for name in names]),
    ]
    for stage in STAGES:
        cells = [nights[name]["stages"].get(stage, {}).get("cpu_seconds") for name in names]
        if any(cells):
            lines.append(_row(stage, [f"{cell or 0:.2f}" for cell in cells]))
    rows = {
        "run (CPU s)": [f"{nights[name]['run_cpu_seconds']:.2f}" for name in names],
        "child process (CPU s)": [f"{nights[name]['process_cpu_seconds']:.2f}" for name in names],
        "run (wall s)": [f"{nights[name]['total_seconds']:.2f}" for name in names],
        "peak RSS MB": [f"{nights[name]['peak_rss_mb']:,.0f}" for name in names],
        "status": [str(nights[name]["status"]) for name in names],
        "correct": [str(nights[name]["correct"]) for name in names],
    }
    lines.extend(_row(label, cells) for label, cells in rows.items())
    for name in names:
        problems = nights[name]["problems"]
        if problems:
            lines.append(f"{name}: {'; '.join(problems)}")
    newest = nights["nothing_new"]["record"].get("periods") or []
    statuses = ", ".join(f"{item['billing_period']} {item['period_status']}" for item in newest)
    lines.append(f"period statuses (nothing-new night): {statuses or 'not recorded'}")
    lines.append("ratios (CPU seconds of the run; of the whole child process in brackets):")
    ratios = result["ratios"]
    for name in ("redelivery_over_one_month", "nothing_new_over_first"):
        if f"{name}_cpu" in ratios:
            lines.append(
                f"  {name}: {ratios[f'{name}_cpu']:.2f}x ({ratios[f'{name}_process_cpu']:.2f}x)"
            )
    lines.append("targets:")
    lines.extend("  " + verdict.line() for verdict in history_targets(result))
    return "\n".join(lines)
