"""Kubernetes adapter: `kubectl get pods -o json` dumps -> canonical telemetry tables."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import table

log = logging.getLogger("runcost")

SOURCE = "kubernetes"
DEFAULTS: dict[str, Any] = {
    "attempt_label": "attempt_id",
    "experiment_label": "experiment_id",
    "parent_label": "parent_attempt_id",
    "nodes": None,  # `kubectl get nodes -o json` output, relative to the pods dump's folder
    "cluster": None,  # EKS cluster name; with account_id and region gives pod ARNs
    "account_id": None,
    "region": None,
    "on_error": "fail",
}
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
# Pod phase -> canonical status; Failed is refined by conditions and container reasons.
PHASES = {"Succeeded": "succeeded", "Failed": "failed", "Running": "running", "Pending": "running"}
# A pod folded with others of the same attempt: the first status of this order wins.
PRECEDENCE = ("running", "unknown", "interrupted", "timeout", "failed", "cancelled", "succeeded")
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
GPU_TYPE_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")
CAPACITY = {
    ("eks.amazonaws.com/capacityType", "ON_DEMAND"): "on_demand",
    ("eks.amazonaws.com/capacityType", "SPOT"): "spot",
    ("eks.amazonaws.com/capacityType", "CAPACITY_BLOCK"): "capacity_block",
    ("karpenter.sh/capacity-type", "on-demand"): "on_demand",
    ("karpenter.sh/capacity-type", "spot"): "spot",
    ("karpenter.sh/capacity-type", "reserved"): "reserved",
    ("cloud.google.com/gke-spot", "true"): "spot",
    ("cloud.google.com/gke-provisioning", "spot"): "spot",
}


def options(source: dict[str, object]) -> dict[str, Any]:
    """The source's settings: DEFAULTS, then top-level keys, then its `options` table."""
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in source.items() if k != "options"})
    merged.update(dict(source.get("options") or {}))  # type: ignore[call-overload]
    return merged


def read(source: dict[str, object], label: str) -> dict[str, pa.Table]:
    """Read a pods dump (and optional nodes dump) into attempts, attempt_resources, attempt_events.

    Pods carrying the experiment or attempt label are training pods; pods sharing one attempt
    label value are that attempt's workers and fold into one attempt row. Other pods are ignored.
    """
    opts = options(source)
    if not opts.get("path"):
        raise InputError(f"{label}: kubernetes source has no path; set path to a pods JSON dump")
    path = Path(str(opts["path"]))
    pods = _items(path, "Pod")
    nodes = {}
    if opts.get("nodes"):
        # A relative nodes path is beside the pods dump (options are not resolved by config).
        nodes_path = path.parent / str(opts["nodes"])
        nodes = {_meta(n).get("name"): n for n in _items(nodes_path, "Node")}
    groups: dict[str, list[dict]] = {}
    seen: dict[str, int] = {}
    errors: list[str] = []
    ignored = 0
    for index, pod in enumerate(pods, start=1):
        where = f"{path}: item {index} (pod {_pod_name(pod)})"
        labels = _meta(pod).get("labels") or {}
        attempt_id = _text(labels.get(opts["attempt_label"]))
        experiment_id = _text(labels.get(opts["experiment_label"]))
        if attempt_id is None and experiment_id is None:
            ignored += 1
            continue
        try:
            uid = _text(_meta(pod).get("uid"))
            if uid is None:
                raise InputError(f"{where}: metadata.uid is missing; dump pods with -o json")
            if uid in seen:
                raise InputError(
                    f"{where}: pod uid {uid} also appears as item {seen[uid]}; "
                    "dump each pod once (one kubectl get pods call per file)"
                )
            seen[uid] = index
            if attempt_id is None:
                raise InputError(
                    f"{where}: label {opts['attempt_label']} is missing; label the pod template "
                    f"with {opts['attempt_label']}=<attempt id>, or set attempt_label"
                )
            if experiment_id is None:
                raise InputError(
                    f"{where}: label {opts['experiment_label']} is missing; label the pod "
                    f"template with {opts['experiment_label']}=<experiment id>, or set "
                    "experiment_label"
                )
            row = _pod(pod, where, nodes, opts)
            groups.setdefault(attempt_id, []).append(row)
        except InputError as error:
            errors.append(str(error))
    if ignored:
        log.info("%s: %d pod(s) without attempt or experiment labels ignored", label, ignored)
    _report(errors, opts, label)
    attempts, resources, events = [], [], []
    for attempt_id, group in groups.items():
        try:
            attempts.append(_attempt(attempt_id, group, opts))
        except InputError as error:
            _report([str(error)], opts, label)
            continue
        resources.extend(dict(row, attempt_id=attempt_id) for p in group for row in p["resources"])
        events.extend(dict(row, attempt_id=attempt_id) for p in group for row in p["events"])
    unknown = [a for a in attempts if a["status"] == "unknown"]
    if unknown:
        raws = sorted({dict(a["tags"])["raw_status"] for a in unknown})
        log.warning("%s: %d attempt(s) with unknown pod phase %s", label, len(unknown), raws)
    return {
        "attempts": table("attempts", attempts),
        "attempt_resources": table("attempt_resources", resources),
        "attempt_events": table("attempt_events", events),
    }


