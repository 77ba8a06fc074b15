"""SageMaker adapter: DescribeTrainingJob JSON -> attempts split at spot interruptions."""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry import adapters, sagemaker, sagemaker_instances
from pipeline.telemetry.canonical import arrow_schema

LABEL = "telemetry.sources[2] (sagemaker)"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-job/llm-spot"


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def transition(status: str, start: str, end: str | None, message: str = "") -> dict:
    row = {"Status": status, "StartTime": f"2026-10-01T{start}+00:00", "StatusMessage": message}
    if end:
        row["EndTime"] = f"2026-10-01T{end}+00:00"
    return row


SPOT_JOB = {
    "TrainingJobName": "llm-spot",
    "TrainingJobArn": ARN,
    "TrainingJobStatus": "Completed",
    "SecondaryStatus": "Completed",
    "HyperParameters": {"experiment_id": '"exp1"', "lr": "0.001"},
    "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
    "EnableManagedSpotTraining": True,
    "CreationTime": "2026-10-01T09:55:00+00:00",
    "TrainingStartTime": "2026-10-01T10:00:00+00:00",
    "TrainingEndTime": "2026-10-01T12:00:00+00:00",
    "TrainingTimeInSeconds": 7200,
    "BillableTimeInSeconds": 6600,
    "FinalMetricDataList": [{"MetricName": "val:loss", "Value": 1.25}],
    "ModelArtifacts": {"S3ModelArtifacts": "s3://bucket/llm-spot/model.tar.gz"},
    "SecondaryStatusTransitions": [
        transition("Starting", "09:55:00", "10:00:00"),
        transition("Training", "10:05:00", "11:00:00"),
        transition("Interrupted", "11:00:00", "11:10:00", "spot capacity reclaimed"),
        transition("Restarting", "11:10:00", "11:15:00"),
        transition("Training", "11:15:00", "11:55:00"),
        transition("Uploading", "11:55:00", "12:00:00"),
        transition("Completed", "12:00:00", None, "Training job completed"),
    ],
}


def write(tmp_path: Path, *jobs: dict, name: str = "job.json") -> dict:
    data = jobs[0] if len(jobs) == 1 else list(jobs)
    (tmp_path / name).write_text(json.dumps(data))
    return {"kind": "sagemaker", "path": tmp_path / name, "options": {}}


def test_spot_job_splits_into_attempts_at_interruptions(tmp_path: Path) -> None:
    tables = sagemaker.read(write(tmp_path, SPOT_JOB), LABEL)
    for name, table in tables.items():
        assert table.schema == arrow_schema(name)
    first, second = tables["attempts"].to_pylist()
    assert (first["attempt_id"], first["parent_attempt_id"], first["status"]) == (
        "llm-spot",
        None,
        "interrupted",
    )
    assert (first["started_at"], first["ended_at"]) == (
        at("2026-10-01T10:00:00"),
        at("2026-10-01T11:00:00"),
    )
    assert (second["attempt_id"], second["parent_attempt_id"], second["status"]) == (
        "llm-spot#2",
        "llm-spot",
        "succeeded",
    )
    assert (second["started_at"], second["ended_at"]) == (
        at("2026-10-01T11:10:00"),
        at("2026-10-01T12:00:00"),
    )
    assert (second["metric_name"], second["metric_value"]) == ("val:loss", 1.25)
    assert first["metric_name"] is None
    for row in (first, second):
        assert (row["experiment_id"], row["gpu_count"], row["node_count"]) == ("exp1", 16, 2)
        assert (row["account_id"], row["region"], row["capacity_type"]) == (
            "123456789012",
            "us-east-1",
            "spot",
        )
        assert dict(row["tags"]) == {
            "source": "sagemaker",
            "source_native_id": ARN,
            "training_job_name": "llm-spot",
            "billable_time_s": "6600",
            "training_time_s": "7200",
            "secondary_status": "Completed",
        }
    resources = [
        (r["attempt_id"], r["resource_id"], r["resource_kind"], r["started_at"], r["ended_at"])
        for r in tables["attempt_resources"].to_pylist()
    ]
    kind = "sagemaker_training_job"
    assert resources == [
        ("llm-spot", ARN, kind, at("2026-10-01T10:00:00"), at("2026-10-01T11:00:00")),
        ("llm-spot#2", ARN, kind, at("2026-10-01T11:10:00"), at("2026-10-01T12:00:00")),
    ]
    events = [
        (e["attempt_id"], e["event_type"], e["duration_s"])
        for e in tables["attempt_events"].to_pylist()
    ]
    assert events == [
        ("llm-spot", "starting", 300.0),
        ("llm-spot", "started", 3300.0),
        ("llm-spot", "interrupted", 600.0),
        ("llm-spot#2", "resumed", 300.0),
        ("llm-spot#2", "started", 2400.0),
        ("llm-spot#2", "uploading", 300.0),
        ("llm-spot#2", "finished", None),
    ]


