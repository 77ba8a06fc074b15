"""GCP BigQuery ingest end to end over HTTP: backfill, a second night with late rows, re-reads."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bq_endpoint import BigQueryEndpoint, QueryRecord
from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row

from pipeline.common.errors import InputError
from pipeline.config.loader import parse_config
from pipeline.run.nightly import run_pipeline

TODAY = datetime.now(UTC).date()
DAYS = [TODAY - timedelta(days=offset) for offset in (14, 13, 12, 4, 3, 2)]  # two weeks back


def _config(tmp_path: Path, endpoint: BigQueryEndpoint, **gcp: Any) -> Any:
    settings = {
        "tables": [DETAILED_TABLE],
        "api_endpoint": endpoint.url,
        "start_date": DAYS[0].isoformat(),
        **gcp,
    }
    return parse_config({"gcp": settings}, base=tmp_path)


def _export(endpoint: BigQueryEndpoint) -> None:
    endpoint.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    for number, day in enumerate(DAYS):
        rows = [
            export_row(
                day,
                hour,
                f"{number + 1}.{hour:02d}0001",
                labels={"user_attempt_id": f"att-{number}"},
                credits=[("SUSTAINED_USAGE_DISCOUNT", "-0.25"), ("PROMOTION", "-0.1")],
            )
            for hour in range(4)
        ]
        endpoint.insert_rows(DETAILED_TABLE, rows, day)


def _current(warehouse: Path) -> dict[str, str]:
    folder = warehouse / "raw" / "gcp" / DETAILED_TABLE
    return {
        path.parent.name.split("=", 1)[1]: json.loads(path.read_text())["delivery_id"]
        for path in folder.glob("BILLING_PERIOD=*/current.json")
    }


def _first_night(tmp_path: Path, endpoint: BigQueryEndpoint) -> tuple[Any, dict[str, str]]:
    """The export, a first run over it, and the current delivery of each partition after it."""
    _export(endpoint)
    config = _config(tmp_path, endpoint)
    run_pipeline(config)
    endpoint.queries.clear()
    return config, _current(config.warehouse)


def _raw_rows(warehouse: Path, day: date) -> list[dict[str, Any]]:
    folder = warehouse / "raw" / "gcp" / DETAILED_TABLE / f"BILLING_PERIOD={day}"
    current = json.loads((folder / "current.json").read_text())["delivery_id"]
    return pq.read_table(folder / f"delivery={current}" / "data.parquet").to_pylist()


def test_first_run_backfills_every_partition_nested_and_records_it(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _export(bq_endpoint)
    config = _config(tmp_path, bq_endpoint)
    result = run_pipeline(config)

    assert sorted(bq_endpoint.fetches()) == [(DETAILED_TABLE, day.isoformat()) for day in DAYS]
    gcp = [item for item in result.deliveries if item.provider == "gcp"]
    assert [(item.export, item.billing_period, item.new) for item in gcp] == [
        (DETAILED_TABLE, day.isoformat(), True) for day in DAYS
    ]
    # exactly the table's columns, as the client returns them: nested records and repeats kept
    schema = pq.read_schema(gcp[0].files[0])
    assert schema.names == [item["name"] for item in DETAILED_SCHEMA]
    assert str(schema.field("credits").type.value_type) == (
        "struct<name: string, amount: double, full_name: string, id: string, type: string>"
    )
    assert str(schema.field("labels").type.value_type) == "struct<key: string, value: string>"
    assert str(schema.field("usage_start_time").type) == "timestamp[us, tz=UTC]"
    assert str(schema.field("price").type.field("effective_price").type) == "decimal128(38, 9)"
    rows = _raw_rows(config.warehouse, DAYS[3])
    assert sorted(row["cost"] for row in rows) == [4.000001, 4.010001, 4.020001, 4.030001]
    assert rows[0]["labels"] == [{"key": "user_attempt_id", "value": "att-3"}]
    assert [credit["type"] for credit in rows[0]["credits"]] == [
        "SUSTAINED_USAGE_DISCOUNT",
        "PROMOTION",
    ]
    assert rows[0]["resource"]["name"] == "trainer-1"

    manifest = json.loads(result.manifest.read_text())
    recorded = manifest["inputs"]["gcp"]["tables"][0]
    assert recorded["kind"] == "detailed"
    assert recorded["window"] == [DAYS[0].isoformat(), TODAY.isoformat()]
    assert [item["status"] for item in recorded["partitions"]] == ["new"] * 6
    assert recorded["partitions"][3] == {
        "partition": DAYS[3].isoformat(),
        "rows": 4,
        "max_export_time": f"{DAYS[3]}T09:00:00+00:00",
        "sum_cost": "16.060004",
        "status": "new",
        "refetched": True,
        "reads": 1,
        "delivery_id": recorded["partitions"][3]["delivery_id"],
    }
    assert len(manifest["inputs"]["gcp"]["refetched"]) == 6
    providers = [item["provider"] for item in manifest["inputs"]["deliveries"]]
    assert providers == ["gcp"] * 6


def test_second_night_rereads_only_the_partition_with_late_rows(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    config, before = _first_night(tmp_path, bq_endpoint)

    late = export_row(
        DAYS[4],
        22,
        "7.5",
        sku="Nvidia Tesla T4 GPU running in Americas",
        exported_after=timedelta(days=1),
    )
    bq_endpoint.insert_rows(DETAILED_TABLE, [late], DAYS[4])
    result = run_pipeline(config)

    assert bq_endpoint.fetches() == [(DETAILED_TABLE, DAYS[4].isoformat())]
    after = _current(config.warehouse)
    changed = {day for day in after if after[day] != before[day]}
    assert changed == {DAYS[4].isoformat()}
    rows = _raw_rows(config.warehouse, DAYS[4])
    assert len(rows) == 5
    assert sum(Decimal(str(row["cost"])) for row in rows) == Decimal("7.5") + Decimal("20.060004")
    assert [row["sku"]["description"] for row in rows if row["cost"] == 7.5] == [
        "Nvidia Tesla T4 GPU running in Americas"
    ]
    # the old copy stays in raw/ (superseded), the day before is untouched
    period = config.warehouse / "raw" / "gcp" / DETAILED_TABLE / f"BILLING_PERIOD={DAYS[4]}"
    assert sorted(path.name for path in period.glob("delivery=*")) == sorted(
        f"delivery={item}" for item in (before[DAYS[4].isoformat()], after[DAYS[4].isoformat()])
    )
    manifest = json.loads(result.manifest.read_text())["inputs"]["gcp"]
    # the window: the 10 days up to the newest partition stored, and every day since; the three
    # oldest partitions are not looked at again
    assert manifest["tables"][0]["window"] == [
        (DAYS[5] - timedelta(days=9)).isoformat(),
        TODAY.isoformat(),
    ]
    statuses = {item["partition"]: item["status"] for item in manifest["tables"][0]["partitions"]}
    assert statuses == {
        DAYS[3].isoformat(): "unchanged",
        DAYS[4].isoformat(): "changed",
        DAYS[5].isoformat(): "unchanged",
    }
    assert manifest["refetched"] == [f"{DETAILED_TABLE}${DAYS[4].isoformat()}"]
    new = [item.billing_period for item in result.deliveries if item.new]
    assert new == [DAYS[4].isoformat()]

    bq_endpoint.queries.clear()
    third = run_pipeline(config)
    assert bq_endpoint.fetches() == []
    assert third.status == "unchanged"


def _grow_on_fetch(endpoint: BigQueryEndpoint, day: date, times: int) -> list[int]:
    """After each whole-partition read of ``day`` (up to ``times``), a late row lands in it."""
    grown: list[int] = []

    def hook(record: QueryRecord) -> None:
        if record.params.get("partition") == day and len(grown) < times:
            grown.append(len(grown))
            row = export_row(day, 23, "0.5", exported_after=timedelta(hours=30 + len(grown)))
            endpoint.insert_rows(DETAILED_TABLE, [row], day)

    endpoint.after_query = hook
    return grown


def test_a_partition_that_changes_once_while_read_is_read_again(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _export(bq_endpoint)
    _grow_on_fetch(bq_endpoint, DAYS[5], times=1)
    config = _config(tmp_path, bq_endpoint)
    result = run_pipeline(config)

    assert [item[1] for item in bq_endpoint.fetches()].count(DAYS[5].isoformat()) == 2
    assert len(_raw_rows(config.warehouse, DAYS[5])) == 5
    partitions = json.loads(result.manifest.read_text())["inputs"]["gcp"]["tables"][0]
    last = partitions["partitions"][-1]
    assert (last["partition"], last["rows"], last["reads"]) == (DAYS[5].isoformat(), 5, 2)


def test_a_partition_that_keeps_changing_fails_and_stores_nothing(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    config, before = _first_night(tmp_path, bq_endpoint)
    for day in (DAYS[3], DAYS[5]):  # late rows in two partitions; the newer keeps growing
        bq_endpoint.insert_rows(DETAILED_TABLE, [export_row(day, 20, "1")], day)
    _grow_on_fetch(bq_endpoint, DAYS[5], times=10)

    with pytest.raises(InputError) as error:
        run_pipeline(config)

    latest = datetime(DAYS[5].year, DAYS[5].month, DAYS[5].day, 23, tzinfo=UTC) + timedelta(
        hours=1 + 30 + 3
    )
    assert str(error.value) == (
        f"{DETAILED_TABLE}: partition {DAYS[5]} kept changing while it was read (3 reads; rows "
        f"5 -> 6 -> 7 -> 8; latest export_time {latest.isoformat()}): the billing export is "
        "still loading this day; nothing was stored, so run again once the load has finished "
        "(schedule the nightly run a few hours after the export's daily load)"
    )
    # nothing changed in raw/: not even the partition that was read fine before the failure
    assert _current(config.warehouse) == before
    snapshots = sorted(path.name for path in (config.warehouse / "snapshots").iterdir())
    assert len(snapshots) == 1


def test_permission_denied_fails_the_run_and_publishes_nothing(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    _export(bq_endpoint)
    bq_endpoint.deny_jobs("billing-proj")
    config = _config(tmp_path, bq_endpoint)
    with pytest.raises(InputError, match=r"BigQuery Job User \(roles/bigquery.jobUser\)"):
        run_pipeline(config)
    assert not (config.warehouse / "snapshots").exists()
    assert not (config.warehouse / "raw").exists()
    manifests = list((config.warehouse / "runs").glob("*/manifest.json"))
    recorded = json.loads(manifests[0].read_text())
    assert recorded["status"] == "failed"
    assert recorded["error"].startswith(f"InputError: {DETAILED_TABLE}: permission denied")
