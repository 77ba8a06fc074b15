"""GCP BigQuery ingest through the Storage Read API: a local gRPC BigQueryRead on 127.0.0.1 over
the REST endpoint's tables; partitions streamed batch by batch into the same raw Parquet the
REST path writes; REST as the fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bq_endpoint import BigQueryEndpoint
from gcp_export import DETAILED_TABLE
from test_gcp_bigquery import DAYS, _export

from pipeline.common.errors import ConfigError, InputError
from pipeline.config.loader import parse_config
from pipeline.run.nightly import run_pipeline

pytest.importorskip("google.cloud.bigquery_storage_v1", reason="the bigquery-storage extra")

from bq_storage_endpoint import BigQueryStorageEndpoint


@pytest.fixture
def storage(bq_endpoint: BigQueryEndpoint) -> Iterator[BigQueryStorageEndpoint]:
    endpoint = BigQueryStorageEndpoint(bq_endpoint, batch_rows=1).start()
    try:
        yield endpoint
    finally:
        endpoint.stop()


def _config(folder: Path, rest: BigQueryEndpoint, **gcp: Any) -> Any:
    settings = {
        "tables": [DETAILED_TABLE],
        "api_endpoint": rest.url,
        "start_date": DAYS[0].isoformat(),
        **gcp,
    }
    folder.mkdir(exist_ok=True)
    return parse_config({"gcp": settings}, base=folder)


def _raw(warehouse: Path) -> dict[str, Any]:
    """partition -> (Parquet schema, rows) of each current delivery."""
    found = {}
    for current in (warehouse / "raw" / "gcp" / DETAILED_TABLE).glob(
        "BILLING_PERIOD=*/current.json"
    ):
        delivery = json.loads(current.read_text())["delivery_id"]
        table = pq.read_table(current.parent / f"delivery={delivery}" / "data.parquet")
        found[current.parent.name.split("=", 1)[1]] = (table.schema, table.to_pylist())
    return found


def test_partitions_stream_through_the_storage_api_into_the_same_parquet_as_rest(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, storage: BigQueryStorageEndpoint
) -> None:
    _export(bq_endpoint)
    config = _config(tmp_path / "storage", bq_endpoint, storage_api_endpoint=storage.address)
    run_pipeline(config)
    # every partition came over gRPC, one record batch per row (batch_rows=1), none over REST
    assert sorted(s.partition for s in storage.sessions) == [d.isoformat() for d in DAYS]
    assert [s.rows_sent for s in storage.sessions] == [4] * len(DAYS)
    assert {s.parent for s in storage.sessions} == {"projects/billing-proj"}
    assert bq_endpoint.fetches() == []
    streamed = _raw(config.warehouse)

    rest_config = _config(tmp_path / "rest", bq_endpoint, read_api="rest")
    run_pipeline(rest_config)
    assert len(bq_endpoint.fetches()) == len(DAYS)
    assert len(storage.sessions) == len(DAYS)  # the REST run opened no session
    fetched = _raw(rest_config.warehouse)
    assert sorted(streamed) == sorted(fetched) == [d.isoformat() for d in DAYS]
    for day, (schema, rows) in streamed.items():
        assert schema == fetched[day][0]
        assert rows == fetched[day][1]
    rows = streamed[DAYS[3].isoformat()][1]
    assert sorted(row["cost"] for row in rows) == [4.000001, 4.010001, 4.020001, 4.030001]
    assert rows[0]["labels"] == [{"key": "user_attempt_id", "value": "att-3"}]


def test_a_local_rest_endpoint_without_a_storage_one_reads_over_rest(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, storage: BigQueryStorageEndpoint
) -> None:
    _export(bq_endpoint)
    run_pipeline(_config(tmp_path, bq_endpoint))
    assert (len(bq_endpoint.fetches()), storage.sessions) == (len(DAYS), [])


def test_read_session_permission_denied_names_partition_and_role(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, storage: BigQueryStorageEndpoint
) -> None:
    _export(bq_endpoint)
    storage.denied_parents.add("projects/billing-proj")
    config = _config(tmp_path, bq_endpoint, storage_api_endpoint=storage.address)
    with pytest.raises(InputError) as raised:
        run_pipeline(config)
    message = str(raised.value)
    assert message.startswith(f"{DETAILED_TABLE}: partition {DAYS[0]}: permission denied by the ")
    assert "roles/bigquery.readSessionUser) on project billing-proj" in message
    assert 'or set gcp.read_api = "rest"' in message
    assert not (config.warehouse / "raw" / "gcp").exists() or not any(
        (config.warehouse / "raw" / "gcp").rglob("current.json")
    )


@pytest.mark.parametrize(
    ("gcp", "error"),
    [
        ({"read_api": "grpc"}, 'gcp.read_api must be "auto"'),
        ({"storage_api_endpoint": "bigquerystorage.googleapis.com:443"}, "must be a local"),
    ],
)
def test_bad_read_settings_are_refused(tmp_path: Path, gcp: dict, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        parse_config({"gcp": {"tables": [DETAILED_TABLE], **gcp}}, base=tmp_path)


def test_row_restriction_is_the_partition() -> None:
    from pipeline.ingest.gcp.bigquery_storage import row_restriction

    assert row_restriction(date(2026, 5, 1)) == "_PARTITIONTIME = TIMESTAMP('2026-05-01')"


def test_storage_forced_without_a_local_storage_endpoint_is_refused(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _export(bq_endpoint)
    with pytest.raises(ConfigError, match=r"with gcp.api_endpoint needs gcp.storage_api_endpoint"):
        run_pipeline(_config(tmp_path, bq_endpoint, read_api="storage"))