def test_job_without_interruption_is_one_attempt_from_a_folder(tmp_path: Path) -> None:
    job = copy.deepcopy(SPOT_JOB)
    job["SecondaryStatusTransitions"] = [transition("Training", "10:00:00", "12:00:00")]
    job["TrainingJobStatus"], job["SecondaryStatus"] = "Failed", "MaxRuntimeExceeded"
    job["Tags"] = [{"Key": "experiment_id", "Value": "exp-tagged"}]
    job["EnableManagedSpotTraining"] = False
    folder = tmp_path / "jobs"
    folder.mkdir()
    write(folder, job)
    [row] = sagemaker.read({"kind": "sagemaker", "path": folder}, LABEL)["attempts"].to_pylist()
    assert (row["attempt_id"], row["experiment_id"], row["status"]) == (
        "llm-spot",
        "exp-tagged",
        "timeout",
    )
    assert (row["capacity_type"], row["ended_at"]) == ("on_demand", at("2026-10-01T12:00:00"))


def test_running_job_leaves_last_attempt_open(tmp_path: Path) -> None:
    job = copy.deepcopy(SPOT_JOB)
    job["TrainingJobStatus"] = "InProgress"
    del job["TrainingEndTime"]
    job["SecondaryStatusTransitions"] = job["SecondaryStatusTransitions"][:5]
    attempts = sagemaker.read(write(tmp_path, job), LABEL)["attempts"].to_pylist()
    assert [(a["status"], a["ended_at"]) for a in attempts] == [
        ("interrupted", at("2026-10-01T11:00:00")),
        ("running", None),
    ]


def test_epoch_seconds_and_unknown_instance_type(tmp_path: Path) -> None:
    job = copy.deepcopy(SPOT_JOB)
    job.pop("SecondaryStatusTransitions")
    job["TrainingStartTime"] = at("2026-10-01T10:00:00").timestamp()
    job["ResourceConfig"]["InstanceType"] = "ml.trn1.32xlarge"
    [row] = sagemaker.read(write(tmp_path, job), LABEL)["attempts"].to_pylist()
    assert (row["started_at"], row["gpu_count"]) == (at("2026-10-01T10:00:00"), 32)
    assert row["gpu_type"] == "Trainium"
    job["ResourceConfig"]["InstanceType"] = "ml.x9.48xlarge"
    with pytest.raises(InputError) as raised:
        sagemaker.read(write(tmp_path, job), LABEL)
    assert "(job llm-spot): instance type 'ml.x9.48xlarge' is not in runcost's table" in str(
        raised.value
    )
    assert 'options.gpus = { "ml.x9.48xlarge" = <GPUs per instance> }' in str(raised.value)
    source = {"path": tmp_path / "job.json", "options": {"gpus": {"ml.x9.48xlarge": 4}}}
    [row] = sagemaker.read(source, LABEL)["attempts"].to_pylist()
    assert (row["gpu_count"], row["gpu_type"]) == (8, None)


def test_instance_table_lists_documented_gpu_types() -> None:
    table = sagemaker_instances.instance_types()
    assert table["ml.p5.48xlarge"] == (8, "H100")
    assert table["ml.g5.12xlarge"] == (4, "A10G")
    assert table["ml.m5.xlarge"] == (0, None)


def _no_name(job: dict) -> None:
    del job["TrainingJobName"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_no_name, "TrainingJobName or TrainingJobArn is missing"),
        (
            lambda job: job.update(TrainingStartTime="2026-10-01T10:00:00"),
            "(job llm-spot), TrainingStartTime: '2026-10-01T10:00:00' has no time zone; "
            "write it with +00:00 or Z",
        ),
        (
            lambda job: job.update(TrainingEndTime="2026-10-01T09:00:00Z"),
            "(job llm-spot): TrainingEndTime 2026-10-01T09:00:00+00:00 is before "
            "TrainingStartTime 2026-10-01T10:00:00+00:00",
        ),
        (
            lambda job: job.update(HyperParameters={}),
            "(job llm-spot): no experiment id; tag the job experiment_id=<experiment id>",
        ),
    ],
)
def test_bad_job_names_it(tmp_path: Path, change, message: str) -> None:
    job = copy.deepcopy(SPOT_JOB)
    change(job)
    with pytest.raises(InputError) as caught:
        sagemaker.read(write(tmp_path, job), LABEL)
    assert str(caught.value).startswith(f"{LABEL}: {tmp_path / 'job.json'}")
    assert message in str(caught.value)


def test_duplicate_job_and_skip(tmp_path: Path, caplog) -> None:
    other = copy.deepcopy(SPOT_JOB) | {"TrainingJobName": "other", "TrainingJobArn": ARN + "2"}
    source = write(tmp_path, SPOT_JOB, SPOT_JOB, other)
    with pytest.raises(InputError) as caught:
        sagemaker.read(source, LABEL)
    path = tmp_path / "job.json"
    assert str(caught.value) == (
        f"{LABEL}: {path}: item 2: training job llm-spot also in {path}: item 1; keep one "
        "DescribeTrainingJob output per job"
    )
    source["on_error"] = "skip"
    with caplog.at_level(logging.WARNING, logger="runcost"):
        attempts = sagemaker.read(source, LABEL)["attempts"]
    assert attempts.column("attempt_id").to_pylist() == [
        "llm-spot",
        "llm-spot#2",
        "other",
        "other#2",
    ]
    assert "skipped 1 bad record(s)" in caplog.text


