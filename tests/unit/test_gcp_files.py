"""gcp.files: BigQuery extract files (NDJSON, Parquet) checked, split by partition day, stored."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with

from pipeline.common.errors import ConfigError, InputError
from pipeline.config.loader import parse_config
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.warehouse.raw_store import RawStore
from schemas import gcp_billing


def row(**overrides: Any) -> dict[str, Any]:
    """One export row as BigQuery's NDJSON extract writes it (nested, timestamps as text)."""
    record: dict[str, Any] = {
        "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "88B8-C3ED-03F0", "description": "Nvidia Tesla T4 GPU running in Americas"},
        "usage_start_time": "2026-10-12 10:00:00 UTC",
        "usage_end_time": "2026-10-12 11:00:00 UTC",
        "labels": [{"key": "user_attempt_id", "value": "att-1"}],
        "export_time": "2026-10-12 16:04:05.123456 UTC",
        "cost": 0.35,
        "currency": "USD",
        "usage": {"amount": "3600", "unit": "seconds"},
        "credits": [{"name": "Promo", "amount": "-0.175", "type": "PROMOTION"}],
        "invoice": {"month": "202610"},
        "cost_type": "regular",
        "price": {"effective_price": "0.350000001"},
        "resource": {"name": "projects/p/zones/z/instances/vm-1"},
    }
    record.update(overrides)
    return record


def write_ndjson(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in rows), encoding="utf-8")
    return path


def config(tmp_path: Path, *files: str):
    return parse_config({"gcp": {"files": list(files)}}, base=tmp_path)


def raw_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "warehouse" / "raw").rglob("*.parquet"))


def test_ndjson_is_typed_as_the_export_and_split_by_export_day(tmp_path: Path) -> None:
    late = row(
        export_time="2026-10-14T03:00:00Z", cost="0.7", usage_start_time="2026-10-12T11:00:00"
    )
    write_ndjson(tmp_path / "export" / "billing-000000000000.json", [row(), late, row(cost=1)])
    deliveries = ingest_with(ingest_gcp_files, config(tmp_path, "export/billing-*.json"))
    assert [(d.provider, d.export, d.billing_period, d.new) for d in deliveries] == [
        ("gcp", "export", "2026-10-12", True),
        ("gcp", "export", "2026-10-14", True),
    ]
    table = pq.read_table(deliveries[0].files[0])
    assert table.schema.names == [
        "billing_account_id", "service", "sku", "usage_start_time", "usage_end_time", "labels",
        "export_time", "cost", "currency", "usage", "credits", "invoice", "cost_type",
        "resource", "price",
    ]  # fmt: skip
    for name in table.schema.names:
        assert table.schema.field(name).type == gcp_billing.TYPES[name], name
    assert table.column("cost").to_pylist() == [0.35, 1.0]
    assert table.column("credits").to_pylist()[0][0]["amount"] == -0.175
    assert table.column("price").to_pylist()[0]["effective_price"] == Decimal("0.350000001")
    later = pq.read_table(deliveries[1].files[0])
    assert (
        later.column("usage_start_time").to_pylist()[0].isoformat() == "2026-10-12T11:00:00+00:00"
    )


def test_parquet_files_and_a_partition_column(tmp_path: Path) -> None:
    schema = pa.schema(
        [*gcp_billing.arrow_schema(gcp_billing.STANDARD), ("partition_date", pa.string())]
    )
    rows = [
        {"billing_account_id": "A", "cost": cost, "currency": "USD", "credits": [],
         "invoice": {"month": "202610"}, "cost_type": "regular", "partition_date": day}
        for day, cost in (("2026-10-30", 1.5), ("2026-10-31", 1.5), ("2026-10-31", 2.5))
    ]  # fmt: skip
    folder = tmp_path / "extract"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "part.parquet")
    deliveries = ingest_with(ingest_gcp_files, config(tmp_path, "extract"))
    assert [(d.billing_period, pq.read_metadata(d.files[0]).num_rows) for d in deliveries] == [
        ("2026-10-30", 1),
        ("2026-10-31", 2),
    ]
    assert "partition_date" not in pq.read_schema(deliveries[0].files[0]).names


