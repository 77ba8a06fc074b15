"""The Slurm node map (node, instance_id, valid_from, valid_to) -> canonical attempt_resources."""

from __future__ import annotations

import csv
import datetime as dt
import logging
from pathlib import Path
from zoneinfo import ZoneInfo

from pipeline.common.errors import InputError
from pipeline.telemetry.slurm_fields import parse_local_time

log = logging.getLogger("runcost")


def node_resources(rows: list[dict], path: Path, zone: ZoneInfo | None) -> list[dict]:
    """attempt_resources: the instances each attempt's nodes were, clipped to the attempt."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            entries = list(csv.DictReader(handle))
            header = set(entries[0]) if entries else set()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the node map ({exc})") from exc
    missing = {"node", "instance_id", "valid_from", "valid_to"} - header
    if entries and missing:
        raise InputError(
            f"{path}: the node map needs columns node,instance_id,valid_from,valid_to; "
            f"{', '.join(sorted(missing))} missing"
        )
    by_node: dict[str, list[tuple[str, dt.datetime | None, dt.datetime | None]]] = {}
    for line, entry in enumerate(entries, start=2):
        node, instance = (entry["node"] or "").strip(), (entry["instance_id"] or "").strip()
        try:
            if not node or not instance:
                raise ValueError("node and instance_id must not be empty")
            valid = (parse_local_time(entry[c] or "", zone, c) for c in ("valid_from", "valid_to"))
            by_node.setdefault(node, []).append((instance, *valid))
        except ValueError as exc:
            raise InputError(f"{path}: line {line}: {exc}") from None
    resources, unmapped = [], set()
    for row in rows:
        nodes, start, end, gpus = row["nodes"], row["started_at"], row["ended_at"], row["gpu_count"]
        if start is None:
            continue
        each = gpus // len(nodes) if gpus is not None and nodes and gpus % len(nodes) == 0 else None
        for node in nodes:
            if node not in by_node:
                unmapped.add(node)
            for instance, valid_from, valid_to in by_node.get(node, []):
                lo = max(start, valid_from) if valid_from else start
                ends = [t for t in (end, valid_to) if t is not None]
                hi = min(ends) if ends else None
                if hi is None or hi > lo:
                    kind = "ec2_instance" if instance.startswith("i-") else "instance"
                    resources.append(
                        {
                            "attempt_id": row["attempt_id"],
                            "resource_id": instance,
                            "resource_kind": kind,
                            "started_at": lo,
                            "ended_at": hi,
                            "gpu_count": each,
                        }
                    )
    if unmapped:
        shown = ", ".join(sorted(unmapped)[:10])
        log.warning("%s: %d Slurm node(s) are not in the node map: %s", path, len(unmapped), shown)
    return resources
