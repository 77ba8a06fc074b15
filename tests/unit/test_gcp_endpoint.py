"""The local BigQuery endpoint answers google-cloud-bigquery the way BigQuery does."""

from __future__ import annotations

from datetime import date

import pytest
from bq_endpoint import BigQueryEndpoint
from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row
from google.api_core import exceptions as api_errors
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

DAY = date(2026, 11, 27)


def _client(endpoint: BigQueryEndpoint) -> bigquery.Client:
    return bigquery.Client(
        project="billing-proj",
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=endpoint.url),
    )


def test_tables_get_and_tabledata_list_page_through_nested_rows() -> None:
    endpoint = BigQueryEndpoint(page_size=2).start()
    try:
        endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
        rows = [export_row(DAY, hour, f"1.{hour}", labels={"k": str(hour)}) for hour in range(5)]
        endpoint.insert_rows(DETAILED_TABLE, rows, DAY)
        client = _client(endpoint)
        table = client.get_table(DETAILED_TABLE)
        listed = client.list_rows(table).to_arrow(create_bqstorage_client=False)
    finally:
        endpoint.stop()
    assert (table.table_type, table.time_partitioning.type_, table.num_rows) == ("TABLE", "DAY", 5)
    assert [field.name for field in table.schema] == [item["name"] for item in DETAILED_SCHEMA]
    assert listed.num_rows == 5
    assert sorted(listed.column("cost").to_pylist()) == [1.0, 1.1, 1.2, 1.3, 1.4]
    assert listed.column("labels").to_pylist()[0] == [{"key": "k", "value": "0"}]


def test_jobs_query_and_partitiontime(bq_endpoint: BigQueryEndpoint) -> None:
    bq_endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(DAY, 3, "2.5")], DAY)
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(DAY, 4, "0.5")], date(2026, 11, 28))
    rows = _client(bq_endpoint).query_and_wait(
        f"select date(_PARTITIONTIME) as day, sum(cost) as cost from `{DETAILED_TABLE}` "
        "group by day order by day"
    )
    assert [tuple(row.values()) for row in rows] == [
        (date(2026, 11, 27), 2.5),
        (date(2026, 11, 28), 0.5),
    ]


def test_a_view_has_no_partitiontime_column(bq_endpoint: BigQueryEndpoint) -> None:
    bq_endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    bq_endpoint.create_view("billing-proj.billing_export.costs", DETAILED_TABLE)
    client = _client(bq_endpoint)
    assert client.get_table("billing-proj.billing_export.costs").table_type == "VIEW"
    with pytest.raises(api_errors.BadRequest, match="Unrecognized name: _PARTITIONTIME"):
        client.query(
            "select count(*) from `billing-proj.billing_export.costs` "
            "where date(_PARTITIONTIME) = '2026-11-27'"
        ).result()
