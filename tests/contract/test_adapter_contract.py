"""Contract: one scenario through every telemetry source yields the same canonical rows."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import empty_store

from pipeline.telemetry import adapters
from pipeline.telemetry.canonical import arrow_schema

UTC = dt.UTC
TORONTO_OFFSET = dt.timedelta(hours=-4)  # America/Toronto on 2026-10-01 (EDT)
ACCOUNT = "123456789012"


def at(hhmm: str) -> dt.datetime:
    """2026-10-01 at hh:mm UTC."""
    hour, minute = map(int, hhmm.split(":"))
    return dt.datetime(2026, 10, 1, hour, minute, tzinfo=UTC)


def iso(hhmm: str) -> str:
    return at(hhmm).isoformat().replace("+00:00", "Z")


# The scenario. a1 (experiment exp-a) succeeded on 8 GPUs of i-0aaa; b1 (exp-b) failed after
# 20 minutes on 1 GPU of i-0bbb; b2 is b1's retry (parent b1) and succeeded on i-0bbb.
ATTEMPTS = [
    {
        "attempt_id": "a1",
        "experiment_id": "exp-a",
        "parent_attempt_id": None,
        "status": "succeeded",
        "started_at": at("10:00"),
        "ended_at": at("12:00"),
        "gpu_count": 8,
    },
    {
        "attempt_id": "b1",
        "experiment_id": "exp-b",
        "parent_attempt_id": None,
        "status": "failed",
        "started_at": at("10:30"),
        "ended_at": at("10:50"),
        "gpu_count": 1,
    },
    {
        "attempt_id": "b2",
        "experiment_id": "exp-b",
        "parent_attempt_id": "b1",
        "status": "succeeded",
        "started_at": at("11:00"),
        "ended_at": at("12:30"),
        "gpu_count": 1,
    },
]
RESOURCES = [
    {
        "attempt_id": "a1",
        "resource_id": "i-0aaa",
        "started_at": at("10:00"),
        "ended_at": at("12:00"),
    },
    {
        "attempt_id": "b1",
        "resource_id": "i-0bbb",
        "started_at": at("10:30"),
        "ended_at": at("10:50"),
    },
    {
        "attempt_id": "b2",
        "resource_id": "i-0bbb",
        "started_at": at("11:00"),
        "ended_at": at("12:30"),
    },
]
# Per attempt: the Slurm node it ran on and when it was submitted.
HOST = {"a1": "gpu-01", "b1": "gpu-02", "b2": "gpu-02"}
SUBMIT = {"a1": "09:55", "b1": "10:25", "b2": "10:55"}


# A builder writes one source's input under tmp_path and returns (source, omitted fields), the
# fields of the projection the source cannot express (left out of the comparison for it).
Built = tuple[dict[str, object], set[str]]


def canonical_files(tmp: Path) -> Built:
    folder = tmp / "telemetry"
    folder.mkdir()
    columns = list(ATTEMPTS[0])
    lines = [",".join(columns)]
    for row in ATTEMPTS:
        cells = {
            **row,
            "started_at": iso_of(row["started_at"]),
            "ended_at": iso_of(row["ended_at"]),
        }
        lines.append(",".join("" if cells[c] is None else str(cells[c]) for c in columns))
    (folder / "attempts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["attempt_id,resource_id,started_at,ended_at,gpu_count"]
    for row, attempt in zip(RESOURCES, ATTEMPTS, strict=True):
        lines.append(
            f"{row['attempt_id']},{row['resource_id']},{iso_of(row['started_at'])},"
            f"{iso_of(row['ended_at'])},{attempt['gpu_count']}"
        )
    (folder / "attempt_resources.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"kind": "canonical", "path": folder, "options": {}}, set()


def iso_of(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


MLFLOW_STATUS = {"succeeded": "FINISHED", "failed": "FAILED"}


def ms(value: dt.datetime) -> int:
    return int(value.timestamp() * 1000)


def mlflow_store(tmp: Path) -> Built:
    path = tmp / "mlflow.db"
    con = empty_store(path)
    con.execute("insert into experiments (experiment_id, name) values (1, 'sweep-a')")
    con.execute("insert into experiments (experiment_id, name) values (2, 'sweep-b')")
    run_of = {row["attempt_id"]: f"run{n:029d}" for n, row in enumerate(ATTEMPTS, start=1)}
    for row, resource in zip(ATTEMPTS, RESOURCES, strict=True):
        run = run_of[row["attempt_id"]]
        con.execute(
            "insert into runs (run_uuid, status, start_time, end_time, experiment_id, "
            "lifecycle_stage) values (?, ?, ?, ?, ?, 'active')",
            (
                run,
                MLFLOW_STATUS[row["status"]],
                ms(row["started_at"]),
                ms(row["ended_at"]),
                1 if row["experiment_id"] == "exp-a" else 2,
            ),
        )
        tags = {
            "user_attempt_id": row["attempt_id"],
            "user_experiment_id": row["experiment_id"],
            "gpu_count": str(row["gpu_count"]),
            "instance_id": resource["resource_id"],
        }
        if row["parent_attempt_id"]:
            tags["mlflow.parentRunId"] = run_of[row["parent_attempt_id"]]
        con.executemany(
            "insert into tags (run_uuid, key, value) values (?, ?, ?)",
            [(run, key, value) for key, value in tags.items()],
        )
    con.commit()
    con.close()
    options = {"attempt_id_tag": "user_attempt_id", "experiment_id_tag": "user_experiment_id"}
    return {"kind": "mlflow", "path": path, "options": options}, set()


# Slurm: each attempt is its own job with `sbatch --comment "user_attempt_id=..,..."`.
SLURM_STATE = {"succeeded": "COMPLETED", "failed": "FAILED"}
SLURM_JOB = {"a1": 101, "b1": 102, "b2": 103}
# Slurm links attempts only through a requeue of one job id, and then names the records
# <comment id>, <comment id>#2 (see the slurm-json-requeue case): a retry submitted as its own
# job has no parent in sacct, so parent_attempt_id is left out for the Slurm sources.
SLURM_OMITS = {"parent_attempt_id"}


def slurm_comment(row: dict[str, Any]) -> str:
    return f"user_attempt_id={row['attempt_id']},user_experiment_id={row['experiment_id']}"


def node_map(tmp: Path) -> str:
    lines = [
        "node,instance_id,valid_from,valid_to",
        "gpu-01,i-0aaa,2026-10-01T00:00:00Z,",
        "gpu-02,i-0bbb,2026-10-01T00:00:00Z,",
    ]
    (tmp / "nodes.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "nodes.csv"


def sacct_json_job(row: dict[str, Any], job_id: int, submit: str) -> dict[str, Any]:
    gpus = row["gpu_count"]
    return {
        "job_id": job_id,
        "name": "train",
        "cluster": "c1",
        "user": "ann",
        "comment": {"job": slurm_comment(row)},
        "state": {"current": [SLURM_STATE[row["status"]]], "reason": "None"},
        "time": {
            "submission": int(at(submit).timestamp()),
            "start": int(row["started_at"].timestamp()),
            "end": int(row["ended_at"].timestamp()),
            "elapsed": int((row["ended_at"] - row["started_at"]).total_seconds()),
        },
        "nodes": HOST[row["attempt_id"]],
        "tres": {
            "allocated": [
                {"type": "cpu", "name": None, "count": 8 * gpus},
                {"type": "node", "name": None, "count": 1},
                {"type": "gres", "name": "gpu", "count": gpus},
            ]
        },
        "exit_code": {"return_code": 0 if row["status"] == "succeeded" else 1},
        "steps": [{"step": {"name": "batch"}}],
    }


def slurm_json(tmp: Path) -> Built:
    jobs = [
        sacct_json_job(row, SLURM_JOB[row["attempt_id"]], SUBMIT[row["attempt_id"]])
        for row in ATTEMPTS
    ]
    path = tmp / "sacct.json"
    path.write_text(json.dumps({"meta": {}, "errors": [], "jobs": jobs}), encoding="utf-8")
    options = {"format": "json", "node_map": node_map(tmp)}
    return {"kind": "slurm", "path": path, "options": options}, SLURM_OMITS


def slurm_json_requeue(tmp: Path) -> Built:
    """b1 and b2 as one job (102) requeued after its failure: sacct -D shows two records."""
    a1, b1, b2 = ATTEMPTS
    retry = sacct_json_job({**b2, "attempt_id": "b1"}, 102, SUBMIT["b2"])  # one job, one comment
    jobs = [sacct_json_job(a1, 101, SUBMIT["a1"]), sacct_json_job(b1, 102, SUBMIT["b1"]), retry]
    path = tmp / "sacct.json"
    path.write_text(json.dumps({"meta": {}, "errors": [], "jobs": jobs}), encoding="utf-8")
    return {"kind": "slurm", "path": path, "options": {"node_map": node_map(tmp)}}, set()


def local(value: dt.datetime) -> str:
    """A UTC time as sacct prints it on a cluster in America/Toronto: naive local time."""
    return (value + TORONTO_OFFSET).replace(tzinfo=None).isoformat()


def slurm_parsable2(tmp: Path) -> Built:
    header = "JobIDRaw|JobID|JobName|Cluster|User|Comment|Submit|Start|End|State|ExitCode|NNodes|"
    lines = [header + "NodeList|AllocTRES"]
    for row in ATTEMPTS:
        job = SLURM_JOB[row["attempt_id"]]
        gpus, host = row["gpu_count"], HOST[row["attempt_id"]]
        state = SLURM_STATE[row["status"]]
        times = f"{local(row['started_at'])}|{local(row['ended_at'])}"
        exit_code = "0:0" if state == "COMPLETED" else "1:0"
        tres = f"billing={8 * gpus},cpu={8 * gpus},gres/gpu={gpus},mem=64G,node=1"
        lines.append(
            f"{job}|{job}|train|c1|ann|{slurm_comment(row)}|{local(at(SUBMIT[row['attempt_id']]))}|"
            f"{times}|{state}|{exit_code}|1|{host}|{tres}"
        )
        lines.append(
            f"{job}.batch|{job}.batch|batch|c1|||{local(row['started_at'])}|{times}|{state}|"
            f"{exit_code}|1|{host}|cpu={8 * gpus},gres/gpu={gpus},mem=64G,node=1"
        )
    path = tmp / "sacct.psv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = {"format": "parsable2", "timezone": "America/Toronto", "node_map": node_map(tmp)}
    return {"kind": "slurm", "path": path, "options": options}, SLURM_OMITS


# Kubernetes: one pod per attempt; labels carry the ids (label values cannot hold '#').
K8S_NODE = {"a1": "node-a", "b1": "node-b", "b2": "node-b"}
K8S_PROVIDER = {"node-a": "aws:///us-east-1a/i-0aaa", "node-b": "aws:///us-east-1b/i-0bbb"}


def k8s_pod(row: dict[str, Any], number: int) -> dict[str, Any]:
    labels = {"user_attempt_id": row["attempt_id"], "user_experiment_id": row["experiment_id"]}
    if row["parent_attempt_id"]:
        labels["user_parent_attempt_id"] = row["parent_attempt_id"]
    failed = row["status"] == "failed"
    terminated = {
        "exitCode": 1 if failed else 0,
        "reason": "Error" if failed else "Completed",
        "startedAt": iso_of(row["started_at"]),
        "finishedAt": iso_of(row["ended_at"]),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"train-{row['attempt_id']}",
            "namespace": "ml",
            "uid": f"00000000-0000-0000-0000-00000000000{number}",
            "labels": {**labels, "app": "train"},
            "creationTimestamp": iso(SUBMIT[row["attempt_id"]]),
        },
        "spec": {
            "nodeName": K8S_NODE[row["attempt_id"]],
            "containers": [
                {"name": "train", "resources": {"limits": {"nvidia.com/gpu": row["gpu_count"]}}}
            ],
        },
        "status": {
            "phase": "Failed" if failed else "Succeeded",
            "startTime": iso_of(row["started_at"]),
            "conditions": [],
            "containerStatuses": [{"name": "train", "state": {"terminated": terminated}}],
        },
    }


def kubernetes_pods(tmp: Path) -> Built:
    pods = {"apiVersion": "v1", "kind": "List", "items": []}
    pods["items"] = [k8s_pod(row, n) for n, row in enumerate(ATTEMPTS, start=1)]
    nodes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"kind": "Node", "metadata": {"name": name, "labels": {}}, "spec": {"providerID": pid}}
            for name, pid in K8S_PROVIDER.items()
        ],
    }
    (tmp / "pods.json").write_text(json.dumps(pods), encoding="utf-8")
    (tmp / "nodes.json").write_text(json.dumps(nodes), encoding="utf-8")
    options = {
        "attempt_label": "user_attempt_id",
        "experiment_label": "user_experiment_id",
        "parent_label": "user_parent_attempt_id",
        "nodes": "nodes.json",
    }
    return {"kind": "kubernetes", "path": tmp / "pods.json", "options": options}, set()


# SageMaker: DescribeTrainingJob output with ListTags merged in as Tags.
SM_TYPE = {8: "ml.p4d.24xlarge", 1: "ml.g5.xlarge"}
# A training job's resource is its ARN (DescribeTrainingJob names no EC2 instance), and separate
# jobs carry no parent link (only a managed-spot split does: see sagemaker-spot).
SM_OMITS = {"resource_id", "parent_attempt_id"}


def sm_job(name: str, tags: dict[str, str], gpus: int, **more: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{name}",
        "ResourceConfig": {"InstanceType": SM_TYPE[gpus], "InstanceCount": 1},
        "Tags": [{"Key": key, "Value": value} for key, value in tags.items()],
        **more,
    }


def sm_times(row: dict[str, Any]) -> dict[str, Any]:
    status = "Completed" if row["status"] == "succeeded" else "Failed"
    return {
        "TrainingJobStatus": status,
        "SecondaryStatus": status,
        "CreationTime": at(SUBMIT[row["attempt_id"]]).isoformat(),
        "TrainingStartTime": row["started_at"].isoformat(),
        "TrainingEndTime": row["ended_at"].isoformat(),
        "EnableManagedSpotTraining": False,
    }


SM_OPTIONS = {"attempt_key": "user_attempt_id", "experiment_key": "user_experiment_id"}


def sagemaker_jobs(tmp: Path) -> Built:
    folder = tmp / "sagemaker"
    folder.mkdir()
    for row in ATTEMPTS:
        tags = {"user_attempt_id": row["attempt_id"], "user_experiment_id": row["experiment_id"]}
        job = sm_job(f"train-{row['attempt_id']}", tags, row["gpu_count"], **sm_times(row))
        (folder / f"{row['attempt_id']}.json").write_text(json.dumps(job), encoding="utf-8")
    return {"kind": "sagemaker", "path": folder, "options": SM_OPTIONS}, SM_OMITS


def transition(status: str, start: str, end: str | None) -> dict[str, Any]:
    row = {"Status": status, "StartTime": at(start).isoformat(), "StatusMessage": status}
    return row | ({"EndTime": at(end).isoformat()} if end else {})


def sagemaker_spot(tmp: Path) -> Built:
    """b1 and b2 as one managed-spot job interrupted at 10:50 and restarted at 11:00."""
    a1, b1, b2 = ATTEMPTS
    folder = tmp / "sagemaker"
    folder.mkdir()
    first = sm_job("train-a1", {"user_attempt_id": "a1", "user_experiment_id": "exp-a"}, 8)
    spot = sm_job("train-b", {"user_attempt_id": "b", "user_experiment_id": "exp-b"}, 1)
    spot |= sm_times(b2) | {
        "CreationTime": at(SUBMIT["b1"]).isoformat(),
        "TrainingStartTime": b1["started_at"].isoformat(),
        "EnableManagedSpotTraining": True,
        "SecondaryStatusTransitions": [
            transition("Starting", "10:25", "10:30"),
            transition("Training", "10:30", "10:50"),
            transition("Interrupted", "10:50", "11:00"),
            transition("Restarting", "11:00", "11:00"),
            transition("Training", "11:00", "12:30"),
            transition("Completed", "12:30", None),
        ],
    }
    (folder / "a1.json").write_text(json.dumps(first | sm_times(a1)), encoding="utf-8")
    (folder / "b.json").write_text(json.dumps(spot), encoding="utf-8")
    return {"kind": "sagemaker", "path": folder, "options": SM_OPTIONS}, {"resource_id"}


SOURCES: list[Any] = [
    pytest.param(canonical_files, id="canonical-csv"),
    pytest.param(mlflow_store, id="mlflow"),
    pytest.param(slurm_json, id="slurm-json"),
    pytest.param(slurm_parsable2, id="slurm-parsable2"),
    pytest.param(
        slurm_json_requeue,
        id="slurm-json-requeue",
        marks=pytest.mark.xfail(
            strict=True,
            raises=AssertionError,
            reason="a requeued job's records share one comment and are named <comment "
            "user_attempt_id>, <id>#2, <id>#3 (b1, b1#2): the retry cannot carry its own attempt "
            "id b2",
        ),
    ),
    pytest.param(kubernetes_pods, id="kubernetes"),
    pytest.param(sagemaker_jobs, id="sagemaker"),
    pytest.param(
        sagemaker_spot,
        id="sagemaker-spot",
        marks=pytest.mark.xfail(
            strict=True,
            raises=AssertionError,
            reason="a split managed-spot job's attempts are named <attempt tag>, <attempt tag>#2 "
            "(b, b#2) as a requeued Slurm job's are: the retry cannot carry its own id b2; "
            "and the interrupted span is 'interrupted', not 'failed'",
        ),
    ),
]
ATTEMPT_FIELDS = tuple(ATTEMPTS[0])
RESOURCE_FIELDS = tuple(RESOURCES[0])


def project(rows: list[dict[str, Any]], fields: tuple[str, ...], omit: set[str]) -> list[tuple]:
    """The rows' common-projection fields (minus the omitted ones), sorted."""
    kept = [field for field in fields if field not in omit]
    return sorted((tuple(row[field] for field in kept) for row in rows), key=sort_key)


