"""The benchmark's result as text: the machine, the stage table, ratios and targets."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from bench.baselines import STAGES
from bench.targets import run_targets


def machine() -> dict:
    """Where the numbers came from: CPU, cores, memory, load, software versions."""
    import duckdb
    import pyarrow

    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(int(memory) / 1024 / 1024, 1),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "pyarrow": pyarrow.__version__,
    }


def size(folder: Path) -> int:
    """Bytes of every file under folder."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def summarize(result: dict) -> None:
    """Stage table rows, ratios and targets, from the children's numbers."""
    pipe = result["pipeline"]
    rows = result["expected"]["cost_lines"]
    total = pipe["total_seconds"]
    result["rows_per_second"] = rows / total
    ratios: dict[str, float] = {}
    if "floor" in result:
        ratios["pipeline_over_floor"] = total / result["floor"]["seconds"]
        ratios["pipeline_over_floor_cpu"] = pipe["cpu_seconds"] / result["floor"]["cpu_seconds"]
    if "pandas" in result:
        pandas = result["pandas"]
        per_million = total / rows * pandas["lines"]
        ratios["pandas_over_pipeline"] = pandas["seconds"] / per_million
        attribution = pipe["stages"]["attribution"]["seconds"] / rows * pandas["lines"]
        ratios["pandas_over_pipeline_attribution"] = pandas["seconds"] / attribution
        cpu_per_subset = pipe["cpu_seconds"] / rows * pandas["lines"]
        ratios["pandas_over_pipeline_cpu"] = pandas["cpu_seconds"] / cpu_per_subset
        # like for like: pandas does the attribution alone, the pipeline's stage of it in CPU
        stage_cpu = pipe["stages"]["attribution"]["cpu_seconds"] / rows * pandas["lines"]
        ratios["pandas_over_pipeline_attribution_cpu"] = pandas["cpu_seconds"] / stage_cpu
        ratios["pandas_rss_over_pipeline_rss"] = pandas["peak_rss_mb"] / pipe["peak_rss_mb"]
    if "nightly" in result:
        ratios["nightly_over_first_cpu"] = result["nightly"]["cpu_seconds"] / pipe["cpu_seconds"]
    result["ratios"] = ratios


def render(result: dict) -> str:
    """The stage table and the ratios as text."""
    pipe = result["pipeline"]
    rows = result["expected"]["cost_lines"]
    lines = [
        f"{result['spec']['rows']:,} requested, {rows:,} cost lines, "
        f"{result['expected']['attempts']:,} attempts, "
        f"{'skew' if result['spec']['skew'] else 'uniform'}, engine={result.get('engine')}, "
        f"source={_source(result)}, "
        f"memory_limit={result['memory_limit']}, load {result['machine']['load_average']}",
        f"{'stage':<12} {'seconds':>9} {'CPU s':>8} {'rows/s':>12} {'peak RSS MB':>12}",
    ]
    for stage in STAGES:
        item = pipe["stages"].get(stage)
        if item:
            rate = rows / item["seconds"] if item["seconds"] > 0 else float("inf")
            lines.append(
                f"{stage:<12} {item['seconds']:>9.2f} {item['cpu_seconds']:>8.2f} {rate:>12,.0f} "
                f"{item['peak_rss_mb']:>12,.0f}"
            )
    lines.append(
        f"{'total':<12} {pipe['total_seconds']:>9.2f} {pipe['cpu_seconds']:>8.2f} "
        f"{result['rows_per_second']:>12,.0f} "
        f"{pipe['peak_rss_mb']:>12,.0f}"
    )
    disk = pipe.get("disk_peaks", {})
    if disk:
        lines.append(
            "peak disk: "
            + ", ".join(
                f"{name} {peak['bytes'] / 2**20:,.0f} MB ({peak['stage']})"
                for name, peak in disk.items()
            )
        )
    if "floor" in result:
        floor = result["floor"]
        lines.append(
            f"{'floor scan':<12} {floor['seconds']:>9.2f} {floor['cpu_seconds']:>8.2f} "
            f"{rows / floor['seconds']:>12,.0f} "
            f"{floor['peak_rss_mb']:>12,.0f}"
        )
    if "pandas" in result:
        pandas = result["pandas"]
        lines.append(
            f"{'pandas 1M':<12} {pandas['seconds']:>9.2f} {pandas['cpu_seconds']:>8.2f} "
            f"{pandas['lines'] / pandas['seconds']:>12,.0f} {pandas['peak_rss_mb']:>12,.0f}"
        )
    if "nightly" in result:
        nightly = result["nightly"]
        same = nightly["published"] == pipe["published"]
        lines.append(
            f"{'nightly':<12} {nightly['total_seconds']:>9.2f} {nightly['cpu_seconds']:>8.2f} "
            f"{rows / nightly['total_seconds']:>12,.0f} {nightly['peak_rss_mb']:>12,.0f}  "
            f"(over the first run's snapshot; correct: {nightly['correct']}, same totals: {same})"
        )
    for name, value in result["ratios"].items():
        lines.append(f"{name}: {value:.2f}")
    lines.append(f"correct: {pipe['correct']} ({'; '.join(pipe['problems']) or 'all checks'})")
    if pipe.get("skipped"):
        lines.append(f"not compared: {'; '.join(pipe['skipped'])}")
    lines.append(f"join plan: {pipe.get('plan', {})}")
    lines.append(f"identical to the previous run on this data: {result['repeat_identical']}")
    lines.append("targets (bench/targets.py judges the ones that compare runs):")
    lines.extend("  " + verdict.line() for verdict in run_targets(result))
    return "\n".join(lines)


def _source(result: dict) -> str:
    source = result.get("source", "aws")
    return f"{source} ({result['source_format']})" if result.get("source_format") else source