def test_a_second_run_stores_only_the_partition_that_changed(tmp_path: Path) -> None:
    path = write_ndjson(
        tmp_path / "export" / "a.json", [row(), row(export_time="2026-10-13 05:00:00 UTC")]
    )
    first = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    again = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert [d.delivery_id for d in again] == [d.delivery_id for d in first]
    assert not any(d.new for d in again)
    write_ndjson(path.with_name("b.json"), [row(cost=0.01, export_time="2026-10-13 23:00:00 UTC")])
    third = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert [d.new for d in third] == [False, True]
    assert third[0].delivery_id == first[0].delivery_id
    assert third[1].delivery_id != first[1].delivery_id
    store = RawStore(tmp_path / "warehouse" / "raw", "gcp")
    assert store.current_id("export", "2026-10-13") == third[1].delivery_id


BAD = [
    pytest.param(
        [{**{k: v for k, v in row().items() if k != "cost"}}],
        "a.json: the required column cost is missing; point at the Cloud Billing export table",
        id="missing-column",
    ),
    pytest.param(
        [row(), row(credits='[{"amount": -1}]')],
        "a.json: row 2: credits must be a JSON list (a REPEATED field)",
        id="credits-not-a-list",
    ),
    pytest.param(
        [row(), row(invoice={"month": "2026-10"})],
        "a.json: row 2, column invoice.month: '2026-10' is refused; it must be a month written "
        "YYYYMM such as 202611",
        id="invoice-month",
    ),
    pytest.param(
        [row(), row(invoice=None)],
        "a.json: row 2, column invoice.month: None is refused; it must be a month written YYYYMM",
        id="no-invoice",
    ),
    pytest.param(
        [row(), row(currency="EUR")],
        "invoice month 202610 is billed in several currencies (EUR, USD)",
        id="currency-change",
    ),
    pytest.param(
        [row(cost="twelve")],
        "a.json: row 1, column cost: 'twelve' is refused; it must be a finite number below",
        id="cost-not-a-number",
    ),
    pytest.param(
        [row(usage_start_time="yesterday")],
        "a.json: row 1, column usage_start_time: 'yesterday' is refused; it must be a timestamp",
        id="bad-timestamp",
    ),
]


@pytest.mark.parametrize(("rows", "message"), BAD)
def test_bad_ndjson_is_refused_and_nothing_is_stored(tmp_path: Path, rows, message) -> None:
    write_ndjson(tmp_path / "export" / "a.json", rows)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "export/a.json"))
    assert message in str(caught.value)
    assert raw_files(tmp_path) == []


def test_a_broken_json_line_names_its_row(tmp_path: Path) -> None:
    path = write_ndjson(tmp_path / "export" / "a.json", [row()])
    path.write_text(path.read_text() + "{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.json: row 2: not JSON"):
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert raw_files(tmp_path) == []


FLATTENED = {
    "credits": ("[]", "column credits is string, not a list of records"),
    "invoice": ("202610", "column invoice is string, not a record with a month field"),
}


@pytest.mark.parametrize("column", list(FLATTENED))
def test_a_flattened_parquet_column_is_refused(tmp_path: Path, column: str) -> None:
    """koku-style flat copies keep records as text: name the column and how to fix it."""
    values: dict[str, list[Any]] = {
            "billing_account_id": ["A"], "service": [{"id": "s"}], "sku": [{"id": "k"}],
            "usage_start_time": pa.array([0], pa.timestamp("us", tz="UTC")),
            "usage_end_time": pa.array([0], pa.timestamp("us", tz="UTC")),
            "cost": [1.0], "currency": ["USD"], "credits": [[{"amount": 0.5}]],
            "invoice": [{"month": "202610"}], "cost_type": ["regular"],
    }  # fmt: skip
    flat, message = FLATTENED[column]
    values[column] = [flat]
    (tmp_path / "export").mkdir()
    pq.write_table(pa.table(values), tmp_path / "export" / "flat.parquet")
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert str(caught.value).startswith(f"{tmp_path / 'export' / 'flat.parquet'}: {message}")
    assert "extract the export table itself" in str(caught.value)
    assert raw_files(tmp_path) == []


def test_no_matching_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing/\*\.json: no export files match"):
        ingest_with(ingest_gcp_files, config(tmp_path, "missing/*.json"))


def test_config_gcp_files(tmp_path: Path) -> None:
    assert config(tmp_path, "exports/*.json").providers["gcp"].files == (
        str(tmp_path / "exports/*.json"),
    )
    assert parse_config({}, base=tmp_path).providers["gcp"].files == ()
    with pytest.raises(ConfigError, match=r"gcp\.files must be a list of non-empty strings"):
        parse_config({"gcp": {"files": "exports"}}, base=tmp_path)