def _report(errors: list[str], opts: dict[str, Any], label: str) -> None:
    if not errors:
        return
    if opts.get("on_error") == "skip":
        log.warning(
            '%s: skipped %d bad record(s) (telemetry.on_error = "skip"); first: %s',
            label,
            len(errors),
            errors[0],
        )
        return
    more = f" (and {len(errors) - 1} more bad record(s))" if len(errors) > 1 else ""
    raise InputError(f"{label}: {errors[0]}{more}")


def _items(path: Path, kind: str) -> list[dict]:
    """The objects of a `kubectl get <kind> -o json` dump (a List) or of a single object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found; write it with kubectl get ... -o json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(
            f"{path}: not JSON ({error}); write it with kubectl get {kind.lower()}s -o json"
        ) from None
    if isinstance(data, dict) and data.get("kind") == kind:
        return [data]
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        return [item for item in data["items"] if isinstance(item, dict)]
    raise InputError(
        f"{path}: not a {kind} list (no items array); write it with "
        f"kubectl get {kind.lower()}s -A -o json"
    )


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _pod_name(pod: dict) -> str:
    meta = _meta(pod)
    return f"{meta.get('namespace', '?')}/{meta.get('name', '?')}"


def _text(value: object) -> str | None:
    return str(value).strip() or None if value is not None else None


def parse_time(value: object, where: str) -> dt.datetime | None:
    """An RFC 3339 timestamp -> UTC datetime; None for empty; naive values are refused."""
    if value in (None, ""):
        return None
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(
            f"{where}: {value!r} is not an RFC 3339 timestamp; "
            "dump with kubectl -o json, which writes 2026-10-01T10:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise InputError(f"{where}: {value!r} has no time zone; write it with a trailing Z")
    return parsed.astimezone(dt.UTC)


def instance_from_provider_id(provider_id: str) -> tuple[str, str, str] | None:
    """(provider, resource_kind, instance id) from a node's spec.providerID, or None."""
    scheme, _, rest = provider_id.partition("://")
    parts = [part for part in rest.split("/") if part]
    if scheme == "aws" and parts and parts[-1].startswith("i-"):
        return "aws", "ec2_instance", parts[-1]
    if scheme == "gce" and len(parts) == 3:
        return "gcp", "gce_instance", parts[2]
    return None


