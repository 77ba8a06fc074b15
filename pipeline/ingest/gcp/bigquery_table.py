"""What a configured export table is: its columns, standard or detailed, read from
INFORMATION_SCHEMA, with an error that says how to point gcp.tables at the export table."""

from __future__ import annotations

from dataclasses import dataclass

from google.api_core import exceptions as api_errors
from google.cloud import bigquery

from pipeline.common.errors import InputError
from pipeline.ingest.gcp.bigquery_client import message, query

EXPORT_PREFIX = "gcp_billing_export"
DETAILED_MARKER = "resource"  # resource.name and resource.global_name: detailed export only
# The columns (and nested fields) the staging models read; a table without one cannot be used.
REQUIRED_FIELDS = (
    "billing_account_id",
    "service.id",
    "service.description",
    "sku.id",
    "sku.description",
    "usage_start_time",
    "usage_end_time",
    "project.id",
    "labels.key",
    "labels.value",
    "export_time",
    "cost",
    "currency",
    "currency_conversion_rate",
    "usage.amount",
    "usage.unit",
    "credits.amount",
    "credits.type",
    "invoice.month",
    "cost_type",
)
_WHERE_TO_LOOK = (
    "point gcp.tables at the table the Cloud Billing export writes (Billing > Billing export > "
    "BigQuery export shows its project and dataset): "
    "gcp_billing_export_resource_v1_<BILLING_ACCOUNT_ID> for the detailed export, or "
    "gcp_billing_export_v1_<BILLING_ACCOUNT_ID> for the standard one"
)


@dataclass(frozen=True)
class ExportTable:
    """A billing export table as INFORMATION_SCHEMA describes it."""

    table_id: str
    kind: str  # "standard" or "detailed"
    columns: tuple[str, ...]  # top-level columns, in table order (no pseudo-columns)


def inspect_table(client: bigquery.Client, table_id: str) -> ExportTable:
    """Check that ``table_id`` is an ingestion-time partitioned export table with every required
    column; return its columns and whether it is the standard or the detailed export."""
    project, dataset, name = table_id.rsplit(".", 2)
    schema = f"`{project}.{dataset}`.INFORMATION_SCHEMA"
    try:
        tables = {
            row["table_name"]: row["table_type"]
            for row in query(
                client,
                f"select table_name, table_type from {schema}.TABLES "
                "where starts_with(table_name, @table) "
                f"or starts_with(table_name, '{EXPORT_PREFIX}') order by table_name",
                {"table": name},
                table_id,
            )
        }
    except api_errors.NotFound as error:
        raise InputError(
            f"{table_id}: BigQuery cannot find dataset {project}.{dataset} ({message(error)}); "
            f"{_WHERE_TO_LOOK}"
        ) from error
    exports = [f"{project}.{dataset}.{item}" for item in tables if item.startswith(EXPORT_PREFIX)]
    if name not in tables:
        longer = [f"{project}.{dataset}.{item}" for item in tables if item.startswith(name)]
        if longer:
            raise InputError(
                f"{table_id}: no such table; it is a prefix of {', '.join(longer)}; gcp.tables "
                f'needs the full name of one export table, such as "{longer[0]}"'
            )
        found = f" (export tables there: {', '.join(exports)})" if exports else ""
        raise InputError(
            f"{table_id}: no such table in {project}.{dataset}{found}; {_WHERE_TO_LOOK}"
        )

    rows = list(
        query(
            client,
            f"select column_name, ordinal_position from {schema}.COLUMNS where table_name = @table",
            {"table": name},
            table_id,
        )
    )
    pseudo = {row["column_name"].upper() for row in rows if row["ordinal_position"] is None}
    if "_PARTITIONTIME" not in pseudo:
        what = "a view" if tables[name] == "VIEW" else "not partitioned by ingestion time"
        others = [item for item in exports if item != table_id]
        suggestion = f" ({', '.join(others)} in the same dataset)" if others else ""
        raise InputError(
            f"{table_id}: is {what}, so it has no _PARTITIONTIME and runcost cannot read it one "
            f"daily partition at a time; {_WHERE_TO_LOOK}{suggestion}"
        )
    ordered = sorted(
        (row for row in rows if row["ordinal_position"] is not None),
        key=lambda row: row["ordinal_position"],
    )
    columns = tuple(row["column_name"] for row in ordered)

    paths = {
        row["field_path"].lower()
        for row in query(
            client,
            f"select field_path from {schema}.COLUMN_FIELD_PATHS where table_name = @table",
            {"table": name},
            table_id,
        )
    }
    missing = [item for item in REQUIRED_FIELDS if item not in paths]
    if missing:
        raise InputError(
            f"{table_id}: the table has no column {', '.join(missing)}, which runcost needs; "
            "is it the Cloud Billing export itself (not a copy or a view with fewer columns)? "
            f"{_WHERE_TO_LOOK}"
        )
    kind = "detailed" if DETAILED_MARKER in columns else "standard"
    return ExportTable(table_id, kind, columns)
