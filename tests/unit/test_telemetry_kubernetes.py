"""Kubernetes adapter: pods and nodes dumps -> attempts, attempt_resources, attempt_events."""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry import adapters, kubernetes
from pipeline.telemetry.canonical import arrow_schema

LABEL = "telemetry.sources[1] (kubernetes)"


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def pod(name, uid, node, labels, phase, start, end=None, gpus=8, conditions=(), exit_code=0):
    state = {"terminated": {"exitCode": exit_code, "finishedAt": end}} if end else {"running": {}}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": uid,
            "labels": labels,
            "creationTimestamp": "2026-10-01T09:55:00Z",
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
        "status": {
            "phase": phase,
            "startTime": start,
            "conditions": list(conditions),
            "containerStatuses": [{"name": "train", "state": state}],
        },
    }


def node(name: str, provider_id: str, capacity: str = "SPOT") -> dict:
    labels = {
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "eks.amazonaws.com/capacityType": capacity,
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
    }
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id},
    }


PREEMPTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "preempted by a higher priority pod",
    "lastTransitionTime": "2026-10-01T11:00:00Z",
}
A1 = {"attempt_id": "a1", "experiment_id": "exp1"}
A2 = {"attempt_id": "a2", "experiment_id": "exp1", "parent_attempt_id": "a1"}
PODS = [
    pod("w0", "u-0", "n1", A1, "Failed", "2026-10-01T10:00:00Z", "2026-10-01T11:00:05Z",
        conditions=[PREEMPTED], exit_code=137),
    pod("w1", "u-1", "n2", A1, "Failed", "2026-10-01T10:00:02Z", "2026-10-01T11:00:03Z",
        conditions=[PREEMPTED], exit_code=137),
    pod("w0-retry", "u-2", "n1", A2, "Succeeded", "2026-10-01T11:10:00Z", "2026-10-01T12:00:00Z"),
    pod("coredns", "u-9", "n1", {"k8s-app": "kube-dns"}, "Running", "2026-09-01T00:00:00Z"),
]  # fmt: skip
NODES = [node("n1", "aws:///us-east-1a/i-0aaa"), node("n2", "aws:///us-east-1b/i-0bbb")]


def dump(tmp_path: Path, pods: list[dict], nodes: list[dict] | None = None, **opts) -> dict:
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": pods}))
    source: dict = {"kind": "kubernetes", "path": tmp_path / "pods.json", "options": opts}
    if nodes is not None:
        (tmp_path / "nodes.json").write_text(json.dumps({"kind": "NodeList", "items": nodes}))
        source["options"]["nodes"] = "nodes.json"
    return source


def test_workers_fold_into_attempts_with_instances_and_events(tmp_path: Path) -> None:
    tables = kubernetes.read(dump(tmp_path, PODS, NODES), LABEL)
    for name, table in tables.items():
        assert table.schema == arrow_schema(name)
    attempts = {row["attempt_id"]: row for row in tables["attempts"].to_pylist()}
    assert sorted(attempts) == ["a1", "a2"]
    a1, a2 = attempts["a1"], attempts["a2"]
    assert (a1["status"], a1["started_at"], a1["ended_at"]) == (
        "interrupted",
        at("2026-10-01T10:00:00"),
        at("2026-10-01T11:00:05"),
    )
    assert (a1["gpu_count"], a1["node_count"], a1["capacity_type"]) == (16, 2, "spot")
    assert (a1["instance_type"], a1["region"], a1["provider"]) == (
        "p4d.24xlarge",
        "us-east-1",
        "aws",
    )
    assert a1["gpu_type"] == "NVIDIA-A100-SXM4-40GB"
    assert a1["failure_reason"] == "DisruptionTarget: PreemptionByScheduler"
    assert dict(a1["tags"]) == {"source": "kubernetes", "source_native_id": "u-0,u-1"}
    assert (a2["status"], a2["parent_attempt_id"], a2["failure_reason"]) == (
        "succeeded",
        "a1",
        None,
    )
    assert a2["ended_at"] == at("2026-10-01T12:00:00")
    resources = sorted(
        (r["attempt_id"], r["resource_id"], r["resource_kind"], r["gpu_count"], r["ended_at"])
        for r in tables["attempt_resources"].to_pylist()
    )
    assert resources == [
        ("a1", "i-0aaa", "ec2_instance", 8, at("2026-10-01T11:00:05")),
        ("a1", "i-0bbb", "ec2_instance", 8, at("2026-10-01T11:00:03")),
        ("a2", "i-0aaa", "ec2_instance", 8, at("2026-10-01T12:00:00")),
    ]
    events = [
        (e["attempt_id"], e["event_type"], e["event_at"])
        for e in tables["attempt_events"].to_pylist()
    ]
    assert events == [("a1", "interrupted", at("2026-10-01T11:00:00"))] * 2


def test_pod_arns_for_eks_split_rows(tmp_path: Path) -> None:
    source = dump(tmp_path, PODS[2:3], NODES, cluster="train", account_id="123456789012")
    resources = kubernetes.read(source, LABEL)["attempt_resources"].to_pylist()
    assert [(r["resource_id"], r["resource_kind"]) for r in resources] == [
        ("i-0aaa", "ec2_instance"),
        ("arn:aws:eks:us-east-1:123456789012:pod/train/ml/w0-retry/u-2", "eks_pod"),
    ]


