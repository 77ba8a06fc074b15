"""SageMaker training jobs read with boto3: ListTrainingJobs, DescribeTrainingJob and ListTags.

Credentials and region come from boto3's usual chain (environment, profile, instance role);
options.region and options.endpoint_url (a VPC endpoint) override them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from pipeline.common.errors import InputError

PERMISSIONS = "sagemaker:ListTrainingJobs, sagemaker:DescribeTrainingJob and sagemaker:ListTags"


def describe_jobs(opts: dict[str, Any], label: str) -> list[tuple[str, dict]]:
    """(where, DescribeTrainingJob response with its Tags) for options.jobs, or for the jobs
    whose name starts with options.name_prefix created in [created_after, created_before)."""
    client = boto3.Session().client(  # a fresh session: credentials as they are now
        "sagemaker",
        region_name=opts.get("region") or None,
        endpoint_url=opts.get("endpoint_url") or None,
        config=Config(retries={"max_attempts": 5, "mode": "standard"}),
    )
    region = client.meta.region_name
    where = f"SageMaker {region}"
    try:
        names = _names(client, opts, label, where)
        found = []
        for name in names:
            job = _call(
                client.describe_training_job,
                label,
                f"{where}: training job {name}",
                TrainingJobName=name,
            )
            job.pop("ResponseMetadata", None)
            tags = _call(
                client.list_tags,
                label,
                f"{where}: training job {name}",
                ResourceArn=job["TrainingJobArn"],
                MaxResults=100,
            )
            job["Tags"] = tags.get("Tags") or []
            found.append((where, job))
        return found
    except NoCredentialsError:
        raise InputError(
            f"{label}: {where}: no AWS credentials; run where boto3 finds some (AWS_PROFILE, "
            f"an instance or task role) with {PERMISSIONS}"
        ) from None
    except BotoCoreError as error:
        raise InputError(
            f"{label}: {where}: {error}; check options.region and options.endpoint_url"
        ) from None


def _names(client: Any, opts: dict[str, Any], label: str, where: str) -> list[str]:
    jobs, prefix = opts.get("jobs"), opts.get("name_prefix")
    if jobs is not None:
        if prefix is not None:
            raise InputError(f"{label}: set options.jobs or options.name_prefix, not both")
        if not isinstance(jobs, list) or not jobs or not all(isinstance(j, str) for j in jobs):
            raise InputError(f'{label}: options.jobs must be a list of names: jobs = ["llm-7b"]')
        return list(dict.fromkeys(jobs))
    if not isinstance(prefix, str) or not prefix:
        raise InputError(f'{label}: options.name_prefix must be a name prefix: "llm-"')
    after = _time(opts.get("created_after"), "created_after", label)
    before = _time(opts.get("created_before"), "created_before", label)
    if after is None:
        raise InputError(
            f'{label}: options.name_prefix needs options.created_after = "2026-10-01" (and '
            "optionally created_before): the window of job creation times to read"
        )
    window: dict[str, Any] = {"NameContains": prefix, "CreationTimeAfter": after}
    if before is not None:
        window["CreationTimeBefore"] = before
    names = []
    for page in _pages(client, label, where, window):
        names += [
            s["TrainingJobName"]
            for s in page.get("TrainingJobSummaries") or []
            if s["TrainingJobName"].startswith(prefix)  # NameContains matches anywhere
        ]
    return sorted(names)


def _pages(client: Any, label: str, where: str, window: dict[str, Any]) -> Any:
    try:
        yield from client.get_paginator("list_training_jobs").paginate(
            **window, SortBy="CreationTime", SortOrder="Ascending"
        )
    except ClientError as error:
        raise InputError(
            _message(error, label, f"{where}: listing training jobs", client.meta.endpoint_url)
        ) from None


def _call(method: Any, label: str, where: str, **arguments: Any) -> dict:
    try:
        return method(**arguments)
    except ClientError as error:
        endpoint = method.__self__.meta.endpoint_url
        raise InputError(_message(error, label, where, endpoint)) from None


def _message(error: ClientError, label: str, where: str, endpoint: str) -> str:
    code = error.response.get("Error", {}).get("Code", "")
    text = " ".join(str(error.response.get("Error", {}).get("Message", "")).split())
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if status == 404 or code == "404":
        return (
            f"{label}: {where}: HTTP 404 Not Found at {endpoint}: no SageMaker API at this URL, "
            "so the path of options.endpoint_url is wrong; set it to the endpoint's address "
            "without a path (https://api.sagemaker.<region>.amazonaws.com, or the VPC "
            "endpoint's DNS name), or remove it to use the region's endpoint"
        )
    if code in ("AccessDeniedException", "AccessDenied", "UnrecognizedClientException"):
        return f"{label}: {where}: {code} ({text}); the identity needs {PERMISSIONS}"
    if code in ("ValidationException", "ResourceNotFound") and "find" in text.lower():
        return (
            f"{label}: {where}: not found ({code}: {text}); check the name in options.jobs and "
            "options.region (aws sagemaker list-training-jobs --name-contains ...)"
        )
    return f"{label}: {where}: {code}: {text}"


def _time(value: object, name: str, label: str) -> dt.datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime | dt.date) and not isinstance(value, dt.datetime):
        value = value.isoformat()  # a TOML date
    try:
        moment = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(
            f'{label}: options.{name} {value!r} is not a date or time; write "2026-10-01"'
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