def test_unknown_status_is_kept_and_reported(tmp_path: Path, caplog) -> None:
    job = copy.deepcopy(SPOT_JOB) | {"TrainingJobStatus": "Deleting"}
    with caplog.at_level(logging.WARNING, logger="runcost"):
        attempts = sagemaker.read(write(tmp_path, job), LABEL)["attempts"].to_pylist()
    assert [a["status"] for a in attempts] == ["interrupted", "unknown"]
    assert dict(attempts[1]["tags"])["raw_status"] == "Deleting"
    assert "attempt(s) with unknown TrainingJobStatus ['Deleting']" in caplog.text


def test_read_through_the_adapter_registry(tmp_path: Path) -> None:
    tables = adapters.read(write(tmp_path, SPOT_JOB) | {"on_error": "fail"}, LABEL)
    assert tables["attempts"].column("attempt_id").to_pylist() == ["llm-spot", "llm-spot#2"]
    assert tables["attempt_events"].num_rows == 7


def group(name: str, kind: str, count: int) -> dict:
    return {"InstanceGroupName": name, "InstanceType": kind, "InstanceCount": count}


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (  # a GPU group and a CPU data-loading group: the GPU group's type
            [group("train", "ml.p4d.24xlarge", 2), group("data", "ml.c5.2xlarge", 4)],
            (
                "ml.p4d.24xlarge",
                6,
                16,
                "A100",
                "train: 2 x ml.p4d.24xlarge; data: 4 x ml.c5.2xlarge",
            ),
        ),
        (  # two GPU groups: the type holding the most GPUs, every GPU model
            [group("small", "ml.g5.xlarge", 4), group("big", "ml.p4d.24xlarge", 1)],
            (
                "ml.p4d.24xlarge",
                5,
                12,
                "A100,A10G",
                "small: 4 x ml.g5.xlarge; big: 1 x ml.p4d.24xlarge",
            ),
        ),
        (  # no GPUs: the group with the most instances
            [group("a", "ml.m5.xlarge", 1), group("b", "ml.c5.2xlarge", 3)],
            ("ml.c5.2xlarge", 4, 0, None, "a: 1 x ml.m5.xlarge; b: 3 x ml.c5.2xlarge"),
        ),
    ],
)
def test_instance_groups_are_summed(tmp_path: Path, groups: list, expected: tuple) -> None:
    job = copy.deepcopy(SPOT_JOB)
    job["ResourceConfig"] = {"InstanceGroups": groups, "VolumeSizeInGB": 100}
    tables = sagemaker.read(write(tmp_path, job), LABEL)
    for row in tables["attempts"].to_pylist():
        assert (
            row["instance_type"],
            row["node_count"],
            row["gpu_count"],
            row["gpu_type"],
            dict(row["tags"])["instance_groups"],
        ) == expected
    assert tables["attempt_resources"].column("gpu_count").to_pylist() == [expected[2]] * 2


@pytest.mark.parametrize(
    ("gpus", "kind", "expected"),
    [
        ({"ml.x9.48xlarge": {"count": 4, "model": "H200"}}, "ml.x9.48xlarge", (8, "H200")),
        ({"ml.p5.24xlarge": 4}, "ml.p5.24xlarge", (8, "H100")),  # the model of its family
        ({"ml.g6e.xlarge": 2}, "ml.g6e.xlarge", (4, "L40S")),  # a listed type's own model
        ({"ml.x9.48xlarge": 4}, "ml.x9.48xlarge", (8, None)),  # no family, no model given
        ({"ml.x9.large": 0}, "ml.x9.large", (0, None)),
    ],
)
def test_options_gpus_gives_the_gpu_model(
    tmp_path: Path, gpus: dict, kind: str, expected: tuple
) -> None:
    job = copy.deepcopy(SPOT_JOB)
    job["ResourceConfig"]["InstanceType"] = kind
    source = write(tmp_path, job) | {"options": {"gpus": gpus}}
    for row in sagemaker.read(source, LABEL)["attempts"].to_pylist():
        assert (row["gpu_count"], row["gpu_type"]) == expected


@pytest.mark.parametrize(
    ("gpus", "message"),
    [
        (
            {"ml.x9.48xlarge": "eight"},
            "options.gpus: 'ml.x9.48xlarge' = 'eight' is not a GPU count; write "
            '"ml.x9.48xlarge" = 8, or "ml.x9.48xlarge" = { count = 8, model = "H200" }',
        ),
        (
            {"ml.x9.48xlarge": {"count": 8, "model": " "}},
            "options.gpus: 'ml.x9.48xlarge': model ' ' is not a GPU model name such as \"H200\"",
        ),
    ],
)
def test_bad_options_gpus_entry_says_how_to_write_it(
    tmp_path: Path, gpus: dict, message: str
) -> None:
    source = write(tmp_path, SPOT_JOB) | {"options": {"gpus": gpus}}
    with pytest.raises(InputError) as raised:
        sagemaker.read(source, LABEL)
    assert str(raised.value) == f"{LABEL}: {message}"
