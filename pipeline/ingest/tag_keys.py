"""Tag keys as users write them (`attempt-id`, `ml:attempt_id`), spelled as each provider stores.

One configured key serves every provider (DESIGN.md section 7): CUR lines are searched under the
CUR-normalized `resource_tags` key (`attempt-id` -> `user_attempt_id`); Google Cloud labels (and
GKE's `k8s-label/<key>`) and FOCUS `Tags` under the key exactly as configured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.common.errors import ConfigError

# CUR turns a tag key into a column-safe name: a capital that starts a word begins a new
# snake_case word (aws:ecs:serviceName -> aws_ecs_service_name), everything is lowercased,
# and each run of other characters becomes one underscore.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_WORD = re.compile(r"[^a-z0-9]+")
_PREFIXES = ("user_", "aws_")
# Google Cloud label keys: a lowercase letter first, then lowercase letters, digits, _ and -, at
# most 63 characters (https://cloud.google.com/compute/docs/labeling-resources#requirements).
_GCP_LABEL = re.compile(r"[a-z][a-z0-9_-]{0,62}")


def cur_tag_key(key: str) -> str:
    """The `resource_tags` key CUR writes for a tag key as a user writes it in runcost.toml.

    `:`, `.`, `/`, `-` and whitespace become `_`, and a user tag gets the `user_` prefix:
    `attempt-id` and `ml:attempt.id` become `user_attempt_id` and `user_ml_attempt_id`.
    A key already starting with `user_` or `aws_` is taken as a CUR key and kept as it is;
    an AWS-generated key written as `aws:eks:cluster-name` becomes `aws_eks_cluster_name`.
    camelCase becomes snake_case and everything is lowercased, as in AWS's own CUR column
    names (`AttemptId` -> `user_attempt_id`).
    """
    stripped = key.strip()
    if not stripped:
        raise ConfigError(f'tag key {key!r} is empty; write it as in AWS, such as "attempt-id"')
    if stripped.startswith(_PREFIXES):
        return stripped
    if stripped.startswith("aws:"):
        return aws_tag_cur_key(stripped, aws_generated=True)
    return aws_tag_cur_key(stripped, aws_generated=False)


def aws_tag_cur_key(tag_key: str, aws_generated: bool) -> str:
    """The CUR key of a tag key exactly as AWS lists it (Cost Explorer, Billing console)."""
    if aws_generated:
        return "aws_" + snake_key(tag_key.removeprefix("aws:"))
    return "user_" + snake_key(tag_key)


def snake_key(text: str) -> str:
    """`attempt-id`, `attemptId`, `ml:attempt.id` -> `attempt_id`, `attempt_id`, `ml_attempt_id`."""
    return _NOT_WORD.sub("_", _CAMEL.sub("_", text.strip()).lower()).strip("_")


def cur_tag_keys(keys: Iterable[str]) -> list[str]:
    """Each key normalized, first occurrence kept when two keys normalize alike."""
    seen: dict[str, None] = {}
    for key in keys:
        seen.setdefault(cur_tag_key(key), None)
    return list(seen)


def exact_tag_keys(keys: Iterable[str]) -> list[str]:
    """Each key as configured (surrounding spaces dropped), first occurrence kept: the keys
    searched in Google Cloud labels and FOCUS `Tags`, which keep keys as the provider wrote them."""
    seen: dict[str, None] = {}
    for key in keys:
        stripped = key.strip()
        if not stripped:
            raise ConfigError(
                f'tag key {key!r} is empty; write it as on the resources, such as "attempt-id"'
            )
        seen.setdefault(stripped, None)
    return list(seen)


def gcp_label_problem(key: str) -> str | None:
    """Why ``key`` can never be a Google Cloud label key (it may still be a GKE pod label, read
    as `k8s-label/<key>`), or None when it can be one."""
    if _GCP_LABEL.fullmatch(key.strip()):
        return None
    return (
        f"tag key {key.strip()!r} cannot be a Google Cloud label key (a lowercase letter first, "
        "then lowercase letters, digits, _ and -, at most 63 characters): GCP lines are searched "
        "for it "
        "only as a GKE pod label (k8s-label/<key>); add the key as it is written on your GCP "
        'resources, such as "attempt-id", to attempt_tag_keys or experiment_tag_keys'
    )
