"""AWS: CUR 2.0 exports (Parquet or gzip CSV, and legacy CUR), local or on S3."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pipeline.ingest.aws import classification
from pipeline.ingest.aws.check_causes import EXPLAINED
from pipeline.ingest.aws.settings import KEYS, AwsSettings, parse_aws, portable
from pipeline.ingest.provider import CheckReport, IngestContext, Ingested, Provider, TagKeys

if TYPE_CHECKING:
    import duckdb

    from pipeline.warehouse.raw_store import Delivery

NO_EXPORT = "Cost Explorer: not asked (runcost.toml has no [aws] exports)"
_COST_EXPLORER_COLUMNS = ("role", "key in runcost.toml", "CUR key", "status", "AWS keys")


def _ingest(settings: AwsSettings, context: IngestContext, allow_shrink: Iterable[str]) -> Ingested:
    from pipeline.ingest.aws.cur2 import ingest_aws_exports

    return Ingested(ingest_aws_exports(settings, context, allow_shrink))


def _register(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    from pipeline.ingest.aws.raw import register_cur

    register_cur(con, deliveries)


def _check(settings: AwsSettings, keys: TagKeys, remote: bool, published: bool) -> CheckReport:
    """Ask Cost Explorer whether each key is an active cost-allocation tag (only with exports)."""
    if not settings.exports:
        return CheckReport(lines=(NO_EXPORT,))
    if not remote:
        return CheckReport()
    import boto3

    from pipeline.ingest.aws.tags import check_tag_keys

    client = boto3.client("ce", region_name="us-east-1")
    statuses = check_tag_keys(client, keys.attempt, keys.experiment)
    advice = tuple(item.advice for item in statuses if item.advice)
    return CheckReport(
        title="Cost-allocation tags (Cost Explorer)",
        columns=_COST_EXPLORER_COLUMNS,
        rows=tuple(
            (item.role, item.configured, item.cur_key, item.status, ", ".join(item.aws_keys))
            for item in statuses
        ),
        warnings=advice,
        failed=bool(advice),
    )


PROVIDER = Provider(
    name="aws",
    source_format="aws_cur",
    section="aws",
    keys=KEYS,
    parse=parse_aws,
    sources=lambda settings: ["AWS CUR 2.0 deliveries"] if settings.exports else [],
    ingest=_ingest,
    register=_register,
    staging_models=(
        "aws_cur2_line_items",
        "aws_cur2_split_line_items",
        "aws_billed_line_items",
        "aws_line_profiles",
        "aws_cost_lines",
    ),
    tag_column="resource_tags",
    fingerprint=lambda settings: (settings.exports,),
    portable=portable,
    check=_check,
    explains=EXPLAINED,
    profile_sources=lambda _columns: classification.PROFILE_SOURCES,
    service_subcategories=classification.SERVICE_SUBCATEGORIES,
    macros=classification.MACROS,
)
