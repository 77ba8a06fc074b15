"""GCP BigQuery ingest against the local endpoint: which export it is, and tables it refuses."""

from __future__ import annotations

import gzip
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bq_endpoint import BigQueryEndpoint
from builders import ingest_with
from gcp_export import (
    DETAILED_SCHEMA,
    DETAILED_TABLE,
    STANDARD_SCHEMA,
    export_row,
    without,
)

from pipeline.common.errors import ConfigError, InputError
from pipeline.config.loader import Config, parse_config
from pipeline.ingest.gcp.bigquery import ingest_gcp_tables

TODAY = date(2026, 11, 29)
DAY = date(2026, 11, 27)
DATASET = "billing-proj.billing_export"
STANDARD_OTHER = f"{DATASET}.gcp_billing_export_v1_0A0A0A_0B0B0B_0C0C0C"
WHERE_TO_LOOK = (
    "point gcp.tables at the table the Cloud Billing export writes (Billing > Billing export > "
    "BigQuery export shows its project and dataset): "
    "gcp_billing_export_resource_v1_<BILLING_ACCOUNT_ID> for the detailed export, or "
    "gcp_billing_export_v1_<BILLING_ACCOUNT_ID> for the standard one"
)


def _config(tmp_path: Path, endpoint: BigQueryEndpoint, *tables: str, **gcp: Any) -> Config:
    settings = {"tables": list(tables), "api_endpoint": endpoint.url, **gcp}
    return parse_config({"gcp": settings}, base=tmp_path)


def _table(endpoint: BigQueryEndpoint, table_id: str, schema: list[dict[str, Any]]) -> None:
    endpoint.create_table(table_id, schema)
    endpoint.insert_rows(table_id, [export_row(DAY, hour, "2.5") for hour in range(3)], DAY)


def _refused(config: Config) -> str:
    with pytest.raises(InputError) as error:
        ingest_with(ingest_gcp_tables, config, today=TODAY)
    assert not (config.warehouse / "raw").exists(), "nothing is stored"
    return str(error.value)


