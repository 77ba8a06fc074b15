"""Tag keys as users write them (`attempt-id`, `ml:attempt_id`), normalized as CUR 2.0 does."""

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
