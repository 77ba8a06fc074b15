"""SageMaker through its API: training jobs created on moto's server on 127.0.0.1, read back with
boto3 (ListTrainingJobs, DescribeTrainingJob, ListTags) by name or by prefix and time window."""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import read

ROLE = "arn:aws:iam::123456789012:role/sagemaker"


@pytest.fixture
def sagemaker(moto_url: str) -> tuple[str, Any]:
    """moto's server on 127.0.0.1 (tests/conftest.py): (endpoint url, boto3 client)."""
    return moto_url, boto3.client("sagemaker", endpoint_url=moto_url, region_name="us-west-2")


def create(client: Any, name: str, instance: str | list[dict], count: int = 0, **more: Any) -> None:
    """A training job on `count` instances of one type, or on instance groups (a list)."""
    resources: dict[str, Any] = (
        {"InstanceGroups": instance}
        if isinstance(instance, list)
        else {"InstanceType": instance, "InstanceCount": count}
    )
    client.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": "train:1", "TrainingInputMode": "File"},
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": "s3://models/out"},
        ResourceConfig={**resources, "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 86400},
        **more,
    )


def source(url: str, **options: Any) -> dict[str, object]:
    return {
        "kind": "sagemaker",
        "path": None,
        "options": {"endpoint_url": url, "region": "us-west-2", **options},
    }


def test_jobs_by_name_and_by_prefix_window(sagemaker: tuple[str, Any]) -> None:
    url, client = sagemaker
    create(
        client,
        "llm-7b-a1",
        "ml.p4d.24xlarge",
        2,
        Tags=[{"Key": "experiment_id", "Value": "llm-7b"}, {"Key": "attempt_id", "Value": "a1"}],
        EnableManagedSpotTraining=True,
    )
    create(client, "llm-7b-a2", "ml.g5.48xlarge", 1, HyperParameters={"experiment_id": "llm-7b"})
    create(client, "resnet-1", "ml.g5.xlarge", 1, HyperParameters={"experiment_id": "resnet"})
    create(client, "old-llm-1", "ml.m5.xlarge", 1, HyperParameters={"experiment_id": "x"})
    described = client.describe_training_job(TrainingJobName="llm-7b-a1")

    tables = read(source(url, jobs=["llm-7b-a1", "resnet-1"]), "sm")
    rows = {r["attempt_id"]: r for r in tables["attempts"].to_pylist()}
    assert sorted(rows) == ["a1", "resnet-1"]
    first = rows["a1"]
    assert (first["experiment_id"], first["status"], first["capacity_type"]) == (
        "llm-7b",
        "succeeded",
        "spot",
    )
    assert (first["gpu_count"], first["gpu_type"], first["node_count"]) == (16, "A100", 2)
    assert (first["account_id"], first["region"]) == ("123456789012", "us-west-2")
    assert first["started_at"] == described["TrainingStartTime"].astimezone(dt.UTC)
    assert first["ended_at"] == described["TrainingEndTime"].astimezone(dt.UTC)
    assert (rows["resnet-1"]["gpu_count"], rows["resnet-1"]["experiment_id"]) == (1, "resnet")
    resources = {r["attempt_id"]: r["resource_id"] for r in tables["attempt_resources"].to_pylist()}
    assert resources["a1"] == described["TrainingJobArn"]

    # a prefix (not a substring: old-llm-1 contains "llm-") over a window of creation times
    since = (described["CreationTime"] - dt.timedelta(hours=1)).isoformat()
    window = read(source(url, name_prefix="llm-", created_after=since), "sm")["attempts"]
    assert sorted(window.column("attempt_id").to_pylist()) == ["a1", "llm-7b-a2"]
    a2 = next(r for r in window.to_pylist() if r["attempt_id"] == "llm-7b-a2")
    assert (a2["gpu_count"], a2["capacity_type"]) == (8, "on_demand")
    later = (described["CreationTime"] + dt.timedelta(hours=1)).isoformat()
    assert (
        read(source(url, name_prefix="llm-", created_after=later), "sm")["attempts"].num_rows == 0
    )