def test_standard_and_detailed_exports_are_told_apart_by_their_columns(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    _table(bq_endpoint, STANDARD_OTHER, STANDARD_SCHEMA)
    result = ingest_with(
        ingest_gcp_tables,
        _config(tmp_path, bq_endpoint, DETAILED_TABLE, STANDARD_OTHER),
        today=TODAY,
    )

    assert [(item["table"], item["kind"]) for item in result.tables] == [
        (DETAILED_TABLE, "detailed"),
        (STANDARD_OTHER, "standard"),
    ]
    files = {item.export: item.files[0] for item in result.deliveries}
    assert pq.read_schema(files[DETAILED_TABLE]).names == [x["name"] for x in DETAILED_SCHEMA]
    assert pq.read_schema(files[STANDARD_OTHER]).names == [x["name"] for x in STANDARD_SCHEMA]
    assert "resource" not in pq.read_schema(files[STANDARD_OTHER]).names
    # the columns the queries selected came from INFORMATION_SCHEMA, never `select *`
    assert not any("select *" in record.sql.lower() for record in bq_endpoint.queries)
    record = json.loads((files[STANDARD_OTHER].parent / "delivery.json").read_text())
    assert (record["table_kind"], record["partition"], record["fingerprint"]) == (
        "standard",
        DAY.isoformat(),
        {"rows": 3, "max_export_time": "2026-11-27T08:00:00+00:00", "sum_cost": "7.5"},
    )


def test_an_older_table_without_the_newer_optional_columns_is_read(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    old = without(DETAILED_SCHEMA, "price", "subscription", "cost_at_list", "tags")
    _table(bq_endpoint, DETAILED_TABLE, old)
    result = ingest_with(
        ingest_gcp_tables, _config(tmp_path, bq_endpoint, DETAILED_TABLE), today=TODAY
    )
    table = pq.read_table(result.deliveries[0].files[0])
    assert table.column_names == [item["name"] for item in old]
    assert table.num_rows == 3


def test_rows_over_many_pages_are_all_read(tmp_path: Path) -> None:
    endpoint = BigQueryEndpoint(page_size=2).start()
    try:
        endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
        rows = [export_row(DAY, hour, f"0.{hour + 1:02d}") for hour in range(7)]
        endpoint.insert_rows(DETAILED_TABLE, rows, DAY)
        result = ingest_with(
            ingest_gcp_tables, _config(tmp_path, endpoint, DETAILED_TABLE), today=TODAY
        )
    finally:
        endpoint.stop()
    costs = pq.read_table(result.deliveries[0].files[0]).column("cost").to_pylist()
    assert sorted(costs) == [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]


def test_export_files_load_into_chosen_partitions(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    """The endpoint takes the export as BigQuery's extract job writes it (NDJSON, Parquet)."""
    bq_endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    line = {
        **export_row(DAY, 1, "3.25", credits=[("PROMOTION", "-1.25")]),
        "usage_start_time": "2026-11-27 01:00:00 UTC",
        "usage_end_time": "2026-11-27 02:00:00 UTC",
        "export_time": "2026-11-27 07:12:45.5 UTC",
    }
    ndjson = tmp_path / "export.json"
    ndjson.write_text(json.dumps(line) + "\n", encoding="utf-8")
    parquet = tmp_path / "export.parquet"
    pq.write_table(pa.Table.from_pylist([export_row(DAY - timedelta(days=1), 2, "1.75")]), parquet)
    assert bq_endpoint.load_file(DETAILED_TABLE, ndjson, DAY) == 1
    assert bq_endpoint.load_file(DETAILED_TABLE, parquet, DAY - timedelta(days=1)) == 1

    result = ingest_with(
        ingest_gcp_tables, _config(tmp_path, bq_endpoint, DETAILED_TABLE), today=TODAY
    )
    by_day = {item.billing_period: pq.read_table(item.files[0]) for item in result.deliveries}
    assert sorted(by_day) == ["2026-11-26", "2026-11-27"]
    row = by_day["2026-11-27"].to_pylist()[0]
    assert (row["cost"], row["credits"][0]["amount"]) == (3.25, -1.25)
    assert row["export_time"].isoformat() == "2026-11-27T07:12:45.500000+00:00"
    assert by_day["2026-11-26"].column("cost").to_pylist() == [1.75]


def test_an_export_file_makes_the_table_and_fills_each_usage_day(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    rows = [  # two hours of one day and one of the next (rows equal in every column are copies)
        export_row(
            DAY - timedelta(days=n),
            5 + index,
            f"{n}.5",
            labels={"a": "b"},
            credits=[("FREE_TIER", "-0.5")],
        )
        for index, n in enumerate((0, 1, 1))
    ]
    parquet = tmp_path / "export.parquet"  # as an extract job writes it: FLOAT is double
    floats = [
        {**row, "cost": float(row["cost"]), "cost_at_list": float(row["cost"])} for row in rows
    ]
    pq.write_table(pa.Table.from_pylist(floats), parquet)
    schema = pq.read_schema(parquet)
    bq_endpoint.create_table(DETAILED_TABLE, schema)
    assert bq_endpoint.load_file(DETAILED_TABLE, parquet) == 3
    ndjson = tmp_path / "late.json.gz"
    late = {**export_row(DAY, 6, "9"), "usage_start_time": "2026-11-27 06:00:00 UTC"}
    with gzip.open(ndjson, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(late, default=str) + "\n")
    assert bq_endpoint.load_file(DETAILED_TABLE, ndjson) == 1

    result = ingest_with(
        ingest_gcp_tables, _config(tmp_path, bq_endpoint, DETAILED_TABLE), today=TODAY
    )
    costs = {
        item.billing_period: sorted(pq.read_table(item.files[0]).column("cost").to_pylist())
        for item in result.deliveries
    }
    assert costs == {"2026-11-26": [1.5, 1.5], "2026-11-27": [0.5, 9.0]}
    assert pq.read_schema(result.deliveries[0].files[0]).names == schema.names


def test_a_prefix_names_the_tables_it_starts(tmp_path: Path, bq_endpoint: BigQueryEndpoint) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    prefix = f"{DATASET}.gcp_billing_export_resource_v1_"
    message = _refused(_config(tmp_path, bq_endpoint, prefix))
    assert message == (
        f"{prefix}: no such table; it is a prefix of {DETAILED_TABLE}; gcp.tables needs the "
        f'full name of one export table, such as "{DETAILED_TABLE}"'
    )


def test_a_missing_table_lists_the_export_tables_of_its_dataset(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    missing = f"{DATASET}.billing_costs"
    assert _refused(_config(tmp_path, bq_endpoint, missing)) == (
        f"{missing}: no such table in {DATASET} (export tables there: {DETAILED_TABLE}); "
        f"{WHERE_TO_LOOK}"
    )
    elsewhere = "billing-proj.other_dataset.billing_costs"
    assert _refused(_config(tmp_path, bq_endpoint, elsewhere)) == (
        f"{elsewhere}: BigQuery cannot find dataset billing-proj.other_dataset (Not found: "
        f"Dataset billing-proj:other_dataset was not found); {WHERE_TO_LOOK}"
    )


def test_a_view_has_no_partitiontime(tmp_path: Path, bq_endpoint: BigQueryEndpoint) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    view = f"{DATASET}.billing_view"
    bq_endpoint.create_view(view, DETAILED_TABLE)
    assert _refused(_config(tmp_path, bq_endpoint, view)) == (
        f"{view}: is a view, so it has no _PARTITIONTIME and runcost cannot read it one daily "
        f"partition at a time; {WHERE_TO_LOOK} ({DETAILED_TABLE} in the same dataset)"
    )


def test_a_table_not_partitioned_by_ingestion_time_is_refused(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    copy = f"{DATASET}.billing_copy"
    bq_endpoint.create_table(copy, DETAILED_SCHEMA, partitioned=False)
    assert _refused(_config(tmp_path, bq_endpoint, copy)) == (
        f"{copy}: is not partitioned by ingestion time, so it has no _PARTITIONTIME and runcost "
        f"cannot read it one daily partition at a time; {WHERE_TO_LOOK}"
    )


@pytest.mark.parametrize(
    ("schema", "missing"),
    [
        (without(DETAILED_SCHEMA, "credits"), "credits.amount, credits.type"),
        (without(DETAILED_SCHEMA, "export_time", "currency"), "export_time, currency"),
        (
            [
                *without(DETAILED_SCHEMA, "invoice"),
                {
                    "name": "invoice",
                    "type": "RECORD",
                    "fields": [{"name": "publisher_type", "type": "STRING"}],
                },
            ],
            "invoice.month",
        ),
    ],
)
def test_a_missing_required_column_is_named(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, schema: list[dict[str, Any]], missing: str
) -> None:
    bq_endpoint.create_table(DETAILED_TABLE, schema)
    assert _refused(_config(tmp_path, bq_endpoint, DETAILED_TABLE)) == (
        f"{DETAILED_TABLE}: the table has no column {missing}, which runcost needs; is it the "
        "Cloud Billing export itself (not a copy or a view with fewer columns)? "
        f"{WHERE_TO_LOOK}"
    )


def _roles(job_project: str) -> str:
    return (
        "the account runcost runs as needs BigQuery Data Viewer (roles/bigquery.dataViewer) on "
        f"dataset {DATASET} and BigQuery Job User (roles/bigquery.jobUser) on project "
        f"{job_project} (set gcp.billing_project to run the queries in another project)"
    )


def test_permission_denied_on_the_dataset_names_the_roles(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    bq_endpoint.deny_dataset(DATASET)
    assert _refused(_config(tmp_path, bq_endpoint, DETAILED_TABLE)) == (
        f"{DETAILED_TABLE}: permission denied by BigQuery (Access Denied: Table "
        "billing-proj:billing_export.INFORMATION_SCHEMA.TABLES: User does not have permission "
        "to query table billing-proj:billing_export.INFORMATION_SCHEMA.TABLES, or perhaps it "
        f"does not exist.); {_roles('billing-proj')}"
    )


def test_permission_denied_on_the_billing_project_names_the_roles(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _table(bq_endpoint, DETAILED_TABLE, DETAILED_SCHEMA)
    bq_endpoint.deny_jobs("finops-queries")
    config = _config(tmp_path, bq_endpoint, DETAILED_TABLE, billing_project="finops-queries")
    assert _refused(config) == (
        f"{DETAILED_TABLE}: permission denied by BigQuery (Access Denied: Project finops-queries: "
        "User does not have bigquery.jobs.create permission in project finops-queries.); "
        f"{_roles('finops-queries')}"
    )


def test_without_credentials_the_error_says_how_to_provide_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    config = parse_config({"gcp": {"tables": [DETAILED_TABLE]}}, base=tmp_path)
    with pytest.raises(ConfigError) as error:
        ingest_with(ingest_gcp_tables, config, today=TODAY)
    assert str(error.value) == (
        "gcp.tables: no Google credentials found (Application Default Credentials); run "
        "`gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a "
        "service account key file, or run on Google Cloud as a service account that has BigQuery "
        "Data Viewer on the export's dataset and BigQuery Job User on billing-proj; runcost "
        "never reads credentials from runcost.toml"
    )
    assert not (tmp_path / "warehouse" / "raw").exists()
