"""GCP BigQuery ingest over several runs: a run that died mid-switch, a partition that expired."""

from __future__ import annotations

import json
import logging
from datetime import date, timedelta
from pathlib import Path

import pytest
from bq_endpoint import BigQueryEndpoint
from builders import ingest_with
from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row

from pipeline.config.loader import Config, parse_config
from pipeline.ingest.gcp.bigquery import ingest_gcp_tables
from pipeline.warehouse import raw_store

TODAY = date(2026, 11, 29)
DAYS = [TODAY - timedelta(days=offset) for offset in (3, 2, 1)]


def _setup(tmp_path: Path, endpoint: BigQueryEndpoint) -> Config:
    endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    for day in DAYS:
        endpoint.insert_rows(DETAILED_TABLE, [export_row(day, 1, "1.5")], day)
    settings = {"tables": [DETAILED_TABLE], "api_endpoint": endpoint.url}
    return parse_config({"gcp": settings}, base=tmp_path)


def _folders(config: Config, day: date) -> list[str]:
    period = config.warehouse / "raw" / "gcp" / DETAILED_TABLE / f"BILLING_PERIOD={day}"
    return sorted(path.name for path in period.glob("delivery=*"))


def test_a_run_that_dies_while_switching_is_finished_by_the_next(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _setup(tmp_path, bq_endpoint)
    stored = ingest_with(ingest_gcp_tables, config, TODAY).deliveries
    first = {item.billing_period: item.delivery_id for item in stored}
    for day in DAYS[1:]:
        bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(day, 2, "0.25")], day)

    real = raw_store.RawStore.set_current
    calls: list[str] = []

    def dies_on_second(self: raw_store.RawStore, export: str, period: str, delivery: str) -> None:
        calls.append(period)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed between two partitions
        real(self, export, period, delivery)

    monkeypatch.setattr(raw_store.RawStore, "set_current", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        ingest_with(ingest_gcp_tables, config, TODAY)
    monkeypatch.setattr(raw_store.RawStore, "set_current", real)
    bq_endpoint.queries.clear()

    result = ingest_with(ingest_gcp_tables, config, TODAY)
    current = {item.billing_period: item.delivery_id for item in result.deliveries}
    # the partition whose switch was lost is read again and lands on the delivery already stored
    assert bq_endpoint.fetches() == [(DETAILED_TABLE, DAYS[2].isoformat())]
    assert current[DAYS[0].isoformat()] == first[DAYS[0].isoformat()]
    for day in DAYS[1:]:
        assert current[day.isoformat()] != first[day.isoformat()]
        assert _folders(config, day) == sorted(
            f"delivery={item}" for item in (first[day.isoformat()], current[day.isoformat()])
        )
    assert [item.new for item in result.deliveries] == [False, False, True]
    recorded = json.loads((result.deliveries[2].folder / "delivery.json").read_text())
    assert recorded["fingerprint"]["rows"] == 2


def test_a_partition_gone_from_bigquery_stays_current_with_a_warning(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    config = _setup(tmp_path, bq_endpoint)
    ingest_with(ingest_gcp_tables, config, TODAY)
    bq_endpoint.drop_partition(DETAILED_TABLE, DAYS[0])
    with caplog.at_level(logging.WARNING, logger="runcost"):
        result = ingest_with(ingest_gcp_tables, config, TODAY)
    assert [item.billing_period for item in result.deliveries] == [day.isoformat() for day in DAYS]
    warnings = [item.getMessage() for item in caplog.records if item.levelno >= logging.WARNING]
    assert warnings == [
        f"{DETAILED_TABLE}: partition {DAYS[0]} is stored in raw/ but BigQuery no longer has it "
        "(partition expiration?); the stored copy stays current"
    ]
