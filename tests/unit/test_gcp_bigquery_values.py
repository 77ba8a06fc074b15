"""gcp.tables through the real BigQuery client against the local endpoint: bad values, copied rows
and shrinking partitions are refused before raw/ changes, and the stored partition stays current."""

from __future__ import annotations

import math
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from bq_endpoint import BigQueryEndpoint
from builders import ingest_with
from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row

from pipeline.common.errors import InputError
from pipeline.config.loader import Config, parse_config
from pipeline.ingest.gcp.bigquery import ingest_gcp_tables
from pipeline.warehouse.raw_store import RawStore

TODAY = date(2026, 11, 29)
DAY = date(2026, 11, 27)
PARTITION = f"{DETAILED_TABLE}$20261127"


def config(tmp_path: Path, endpoint: BigQueryEndpoint) -> Config:
    settings = {
        "tables": [DETAILED_TABLE],
        "api_endpoint": endpoint.url,
        "start_date": "2026-10-01",
    }
    return parse_config({"gcp": settings}, base=tmp_path)


def current(config: Config, day: date = DAY) -> str | None:
    return RawStore(config.warehouse / "raw", "gcp").current_id(DETAILED_TABLE, day.isoformat())


def night_one(tmp_path: Path, endpoint: BigQueryEndpoint, day: date = DAY, rows: int = 2):
    """The export with good rows in one partition, ingested; returns the config and delivery."""
    endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    endpoint.insert_rows(DETAILED_TABLE, [export_row(day, h, "1.5") for h in range(rows)], day)
    settings = config(tmp_path, endpoint)
    (delivery,) = ingest_with(ingest_gcp_tables, settings, TODAY).deliveries
    return settings, delivery.delivery_id


def with_values(hour: int, **values: Any) -> dict[str, Any]:
    row = export_row(DAY, hour, "0.25")
    for name, value in values.items():
        if "." in name:
            outer, inner = name.split(".")
            row[outer] = {**row[outer], inner: value}
        else:
            row[name] = value
    return row


BAD = {
    "nan": ({"cost": math.nan}, "cost", "'nan'"),
    "infinity": ({"cost_at_list": math.inf}, "cost_at_list", "'inf'"),
    "1e27": ({"cost": 1e27}, "cost", "'1e+27'"),
    "nan usage": ({"usage.amount": math.nan}, "usage.amount", "'nan'"),
    "end before start": (
        {"usage_end_time": datetime(2026, 11, 27, 1)},
        "usage_end_time",
        "'2026-11-27 01:00:00+00'",
    ),
    "empty currency": ({"currency": ""}, "currency", "''"),
    "no invoice month": ({"invoice.month": None}, "invoice.month", "None"),
    "invoice month with a dash": ({"invoice.month": "2026-11"}, "invoice.month", "'2026-11'"),
    "invoice month 13": ({"invoice.month": "202613"}, "invoice.month", "'202613'"),
    "blank account": ({"billing_account_id": " "}, "billing_account_id", "' '"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_value_in_a_partition_is_refused_and_the_stored_one_stays(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, case: str
) -> None:
    settings, first = night_one(tmp_path, bq_endpoint)
    values, column, shown = BAD[case]
    bq_endpoint.insert_rows(DETAILED_TABLE, [with_values(5, **values)], DAY)  # a third row
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_tables, settings, TODAY)
    message = str(caught.value)
    assert message.startswith(f"{PARTITION}: row ")
    assert " as read (export_time '2026-11-27 11:00:00+00', usage_start_time '2026-11-27 05:00" in (
        message
    )
    assert f", column {column}: {shown} is refused; it must be " in message
    assert "Fix the table (correct the row in BigQuery" in message
    assert "the partition is read afresh on the next run" in message
    assert current(settings) == first, "the stored partition stays current"
    assert len(list((settings.warehouse / "raw").rglob("data.parquet"))) == 1
    assert not (settings.warehouse / ".ingest-staging").exists()


def test_a_row_copied_in_the_table_is_refused(tmp_path: Path, bq_endpoint: BigQueryEndpoint):
    settings, first = night_one(tmp_path, bq_endpoint)
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(DAY, 0, "1.5")], DAY)  # hour 0 again
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_tables, settings, TODAY)
    message = str(caught.value)
    assert message.startswith(f"{PARTITION}: row ")
    assert "every column is equal, export_time 2026-11-27T06:00:00+00:00." in message
    assert "runcost never drops duplicates itself" in message
    assert current(settings) == first


def test_a_final_partition_that_shrinks_stops_the_run_unless_allowed(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    old = date(2026, 10, 20)  # invoice month 2026-10 closed, nothing exported for weeks: final
    settings, first = night_one(tmp_path, bq_endpoint, old, rows=10)
    bq_endpoint.drop_partition(DETAILED_TABLE, old)
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(old, h, "1.5") for h in range(7)], old)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_tables, settings, TODAY)
    message = str(caught.value)
    assert message.startswith(f"{DETAILED_TABLE}: the new delivery ")
    assert "partition 2026-10-20 holds 7 lines (30% fewer), but the current final delivery " in (
        message
    )
    assert "run once with `runcost run --allow-shrink 2026-10-20`" in message
    assert current(settings, old) == first
    allowed = ingest_with(ingest_gcp_tables, settings, TODAY, allow_shrink=["2026-10-20"])
    assert current(settings, old) == allowed.deliveries[0].delivery_id != first


def test_an_open_partition_may_shrink(tmp_path: Path, bq_endpoint: BigQueryEndpoint):
    settings, first = night_one(tmp_path, bq_endpoint, rows=10)
    bq_endpoint.drop_partition(DETAILED_TABLE, DAY)
    bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(DAY, 1, "1.5")], DAY)
    (delivery,) = ingest_with(ingest_gcp_tables, settings, TODAY).deliveries
    assert current(settings) == delivery.delivery_id != first