def test_missing_job_unknown_type_and_bad_options_are_named(sagemaker: tuple[str, Any]) -> None:
    url, client = sagemaker
    create(client, "odd-1", "ml.x9.48xlarge", 1, HyperParameters={"experiment_id": "e"})
    with pytest.raises(InputError) as raised:
        read(source(url, jobs=["llm-7b-a9"]), "sm")
    assert str(raised.value).startswith(
        "sm: SageMaker us-west-2: training job llm-7b-a9: not found (ValidationException: "
    )
    assert "check the name in options.jobs and options.region" in str(raised.value)
    with pytest.raises(InputError) as raised:
        read(source(url, jobs=["odd-1"]), "sm")
    assert str(raised.value).startswith(
        "sm: SageMaker us-west-2 (job odd-1): instance type 'ml.x9.48xlarge' is not in runcost's"
    )
    found = read(source(url, jobs=["odd-1"], gpus={"ml.x9.48xlarge": 8}), "sm")["attempts"]
    assert found.column("gpu_count").to_pylist() == [8]
    with pytest.raises(InputError, match=r"name_prefix needs options.created_after"):
        read(source(url, name_prefix="llm-"), "sm")
    with pytest.raises(InputError, match=r"set options.jobs or options.name_prefix, not both"):
        read(source(url, jobs=["a"], name_prefix="llm-", created_after="2026-10-01"), "sm")
    with pytest.raises(InputError, match=r"created_after 'last week' is not a date or time"):
        read(source(url, name_prefix="llm-", created_after="last week"), "sm")


def test_no_credentials_names_the_permissions(
    sagemaker: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = sagemaker
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    with pytest.raises(InputError) as raised:
        read(source(url, jobs=["x"]), "sm")
    assert str(raised.value).startswith("sm: SageMaker us-west-2: no AWS credentials; ")
    assert "sagemaker:ListTrainingJobs, sagemaker:DescribeTrainingJob and sagemaker:ListTags" in (
        str(raised.value)
    )


def test_instance_groups_are_summed_and_options_gpus_gives_the_model(
    sagemaker: tuple[str, Any],
) -> None:
    url, client = sagemaker
    groups = [
        {"InstanceGroupName": "train", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.2xlarge", "InstanceCount": 3},
    ]
    create(client, "hetero-1", groups, HyperParameters={"experiment_id": "e"})
    create(client, "new-1", "ml.x9.48xlarge", 2, HyperParameters={"experiment_id": "e"})
    gpus = {"ml.x9.48xlarge": {"count": 8, "model": "B300"}}
    rows = read(source(url, jobs=["hetero-1", "new-1"], gpus=gpus), "sm")["attempts"].to_pylist()
    found = {
        r["attempt_id"]: (r["instance_type"], r["node_count"], r["gpu_count"], r["gpu_type"])
        for r in rows
    }
    assert found == {
        "hetero-1": ("ml.p4d.24xlarge", 5, 16, "A100"),
        "new-1": ("ml.x9.48xlarge", 2, 16, "B300"),
    }
    assert dict(rows[0]["tags"])["instance_groups"] == (
        "train: 2 x ml.p4d.24xlarge; data: 3 x ml.c5.2xlarge"
    )


@pytest.mark.parametrize(
    "options", [{"jobs": ["x"]}, {"name_prefix": "x", "created_after": "2026-10-01"}]
)
def test_a_wrong_endpoint_path_says_the_url_and_how_to_fix_it(
    sagemaker: tuple[str, Any], options: dict[str, Any]
) -> None:
    url, _ = sagemaker
    with pytest.raises(InputError) as raised:
        read(source(f"{url}/sagemaker", **options), "sm")
    call = "training job x" if "jobs" in options else "listing training jobs"
    assert str(raised.value) == (
        f"sm: SageMaker us-west-2: {call}: HTTP 404 Not Found at {url}/sagemaker: no SageMaker "
        "API at this URL, so the path of options.endpoint_url is wrong; set it to the "
        "endpoint's address without a path (https://api.sagemaker.<region>.amazonaws.com, or "
        "the VPC endpoint's DNS name), or remove it to use the region's endpoint"
    )
