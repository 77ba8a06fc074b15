"""Whether the attempt and experiment tag keys are active cost-allocation tags (Cost Explorer)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from pipeline.common.errors import InputError
from pipeline.ingest.tag_keys import aws_tag_cur_key, cur_tag_key

log = logging.getLogger("runcost")
PERMISSION = "ce:ListCostAllocationTags"
FIX = (
    "activate it in the AWS Billing console > Cost allocation tags, signed in to the management "
    "(payer) account; activation takes up to 24 hours and is not retroactive: lines billed "
    "before it never carry the tag"
)


@dataclass(frozen=True)
class TagKeyStatus:
    """One configured key: `active`, `inactive` or `absent` as a cost-allocation tag."""

    role: str  # "attempt" or "experiment"
    configured: str  # as written in runcost.toml
    cur_key: str  # the resource_tags key runcost reads
    status: str
    aws_keys: tuple[str, ...]  # the Cost Explorer tag keys that normalize to cur_key

    @property
    def advice(self) -> str | None:
        """What to do about it, or None when the key is active."""
        if self.status == "active":
            return None
        if self.status == "inactive":
            keys = ", ".join(self.aws_keys)
            return f"{self.role} tag {keys} is not an active cost-allocation tag: {FIX}"
        return (
            f"{self.role} tag {self.configured!r} is not a cost-allocation tag: AWS has not seen "
            f"it on any resource of the payer account yet. Tag the resources (or pods) with it, "
            f"then {FIX}"
        )


def list_cost_allocation_tags(client: Any) -> list[dict[str, Any]]:
    """Every cost-allocation tag Cost Explorer knows, following NextToken."""
    tags: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"MaxResults": 1000}
    while True:
        try:
            page = client.list_cost_allocation_tags(**kwargs)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in ("AccessDeniedException", "AccessDenied", "UnauthorizedOperation"):
                raise InputError(
                    f"Cost Explorer refused to list cost-allocation tags ({code}): allow "
                    f"{PERMISSION} for the identity runcost runs as (it is read from the "
                    "standard AWS credential chain), in the management account"
                ) from error
            raise InputError(f"Cost Explorer ListCostAllocationTags failed: {error}") from error
        except NoCredentialsError as error:
            raise InputError(
                "no AWS credentials found: set AWS_PROFILE, the AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY variables, or run where an instance role is attached"
            ) from error
        except BotoCoreError as error:
            raise InputError(f"Cost Explorer could not be reached: {error}") from error
        tags.extend(page.get("CostAllocationTags", []))
        token = page.get("NextToken")
        if not token:
            return tags
        kwargs["NextToken"] = token


def check_tag_keys(
    client: Any, attempt_keys: tuple[str, ...], experiment_keys: tuple[str, ...]
) -> list[TagKeyStatus]:
    """The status of each configured key, matched to AWS's keys by CUR's normalization."""
    tags = list_cost_allocation_tags(client)
    results = []
    for role, keys in (("attempt", attempt_keys), ("experiment", experiment_keys)):
        for key in keys:
            wanted = cur_tag_key(key)
            found = [
                tag
                for tag in tags
                if tag.get("TagKey") and _cur_key(tag["TagKey"], tag.get("Type")) == wanted
            ]
            active = any(tag.get("Status") == "Active" for tag in found)
            status = "active" if active else ("inactive" if found else "absent")
            aws_keys = tuple(sorted(tag["TagKey"] for tag in found))
            result = TagKeyStatus(role, key, wanted, status, aws_keys)
            if result.advice:
                log.warning(result.advice)
            results.append(result)
    return results


def _cur_key(tag_key: str, tag_type: str | None) -> str:
    """The resource_tags key CUR gives a Cost Explorer tag key of this type."""
    return aws_tag_cur_key(tag_key, aws_generated=tag_type == "AWSGenerated")