def sort_key(values: tuple) -> tuple:
    """Orders rows whatever their tzinfo objects (zoneinfo UTC vs datetime.UTC) or NULLs."""
    return tuple(
        ("", "")
        if v is None
        else ("t", v.astimezone(UTC).isoformat())
        if isinstance(v, dt.datetime)
        else ("v", str(v))
        for v in values
    )


@pytest.mark.parametrize("build", SOURCES)
def test_every_source_yields_the_same_canonical_rows(
    tmp_path: Path, build: Callable[[Path], Built]
) -> None:
    source, omit = build(tmp_path)
    kind = str(source["kind"])
    raw = adapters.reader(kind)(source, f"telemetry.sources[1] ({kind})")
    assert {"attempts", "attempt_resources"} <= set(raw)
    for name, found in raw.items():
        assert found.schema == arrow_schema(name), name
    tables = adapters.read(source, f"telemetry.sources[1] ({kind})")
    attempts = tables["attempts"].to_pylist()
    resources = tables["attempt_resources"].to_pylist()
    assert project(attempts, ATTEMPT_FIELDS, omit) == project(ATTEMPTS, ATTEMPT_FIELDS, omit)
    assert project(resources, RESOURCE_FIELDS, omit) == project(RESOURCES, RESOURCE_FIELDS, omit)
