"""What an MLflow run's tags and params name beyond its status: resources and its end reason."""

from __future__ import annotations

import re
from typing import Any

from pipeline.common.errors import InputError

DEFAULT_RESOURCE_TAGS = ("instance_id",)
DEFAULT_STATUS_TAG = "end_reason"
# end_reason values that refine a FAILED or KILLED run; any other value is its failure_reason
END_REASONS = {"timeout": "timeout", "interrupted": "interrupted"}
ENDED = ("FAILED", "KILLED")
# The id the bill uses (CUR line_item_resource_id) and the kind, by the shape of a logged value.
_KINDS = (
    (re.compile(r"^s3://([^/]+)"), "s3_bucket"),
    (re.compile(r"^arn:aws:s3:::([^/]+)"), "s3_bucket"),
    (re.compile(r"^(i-[0-9a-f]+)$"), "ec2_instance"),
    (re.compile(r"^(vol-[0-9a-f]+)$"), "ebs_volume"),
)
# separators of a list value: commas, whitespace, and the brackets and quotes of a JSON list or
# of a Python list as mlflow.log_param writes it (str(list))
_SEPARATORS = re.compile(r"[\s,\[\]\"']+")


def resource_names(options: dict[str, Any], label: str) -> tuple[str, ...]:
    """The run tags (or params) naming resources: options.resource_tags, else resource_tag."""
    names = options.get("resource_tags")
    if names is not None and "resource_tag" in options:
        raise InputError(
            f"{label}: set options.resource_tags (a list of tag names), not resource_tag too"
        )
    if names is None:
        single = options.get("resource_tag", DEFAULT_RESOURCE_TAGS[0])
        return (str(single),) if single else ()
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise InputError(
            f"{label}: options.resource_tags must be a list of tag names: resource_tags = "
            '["instance_id", "volume_ids", "checkpoint_bucket"]'
        )
    return tuple(name.strip() for name in names)


def resources(fields: dict[str, str], names: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """(resource_id, resource_kind) for every id the run names under `names`, once each.

    A value may list several ids; s3://bucket/... and arn:aws:s3:::bucket name the bucket, the
    id S3's billing lines carry.
    """
    found: dict[str, str | None] = {}
    for name in names:
        for piece in _SEPARATORS.split(fields.get(name) or ""):
            if not piece:
                continue
            resource_id, kind = piece, None
            for pattern, named in _KINDS:
                match = pattern.match(piece)
                if match:
                    resource_id, kind = match.group(1), named
                    break
            found.setdefault(resource_id, kind)
    return list(found.items())


def end_reason(raw_status: object, value: str | None) -> tuple[str | None, str | None]:
    """(canonical status, failure_reason) a FAILED or KILLED run's end-reason tag gives.

    `timeout` and `interrupted` are statuses; another value is the failure reason of a run
    that ended so. A run that finished, or still runs, keeps MLflow's status.
    """
    if raw_status not in ENDED or not value or not value.strip():
        return None, None
    reason = value.strip()
    status = END_REASONS.get(reason.lower())
    return (status, None) if status else (None, reason)
