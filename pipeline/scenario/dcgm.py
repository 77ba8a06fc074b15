"""The demo world's DCGM series: the GPU utilisation a DCGM exporter published for the vision
sweep's two spot nodes, as OpenMetrics beside the telemetry (backfilled into Prometheus with
`promtool tsdb create-blocks-from openmetrics`), and the node map its Hostname labels need.

- gpu-v1 (i-0b7e4d1c2a9f80011, att-vis-01, 4 GPUs 2026-10-05 09:00-12:00): every GPU idle (0 %)
  the first hour, then 90 % busy.
- gpu-v2 (i-0b7e4d1c2a9f80012, att-vis-02, 4 GPUs 09:00-11:30): 75 % busy but GPU 3, idle (1 %)
  09:00-09:30; the exporter was down 10:00-10:30 (no sample, not zero) and came back as a new
  series (another `instance` label) for the same GPUs.

One sample a minute at :30 (scrapes are not on the minute).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.scenario.billing import utc

METRIC = "DCGM_FI_DEV_GPU_UTIL"
FOLDER = "dcgm"
NODES = (("gpu-v1", "i-0b7e4d1c2a9f80011"), ("gpu-v2", "i-0b7e4d1c2a9f80012"))

Sample = tuple[dict[str, str], float, float]  # labels, epoch seconds, percent


def samples() -> list[Sample]:
    """Every sample of the two nodes' GPUs."""
    found: list[Sample] = []
    start = utc(5, 9).timestamp()
    for gpu in range(4):
        labels = {"Hostname": "gpu-v1", "gpu": str(gpu), "UUID": f"GPU-v1-{gpu}"}
        labels["instance"] = "10.0.1.11:9400"
        for minute in range(180):
            found.append((labels, start + 30 + 60 * minute, 0.0 if minute < 60 else 90.0))
    for gpu in range(4):
        labels = {"Hostname": "gpu-v2", "gpu": str(gpu), "UUID": f"GPU-v2-{gpu}"}
        for minute in range(150):
            if 60 <= minute < 90:
                continue  # the exporter is down
            value = 1.0 if gpu == 3 and minute < 30 else 75.0
            address = "10.0.1.12:9400" if minute < 60 else "10.0.1.22:9400"
            found.append(({**labels, "instance": address}, start + 30 + 60 * minute, value))
    return found


def openmetrics(found: list[Sample]) -> str:
    """The samples as one OpenMetrics gauge family, each series' samples in time order."""
    series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for labels, at, value in found:
        series.setdefault(tuple(sorted(labels.items())), []).append((at, value))
    lines = [f"# TYPE {METRIC} gauge"]
    for key, points in series.items():
        names = ",".join(f'{name}="{value}"' for name, value in key)
        lines += [f"{METRIC}{{{names}}} {value} {at:.3f}" for at, value in sorted(points)]
    return "\n".join([*lines, "# EOF", ""])


def write_dcgm(folder: Path) -> Path:
    """Write samples.om and nodes.csv (node,instance_id,valid_from,valid_to) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "samples.om").write_text(openmetrics(samples()), encoding="utf-8")
    rows = [f"{node},{instance},2026-10-01T00:00:00Z," for node, instance in NODES]
    text = "\n".join(["node,instance_id,valid_from,valid_to", *rows, ""])
    (folder / "nodes.csv").write_text(text, encoding="utf-8")
    return folder