def _pod(pod: dict, where: str, nodes: dict, opts: dict[str, Any]) -> dict[str, Any]:
    """One pod's attempt fields, resource rows and event rows."""
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    labels = meta.get("labels") or {}
    conditions = status.get("conditions") or []
    disruption = next(
        (
            c
            for c in conditions
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        None,
    )
    containers = status.get("containerStatuses") or []
    terminated = [(c.get("state") or {}).get("terminated") for c in containers]
    terminated = [t for t in terminated if t]
    phase = str(status.get("phase") or "")
    state = PHASES.get(phase, "unknown")
    reason = _failure_reason(status, terminated, disruption)
    if state == "failed":
        if disruption is not None:
            state = "interrupted"
        elif status.get("reason") == "DeadlineExceeded":
            state = "timeout"
        elif meta.get("deletionTimestamp"):
            state = "cancelled"
    started = parse_time(status.get("startTime"), f"{where}, status.startTime")
    ends = [parse_time(t.get("finishedAt"), f"{where}, finishedAt") for t in terminated]
    ended = max((e for e in ends if e), default=None) if state != "running" else None
    if ended is None and disruption is not None and state != "running":
        ended = parse_time(disruption.get("lastTransitionTime"), f"{where}, DisruptionTarget")
    if started and ended and ended < started:
        raise InputError(
            f"{where}: finishedAt {ended.isoformat()} is before status.startTime "
            f"{started.isoformat()}; the dump is inconsistent, dump the pod again"
        )
    gpus = _gpus(spec)
    node_name = spec.get("nodeName")
    node = nodes.get(node_name) or {}
    node_labels = _meta(node).get("labels") or {}
    found = instance_from_provider_id(str((node.get("spec") or {}).get("providerID") or ""))
    if node and found is None:
        log.warning("%s: node %s has no usable spec.providerID", where, node_name)
    resources = []
    # namespace/name: how a DCGM exporter labels the pod's GPU series (Prometheus by = "pod")
    pod_name = f"{meta.get('namespace')}/{meta.get('name')}"
    if found is not None:
        resources.append(
            {"resource_id": found[2], "resource_kind": found[1], "gpu_count": gpus}
            | {"started_at": started, "ended_at": ended, "pod": pod_name}
        )
    region = _first(node_labels, REGION_LABELS) or opts.get("region")
    if opts.get("cluster") and opts.get("account_id") and region:
        arn = (
            f"arn:aws:eks:{region}:{opts['account_id']}:pod/{opts['cluster']}/"
            f"{meta.get('namespace')}/{meta.get('name')}/{meta.get('uid')}"
        )
        resources.append(
            {"resource_id": arn, "resource_kind": "eks_pod", "gpu_count": gpus}
            | {"started_at": started, "ended_at": ended, "pod": pod_name}
        )
    events = []
    if disruption is not None:
        events.append(
            {
                "event_at": parse_time(disruption.get("lastTransitionTime"), where),
                "event_type": "interrupted",
                "details": f"pod {_pod_name(pod)}: DisruptionTarget {disruption.get('reason')}: "
                f"{disruption.get('message') or ''}".rstrip(": "),
            }
        )
    for container in containers:
        last = (container.get("lastState") or {}).get("terminated")
        if last and last.get("finishedAt"):
            events.append(
                {
                    "event_at": parse_time(last["finishedAt"], f"{where}, lastState"),
                    "event_type": "container_restarted",
                    "details": f"pod {_pod_name(pod)} container {container.get('name')}: "
                    f"{last.get('reason')} exit code {last.get('exitCode')}",
                }
            )
    capacity = next(
        (CAPACITY[(k, str(v))] for k, v in node_labels.items() if (k, str(v)) in CAPACITY), None
    )
    return {
        "uid": str(meta.get("uid")),
        "experiment_id": _text(labels.get(opts["experiment_label"])),
        "parent_attempt_id": _text(labels.get(opts["parent_label"])),
        "namespace": meta.get("namespace"),
        "node": node_name,
        "provider": found[0] if found else None,
        "region": region,
        "instance_type": _first(node_labels, INSTANCE_TYPE_LABELS),
        "gpu_type": _first(node_labels, GPU_TYPE_LABELS),
        "capacity_type": capacity,
        "gpu_count": gpus,
        "submitted_at": parse_time(meta.get("creationTimestamp"), f"{where}, creationTimestamp"),
        "started_at": started,
        "ended_at": ended,
        "status": state,
        "raw_status": phase,
        "failure_reason": reason if state not in ("running", "succeeded") else None,
        "resources": resources,
        "events": [e for e in events if e["event_at"] is not None],
    }


def _failure_reason(status: dict, terminated: list[dict], disruption: dict | None) -> str | None:
    if disruption is not None:
        return f"DisruptionTarget: {disruption.get('reason')}"
    failed = [t for t in terminated if t.get("exitCode") not in (0, None)]
    if failed:
        return f"{failed[0].get('reason') or 'Error'} (exit code {failed[0].get('exitCode')})"
    return status.get("reason")


def _first(labels: dict, keys: Iterable[str]) -> str | None:
    return next((str(labels[k]) for k in keys if labels.get(k)), None)


def _gpus(spec: dict) -> int:
    """GPUs a pod holds: the sum over containers of limits (else requests) of GPU resources."""
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        amounts = resources.get("limits") or resources.get("requests") or {}
        total += sum(int(amounts.get(name, 0)) for name in GPU_RESOURCES)
    return total


def _attempt(attempt_id: str, pods: list[dict], opts: dict[str, Any]) -> dict[str, Any]:
    """Fold the pods of one attempt (its workers) into one attempts row."""
    where = f"attempt {attempt_id} (pods {', '.join(sorted(p['uid'] for p in pods))})"
    experiments = {p["experiment_id"] for p in pods}
    if len(experiments) > 1:
        raise InputError(
            f"{where}: pods disagree on {opts['experiment_label']} ({sorted(experiments)}); "
            "give every pod of one attempt the same experiment label"
        )
    status = min((p["status"] for p in pods), key=PRECEDENCE.index)
    starts = [p["started_at"] for p in pods if p["started_at"]]
    ends = [p["ended_at"] for p in pods]
    first = min(pods, key=lambda p: p["started_at"] or dt.datetime.max.replace(tzinfo=dt.UTC))
    tags = {"source": SOURCE, "source_native_id": ",".join(sorted(p["uid"] for p in pods))}
    if status == "unknown":
        tags["raw_status"] = next(p["raw_status"] for p in pods if p["status"] == "unknown")
    submitted = [p["submitted_at"] for p in pods if p["submitted_at"]]
    return {
        "attempt_id": attempt_id,
        "experiment_id": experiments.pop(),
        "parent_attempt_id": first["parent_attempt_id"],
        "provider": first["provider"],
        "account_id": opts.get("account_id"),
        "region": first["region"],
        "cluster": opts.get("cluster"),
        "namespace": first["namespace"],
        "instance_type": first["instance_type"],
        "gpu_type": first["gpu_type"],
        "gpu_count": sum(p["gpu_count"] for p in pods),
        "node_count": len({p["node"] for p in pods if p["node"]}),
        "capacity_type": first["capacity_type"],
        "submitted_at": min(submitted, default=None),
        "started_at": min(starts, default=None),
        "ended_at": None if status == "running" or None in ends else max(ends),
        "status": status,
        "failure_reason": next((p["failure_reason"] for p in pods if p["failure_reason"]), None),
        "tags": tags,
    }
