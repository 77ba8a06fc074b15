"""The DCGM scenario the prometheus tests measure: samples, attempts, the pods they held, and
the hand-worked figures of marts.gpu_utilisation on it.

The scenario, 2026-10-01 10:00-12:00 UTC, one sample a minute at :30 (scrapes are not on the
minute), idle below 5 %:

- att-a and att-b share i-node1 (8 GPUs, $32 an hour of accelerator): 4 GPUs each, by pod.
  a0 is idle (0 %) 10:30-11:00, else 80 %; a1 has a gap 11:00-11:20 (no sample, not zero); the
  exporter of a2 and a3 restarted at 11:00 (a new series, same GPU labels). b0-b3 are idle (2 %)
  10:00-11:00, then 100 %.
- att-c's pod was rescheduled: train-c-0 on i-node2 10:00-11:00, train-c-1 on i-node3
  11:00-12:00 (4 GPUs each, $6 an hour). c0 idle 10:00-10:15, c4 idle (3 %) all
  hour, the others 60 %.
- att-d held i-node4 ($6 an hour) 10:00-11:00 and Prometheus has no sample of it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from builders import at
from prometheus_server import Sample

METRIC = "DCGM_FI_DEV_GPU_UTIL"
CLOCK = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)


def minutes(start: dt.datetime, count: int) -> list[float]:
    """The sample times of `count` minutes from `start`, each at :30."""
    return [start.timestamp() + 30 + 60 * n for n in range(count)]


def gpu(uuid: str, host: str, pod: str, **extra: str) -> dict[str, str]:
    return {"UUID": uuid, "gpu": uuid[-1], "Hostname": host, "namespace": "ml", "pod": pod, **extra}


def scenario_samples() -> list[Sample]:
    found = []

    def series(labels: dict[str, str], start: dt.datetime, count: int, value: float) -> None:
        found.extend(Sample(labels, t, value) for t in minutes(start, count))

    exporter = {"instance": "10.0.0.7:9400"}
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(10), 30, 80)
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(10, 30), 30, 0)
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(11), 60, 80)
    series(gpu("GPU-a1", "gpu-01", "train-a-0"), at(10), 60, 80)
    series(gpu("GPU-a1", "gpu-01", "train-a-0"), at(11, 20), 40, 80)  # 11:00-11:20: no sample
    for uuid in ("GPU-a2", "GPU-a3"):  # the exporter restarted at 11:00 with another address
        series(gpu(uuid, "gpu-01", "train-a-0", **exporter), at(10), 60, 80)
        series(gpu(uuid, "gpu-01", "train-a-0", instance="10.0.0.9:9400"), at(11), 60, 80)
    for n in range(4):
        series(gpu(f"GPU-b{n}", "gpu-01", "train-b-0"), at(10), 60, 2)
        series(gpu(f"GPU-b{n}", "gpu-01", "train-b-0"), at(11), 60, 100)
    series(gpu("GPU-c0", "gpu-02", "train-c-0"), at(10), 15, 0)
    series(gpu("GPU-c0", "gpu-02", "train-c-0"), at(10, 15), 45, 60)
    for n in (1, 2, 3):
        series(gpu(f"GPU-c{n}", "gpu-02", "train-c-0"), at(10), 60, 60)
    series(gpu("GPU-c4", "gpu-03", "train-c-1"), at(11), 60, 3)
    for n in (5, 6, 7):
        series(gpu(f"GPU-c{n}", "gpu-03", "train-c-1"), at(11), 60, 60)
    # another namespace's pod of the same name: selected by the regex, never matched
    series({**gpu("GPU-x0", "gpu-09", "train-a-0"), "namespace": "other"}, at(10), 60, 0)
    return found


ATTEMPTS = [
    {"attempt_id": "att-a", "experiment_id": "exp-1", "status": "succeeded"},
    {"attempt_id": "att-b", "experiment_id": "exp-2", "status": "succeeded"},
    {"attempt_id": "att-c", "experiment_id": "exp-1", "status": "succeeded"},
    {"attempt_id": "att-d", "experiment_id": "exp-2", "status": "failed"},
]
RESOURCES = [  # attempt, instance, pod, start, end, GPUs
    ("att-a", "i-node1", "ml/train-a-0", at(10), at(12), 4),
    ("att-b", "i-node1", "ml/train-b-0", at(10), at(12), 4),
    ("att-c", "i-node2", "ml/train-c-0", at(10), at(11), 4),
    ("att-c", "i-node3", "ml/train-c-1", at(11), at(12), 4),
    ("att-d", "i-node4", "ml/train-d-0", at(10), at(11), 4),
]


def write_telemetry(folder: Path, kind: str = "ec2_instance") -> Path:
    """The scenario's canonical telemetry files (attempt_resources with the pods, each a `kind`)."""
    folder.mkdir(parents=True, exist_ok=True)
    spans = {}
    for attempt, _instance, _pod, start, end, _gpus in RESOURCES:
        low, high = spans.get(attempt, (start, end))
        spans[attempt] = (min(low, start), max(high, end))
    lines = ["attempt_id,experiment_id,status,started_at,ended_at,gpu_count"]
    for row in ATTEMPTS:
        start, end = spans[row["attempt_id"]]
        lines.append(
            f"{row['attempt_id']},{row['experiment_id']},{row['status']},"
            f"{start.isoformat()},{end.isoformat()},4"
        )
    (folder / "attempts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["attempt_id,resource_id,resource_kind,started_at,ended_at,gpu_count,pod"]
    for attempt, instance, pod, start, end, gpus in RESOURCES:
        lines.append(
            f"{attempt},{instance},{kind},{start.isoformat()},{end.isoformat()},{gpus},{pod}"
        )
    (folder / "attempt_resources.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def source_config(folder: Path, url: str, kind: str = "ec2_instance", **options: object) -> dict:
    """The [telemetry] section: the scenario's files and a prometheus source by pod at `url`."""
    return {
        "telemetry": {
            "path": str(write_telemetry(folder / "telemetry", kind)),
            "sources": [{"kind": "prometheus", "options": {"url": url, "by": "pod", **options}}],
        }
    }


# marts.gpu_utilisation, the same under both allocation models, worked by hand:
# (held, sampled GPU-hours, coverage, busy, idle GPU-hours, idle windows, accelerator cost,
# idle_cost, unsampled_cost).
# held GPU-hours: 4 GPUs x 2 h (a, b), 4 x 1 h on each of two nodes (c), 4 x 1 h (d)
# sampled: a lost a1's 20 minutes (460 of 480 GPU-minutes); d has none
# busy: a 0.8 x (90 + 100 + 120 + 120) min = 344 min; b 4 x 60 min x (0.02 + 1.0) = 244.8 min;
#   c 0.6 x (45 + 3 x 60 + 3 x 60) min + 0.03 x 60 min = 244.8 min
# idle: a0 30 min; b 4 x 60 min; c0 15 min + c4 60 min
# cost: half of i-node1's $64 each for a and b (they hold it by GPU-seconds alike), c $6 + $6,
#   d $6; idle_cost = cost x idle / held; unsampled_cost = cost x (held - sampled) / held
EXPECTED = {
    "att-a": (8.0, 460 / 60, 460 / 480, 344 / 60, 0.5, 1, "32", "2", "1.3333333333"),
    "att-b": (8.0, 8.0, 1.0, 244.8 / 60, 4.0, 4, "32", "16", "0"),
    "att-c": (8.0, 8.0, 1.0, 244.8 / 60, 1.25, 2, "12", "1.875", "0"),
    "att-d": (4.0, 0.0, 0.0, 0.0, 0.0, 0, "6", "0", "6"),
}


def configure(folder: Path, url: str) -> Path:
    """The demo world's runcost.toml with a prometheus source by host, through the node map the
    world writes beside its DCGM samples (pipeline/scenario/dcgm.py)."""
    config = folder / "runcost.toml"
    text = config.read_text(encoding="utf-8").split("\n[[telemetry.sources]]")[0]
    config.write_text(
        text + f'\n[[telemetry.sources]]\nkind = "prometheus"\npath = "dcgm/nodes.csv"\n'
        f'[telemetry.sources.options]\nurl = "{url}"\nby = "host"\n',
        encoding="utf-8",
    )
    return config