def test_without_nodes_dump_no_resources_and_running_pod_stays_open(tmp_path: Path) -> None:
    running = pod("w", "u-5", "n1", {"attempt_id": "a5", "experiment_id": "e"}, "Running",
                  "2026-10-01T10:00:00Z")  # fmt: skip
    tables = kubernetes.read(dump(tmp_path, [running]), LABEL)
    [row] = tables["attempts"].to_pylist()
    assert (row["status"], row["ended_at"], row["provider"]) == ("running", None, None)
    assert tables["attempt_resources"].num_rows == 0


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [
        ("aws:///us-east-1a/i-0123456789abcdef0", ("aws", "ec2_instance", "i-0123456789abcdef0")),
        (
            "gce://my-project/us-central1-a/gke-pool-1-abcd",
            ("gcp", "gce_instance", "gke-pool-1-abcd"),
        ),
        ("aws:///us-east-1a/fargate-ip-10-0-0-1", None),
        ("kind://docker/kind/kind-control-plane", None),
        ("", None),
    ],
)
def test_provider_id(provider_id: str, expected: tuple | None) -> None:
    assert kubernetes.instance_from_provider_id(provider_id) == expected


def test_custom_label_keys(tmp_path: Path) -> None:
    labels = {"runcost/attempt": "x1", "runcost/experiment": "ex"}
    one = pod("w", "u-7", "n1", labels, "Succeeded", "2026-10-01T10:00:00Z", "2026-10-01T10:30:00Z")
    source = dump(
        tmp_path, [one], attempt_label="runcost/attempt", experiment_label="runcost/experiment"
    )
    [row] = kubernetes.read(source, LABEL)["attempts"].to_pylist()
    assert (row["attempt_id"], row["experiment_id"]) == ("x1", "ex")


def bad(tmp_path: Path, change) -> dict:
    pods = copy.deepcopy(PODS[2:3])
    change(pods)
    return dump(tmp_path, pods)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: p[0]["metadata"]["labels"].pop("attempt_id"),
            "item 1 (pod ml/w0-retry): label attempt_id is missing; label the pod template "
            "with attempt_id=<attempt id>, or set attempt_label",
        ),
        (
            lambda p: p[0]["status"].update(startTime="2026-10-01T11:10:00"),
            "item 1 (pod ml/w0-retry), status.startTime: '2026-10-01T11:10:00' has no time zone; "
            "write it with a trailing Z",
        ),
        (
            lambda p: p[0]["status"].update(startTime="2026-10-01T13:00:00Z"),
            "item 1 (pod ml/w0-retry): finishedAt 2026-10-01T12:00:00+00:00 is before "
            "status.startTime 2026-10-01T13:00:00+00:00",
        ),
        (
            lambda p: p.append(copy.deepcopy(p[0])),
            "item 2 (pod ml/w0-retry): pod uid u-2 also appears as item 1",
        ),
    ],
)
def test_bad_pod_names_it(tmp_path: Path, change, message: str) -> None:
    with pytest.raises(InputError) as caught:
        kubernetes.read(bad(tmp_path, change), LABEL)
    text = str(caught.value)
    assert text.startswith(f"{LABEL}: {tmp_path / 'pods.json'}: ")
    assert message in text


def test_skip_drops_only_the_bad_pod_and_reports(tmp_path: Path, caplog) -> None:
    pods = copy.deepcopy(PODS)
    pods[2]["status"]["startTime"] = "yesterday"
    source = dump(tmp_path, pods, NODES)
    source["on_error"] = "skip"
    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = kubernetes.read(source, LABEL)
    assert tables["attempts"].column("attempt_id").to_pylist() == ["a1"]
    assert "skipped 1 bad record(s)" in caplog.text
    assert "'yesterday' is not an RFC 3339 timestamp" in caplog.text


def test_unknown_phase_is_kept_and_reported(tmp_path: Path, caplog) -> None:
    pods = copy.deepcopy(PODS[2:3])
    pods[0]["status"]["phase"] = "Unknown"
    with caplog.at_level(logging.WARNING, logger="runcost"):
        [row] = kubernetes.read(dump(tmp_path, pods), LABEL)["attempts"].to_pylist()
    assert row["status"] == "unknown"
    assert dict(row["tags"])["raw_status"] == "Unknown"
    assert "1 attempt(s) with unknown pod phase ['Unknown']" in caplog.text


def test_not_a_pod_list(tmp_path: Path) -> None:
    (tmp_path / "pods.json").write_text('{"apiVersion": "v1"}')
    with pytest.raises(InputError, match=r"not a Pod list \(no items array\)"):
        kubernetes.read({"kind": "kubernetes", "path": tmp_path / "pods.json"}, LABEL)


def test_workers_disagreeing_on_experiment_are_refused(tmp_path: Path) -> None:
    pods = copy.deepcopy(PODS[:2])
    pods[1]["metadata"]["labels"] = A1 | {"experiment_id": "exp2"}
    with pytest.raises(InputError) as caught:
        kubernetes.read(dump(tmp_path, pods), LABEL)
    assert str(caught.value) == (
        f"{LABEL}: attempt a1 (pods u-0, u-1): pods disagree on experiment_id "
        "(['exp1', 'exp2']); give every pod of one attempt the same experiment label"
    )


def test_read_through_the_adapter_registry(tmp_path: Path) -> None:
    source = dump(tmp_path, PODS, NODES) | {"on_error": "fail"}
    tables = adapters.read(source, LABEL)
    assert tables["attempts"].column("attempt_id").to_pylist() == ["a1", "a2"]
    assert tables["attempt_resources"].num_rows == 3
