"""Google Cloud: the Cloud Billing export, as BigQuery extract files or read from its tables."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pipeline.ingest.gcp import classification
from pipeline.ingest.gcp.settings import KEYS, GcpSettings, parse_gcp
from pipeline.ingest.provider import CheckReport, IngestContext, Ingested, Provider, TagKeys
from pipeline.ingest.tag_keys import gcp_label_problem

if TYPE_CHECKING:
    import duckdb

    from pipeline.warehouse.raw_store import Delivery


def _ingest(settings: GcpSettings, context: IngestContext, allow_shrink: Iterable[str]) -> Ingested:
    from pipeline.ingest.gcp.files import ingest_gcp_files

    deliveries = ingest_gcp_files(settings, context, allow_shrink)
    if not settings.tables:
        return Ingested(deliveries)
    # imported only for a configured table: the BigQuery client takes about 0.75 CPU s to
    # import, a quarter of a small bill's run
    from pipeline.ingest.gcp.bigquery import ingest_gcp_tables

    tables = ingest_gcp_tables(settings, context, allow_shrink=allow_shrink)
    return Ingested([*deliveries, *tables.deliveries], tables.manifest())


def _register(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    from pipeline.ingest.gcp.raw import register_gcp

    register_gcp(con, deliveries)


def _sources(settings: GcpSettings) -> list[str]:
    found = [("GCP export files", settings.files), ("GCP export partitions", settings.tables)]
    return [name for name, used in found if used]


def _check(settings: GcpSettings, keys: TagKeys, remote: bool, published: bool) -> CheckReport:
    """Why a configured key can never match a Google Cloud label, when GCP lines are published."""
    if not published:
        return CheckReport()
    problems = map(gcp_label_problem, (*keys.attempt, *keys.experiment))
    return CheckReport(notes=tuple(problem for problem in problems if problem))


PROVIDER = Provider(
    name="gcp",
    source_format="gcp_billing_export",
    section="gcp",
    keys=KEYS,
    parse=parse_gcp,
    sources=_sources,
    ingest=_ingest,
    register=_register,
    staging_models=("gcp_billing_line_items", "gcp_line_profiles", "gcp_cost_lines"),
    tag_column="labels",
    fingerprint=lambda settings: (settings.tables, settings.files),
    check=_check,
    settles=True,
    bounds_months=False,  # a partition day holds rows of the previous invoice month
    profile_sources=lambda _columns: classification.PROFILE_SOURCES,
    service_subcategories=classification.SERVICE_SUBCATEGORIES,
    macros=classification.MACROS,
)
