"""Prometheus source: DCGM GPU utilisation of each attempt's held GPUs -> telemetry gpu_usage.

It measures the attempts the other sources reported, so it runs after them: the GPU intervals
of attempt_resources are read from `query_range` in batches of pods or hosts, each batch's time
span cut so no series exceeds Prometheus's 11,000 points, and every answer is folded into
windows (pipeline.telemetry.gpu_usage) before the next is asked for.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.gpu_usage import Target, Windows, epoch
from pipeline.telemetry.prometheus_api import Matrix, Settings, query_range, settings
from pipeline.telemetry.slurm_fields import parse_local_time

log = logging.getLogger("runcost")
# the labels a DCGM exporter names a GPU by, besides the pod's and the host's
GPU_LABELS = ("gpu", "UUID")
SHOWN = 10  # attempts named in the warning about missing samples


def read(
    source: dict[str, object], label: str, tables: dict[str, pa.Table], now: dt.datetime
) -> pa.Table:
    """The gpu_usage rows of every held GPU interval in ``tables["attempt_resources"]`` (an
    interval still open is measured up to ``now``)."""
    options = dict(source.get("options") or {})  # type: ignore[call-overload]
    config = settings(options, label)
    nodes: dict[str, list[tuple[str, float, float]]] = {}
    if config.by == "host":
        path = source.get("path")
        if path is None:
            raise InputError(
                f'{label}: by = "host" needs the node map: set path to a CSV '
                "node,instance_id,valid_from,valid_to (the Slurm node map format)"
            )
        nodes = node_map(Path(str(path)))
    targets = held_gpus(tables, config.by, now)
    windows = Windows(config.step, config.idle_below, config.by, config.metric)
    for keys, start, end in batches(targets, config, nodes):
        query = promql(config, keys)
        for chunk_start, chunk_end in chunks(start, end, config):
            matrix = query_range(config, label, query, chunk_start, chunk_end)
            fold(matrix, config, targets, nodes, windows)
    missing = sorted(
        {t.attempt_id for t in targets} - {t.attempt_id for t in windows.sampled_targets}
    )
    if missing:
        log.warning(
            "%s: %d attempt(s) have no %s sample in their held GPU intervals (coverage 0; "
            "Prometheus may have dropped data older than its retention, or the series lack the "
            "%s): %s",
            label,
            len(missing),
            config.metric,
            "namespace and pod labels"
            if config.by == "pod"
            else f"{config.host_label} label, or their instances are not in the node map",
            ", ".join(missing[:SHOWN]) + (" ..." if len(missing) > SHOWN else ""),
            extra={"stage": "telemetry"},
        )
    return windows.table(targets)


def held_gpus(tables: dict[str, pa.Table], by: str, now: dt.datetime) -> list[Target]:
    """The attempts' held GPU intervals: attempt_resources rows with GPUs (and, by pod, a pod).
    A row's empty start, end or GPU count is its attempt's (data dictionary); an interval still
    open ends at ``now``."""
    attempts = {
        row["attempt_id"]: row
        for row in tables["attempts"]
        .select(["attempt_id", "started_at", "ended_at", "gpu_count"])
        .to_pylist()
    }
    columns = ["attempt_id", "resource_id", "resource_kind", "started_at", "ended_at", "gpu_count"]
    rows = tables["attempt_resources"].select([*columns, "pod"]).to_pylist()
    # a pod's instance row holds its GPUs and its EKS ARN row repeats them: the ARN row counts
    # only for a pod without an instance row (a pods dump read without its nodes)
    placed = {(r["attempt_id"], r["pod"]) for r in rows if r["resource_kind"] != "eks_pod"}
    targets, seen = [], set()
    for row in rows:
        attempt = attempts.get(row["attempt_id"], {})
        gpus = row["gpu_count"] if row["gpu_count"] is not None else attempt.get("gpu_count")
        start = row["started_at"] or attempt.get("started_at")
        if not gpus or start is None:
            continue
        if by == "pod" and (
            row["pod"] is None
            or (row["resource_kind"] == "eks_pod" and (row["attempt_id"], row["pod"]) in placed)
        ):
            continue
        end = row["ended_at"] or attempt.get("ended_at") or now
        key = row["pod"] if by == "pod" else row["resource_id"]
        target = Target(
            row["attempt_id"], row["resource_id"], key, epoch(start), epoch(end), int(gpus)
        )
        if target.end > target.start and (target.attempt_id, key, target.start) not in seen:
            seen.add((target.attempt_id, key, target.start))
            targets.append(target)
    return targets


def node_map(path: Path) -> dict[str, list[tuple[str, float, float]]]:
    """host -> (instance id, valid from, valid to) from a node map CSV (times with a zone)."""
    import csv

    try:
        with path.open(newline="", encoding="utf-8") as handle:
            entries = list(csv.DictReader(handle))
    except OSError as error:
        raise InputError(f"{path}: cannot read the node map ({error})") from None
    header = set(entries[0]) if entries else set()
    missing = {"node", "instance_id", "valid_from", "valid_to"} - header
    if not entries or missing:
        raise InputError(
            f"{path}: the node map needs a header node,instance_id,valid_from,valid_to and a row "
            "per instance a host name was"
        )
    found: dict[str, list[tuple[str, float, float]]] = {}
    for line, entry in enumerate(entries, start=2):
        try:
            node, instance = entry["node"].strip(), entry["instance_id"].strip()
            if not node or not instance:
                raise ValueError("node and instance_id must not be empty")
            low, high = (
                parse_local_time(entry[c] or "", None, c) for c in ("valid_from", "valid_to")
            )
        except (ValueError, AttributeError) as error:
            raise InputError(f"{path}: line {line}: {error}") from None
        found.setdefault(node, []).append(
            (instance, epoch(low) if low else -np.inf, epoch(high) if high else np.inf)
        )
    return found


def batches(
    targets: list[Target], config: Settings, nodes: dict[str, list[tuple[str, float, float]]]
) -> Iterator[tuple[list[str], float, float]]:
    """(series keys, start, end) per query: up to `batch` pods, or hosts, whose intervals are
    near in time (sorted by start)."""
    if config.by == "pod":
        spans: dict[str, list[float]] = {}
        for target in targets:
            span = spans.setdefault(target.key, [target.start, target.end])
            span[0], span[1] = min(span[0], target.start), max(span[1], target.end)
    else:
        by_instance: dict[str, list[Target]] = {}
        for target in targets:
            by_instance.setdefault(target.key, []).append(target)
        spans = {}
        for host, entries in nodes.items():
            for instance, valid_from, valid_to in entries:
                for target in by_instance.get(instance, []):
                    low, high = max(target.start, valid_from), min(target.end, valid_to)
                    if high > low:
                        span = spans.setdefault(host, [low, high])
                        span[0], span[1] = min(span[0], low), max(span[1], high)
    ordered = sorted(spans.items(), key=lambda item: (item[1][0], item[0]))
    for first in range(0, len(ordered), config.batch):
        part = ordered[first : first + config.batch]
        yield [key for key, _ in part], min(s[0] for _, s in part), max(s[1] for _, s in part)


def chunks(start: float, end: float, config: Settings) -> Iterator[tuple[int, int]]:
    """Evaluation times of the steps covering [start, end], on multiples of the step, cut into
    queries of at most `points_per_query` steps."""
    step = config.step
    first = (int(start) // step + 1) * step  # the first step ending after start
    last = -(-int(np.ceil(end)) // step) * step  # the step holding end
    size = (config.points - 1) * step
    while first <= last:
        yield first, min(first + size, last)
        first += size + step


def promql(config: Settings, keys: list[str]) -> str:
    """The series of the keys, each step's mean, one series per GPU (an exporter restarted
    with other target labels continues the same GPU)."""
    if config.by == "pod":
        pairs = [key.split("/", 1) for key in keys]
        selector = (
            f'{config.namespace_label}=~"{_any(p[0] for p in pairs)}",'
            f'{config.pod_label}=~"{_any(p[1] for p in pairs)}"'
        )
        labels = (config.namespace_label, config.pod_label, config.host_label, *GPU_LABELS)
    else:
        selector = f'{config.host_label}=~"{_any(keys)}"'
        labels = (config.host_label, *GPU_LABELS)
    inner = f"avg_over_time({config.metric}{{{selector}}}[{config.step}s])"
    return f"max by ({', '.join(labels)}) ({inner})"


def _any(values: object) -> str:
    """An RE2 alternation of literal values, written inside a PromQL string."""
    escaped = sorted({re.escape(str(value)) for value in values})  # type: ignore[attr-defined]
    return "|".join(escaped).replace("\\", "\\\\").replace('"', '\\"')


def fold(
    matrix: Matrix,
    config: Settings,
    targets: list[Target],
    nodes: dict[str, list[tuple[str, float, float]]],
    windows: Windows,
) -> None:
    """Each series' samples into the windows of the targets it belongs to."""
    by_key: dict[str, list[Target]] = {}
    for target in targets:
        by_key.setdefault(target.key, []).append(target)
    bounds = np.searchsorted(matrix.series, np.arange(len(matrix.labels) + 1))
    host_gpus: dict[str, int] = {}
    if config.by == "host":
        for labels in matrix.labels:
            host = labels.get(config.host_label, "")
            host_gpus[host] = host_gpus.get(host, 0) + 1
    for index, labels in enumerate(matrix.labels):
        times = matrix.times[bounds[index] : bounds[index + 1]]
        values = matrix.values[bounds[index] : bounds[index + 1]]
        host = labels.get(config.host_label, "")
        gpu = labels.get("UUID") or f"{host}/gpu{labels.get('gpu', '')}"
        if config.by == "pod":
            key = f"{labels.get(config.namespace_label, '')}/{labels.get(config.pod_label, '')}"
            for target in by_key.get(key, []):
                windows.add(target, gpu, times, values, 1.0)
            continue
        for instance, valid_from, valid_to in nodes.get(host, []):
            for target in by_key.get(instance, []):
                # the host's GPUs are not told apart by attempt: each attempt holding some of
                # them takes its share of every GPU's seconds
                weight = min(1.0, target.gpus / host_gpus[host])
                inside = (times > valid_from) & (times - config.step < valid_to)
                clipped = Target(
                    target.attempt_id, target.resource_id, target.key,
                    max(target.start, valid_from), min(target.end, valid_to), target.gpus,
                )  # fmt: skip
                windows.add(clipped, gpu, times[inside], values[inside], weight)
                if clipped in windows.sampled_targets:
                    windows.sampled_targets.add(target)
