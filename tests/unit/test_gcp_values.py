"""GCP export files (gcp.files): bad values, copied rows and files, shrinking days refused before
raw/ changes, with the message value_rules gives every provider."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from test_gcp_files import config, raw_files, row, write_ndjson

from pipeline.common.errors import InputError
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.warehouse.raw_store import RawStore
from schemas import gcp_billing

FIXED = "the corrected copy is read afresh on the next run"
BAD_ROWS = {
    # case: (the second row's changes, column, value shown)
    "nan": ({"cost": math.nan}, "cost", "'nan'"),
    "infinity": ({"cost_at_list": math.inf}, "cost_at_list", "'inf'"),
    "1e308": ({"cost": 1e308}, "cost", "'1e+308'"),
    "1e27": ({"cost": 1e27}, "cost", "'1e+27'"),
    "dollar sign": ({"cost": "$1.00"}, "cost", "'$1.00'"),
    "nan credit": (
        {"credits": [{"name": "Promo", "amount": "NaN", "type": "PROMOTION"}]},
        "credits.amount",
        "'NaN'",
    ),
    "huge credit": (
        {"credits": [{"name": "Promo", "amount": -1e27, "type": "PROMOTION"}]},
        "credits.amount",
        "'-1e+27'",
    ),
    "nan usage": ({"usage": {"amount": math.nan, "unit": "seconds"}}, "usage.amount", "'nan'"),
    "1e25 usage": ({"usage": {"amount": 1e25, "unit": "byte-seconds"}}, "usage.amount", "'1e+25'"),
    "end before start": (
        {"usage_end_time": "2026-10-12 09:00:00 UTC"},
        "usage_end_time",
        "'2026-10-12 09:00:00+00'",
    ),
    "unparseable time": ({"export_time": "12/10/2026"}, "export_time", "'12/10/2026'"),
    "year 1970": ({"usage_start_time": 0}, "usage_start_time", "'1970-01-01 00:00:00+00'"),
    "empty currency": ({"currency": ""}, "currency", "''"),
    "lowercase currency": ({"currency": "usd"}, "currency", "'usd'"),
    "blank account": ({"billing_account_id": "  "}, "billing_account_id", "'  '"),
}


def bad_message(tmp_path: Path, rows: list[dict]) -> str:
    write_ndjson(tmp_path / "export" / "a.json", rows)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    return str(caught.value)


@pytest.mark.parametrize("case", list(BAD_ROWS), ids=list(BAD_ROWS))
def test_a_bad_ndjson_value_is_refused_naming_file_row_column_and_value(tmp_path: Path, case):
    changes, column, shown = BAD_ROWS[case]
    message = bad_message(tmp_path, [row(), row(**changes)])
    assert message.startswith(f"{tmp_path / 'export' / 'a.json'}: row 2, column {column}: ")
    assert f"column {column}: {shown} is refused; it must be " in message
    assert "Fix the extract" in message and FIXED in message
    assert raw_files(tmp_path) == [], "nothing reaches raw/"
    assert not (tmp_path / "warehouse" / ".ingest-staging").exists()


def test_a_usage_quantity_may_pass_the_money_limit(tmp_path: Path):
    """RAM is metered in byte-seconds: 450 GiB for an hour is 1.7e15, a valid quantity."""
    ram = {"amount": 450 * 2**30 * 3600.0, "unit": "byte-seconds"}
    write_ndjson(tmp_path / "export" / "a.json", [row(), row(cost=1.25, usage=ram)])
    (delivery,) = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert pq.read_table(delivery.files[0]).column("usage").to_pylist()[1]["amount"] > 1e15


def test_rows_are_named_by_their_line_in_the_file(tmp_path: Path):
    path = tmp_path / "export" / "a.json"
    write_ndjson(path, [row(), row(cost=math.nan)])
    path.write_text("\n" + path.read_text(), encoding="utf-8")  # a blank first line
    with pytest.raises(InputError, match=r"a\.json: row 3, column cost: 'nan' is refused"):
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))


def parquet_rows(tmp_path: Path, rows: list[dict]) -> Path:
    table = pa.Table.from_pylist(rows, schema=gcp_billing.arrow_schema(gcp_billing.STANDARD))
    path = tmp_path / "extract" / "part-0.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def typed(**values) -> dict:
    """One standard-export row as Arrow holds it."""
    from datetime import UTC, datetime

    start = datetime(2026, 10, 12, 10, tzinfo=UTC)
    base = {
        "billing_account_id": "A", "service": {"id": "s", "description": "Compute Engine"},
        "sku": {"id": "k", "description": "Core"}, "usage_start_time": start,
        "usage_end_time": start.replace(hour=11), "export_time": start.replace(hour=16),
        "cost": 1.5, "currency": "USD", "credits": [], "invoice": {"month": "202610"},
        "cost_type": "regular",
    }  # fmt: skip
    return {**base, **values}


@pytest.mark.parametrize(
    ("values", "column", "shown"),
    [
        ({"cost": math.nan}, "cost", "'nan'"),
        ({"cost": -math.inf}, "cost", "'-inf'"),
        ({"cost": 1e27}, "cost", "'1e+27'"),
        ({"currency": " "}, "currency", "' '"),
    ],
    ids=["nan", "minus infinity", "1e27", "blank currency"],
)
def test_a_bad_parquet_value_is_refused_by_its_row(tmp_path: Path, values, column, shown):
    path = parquet_rows(tmp_path, [typed(), typed(cost=2.5), typed(**values)])
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "extract"))
    assert str(caught.value).startswith(f"{path}: row 3, column {column}: {shown} is refused")
    assert raw_files(tmp_path) == []


def test_text_in_a_parquet_money_column_is_refused(tmp_path: Path):
    schema = gcp_billing.arrow_schema(gcp_billing.STANDARD)
    schema = schema.set(schema.get_field_index("cost"), pa.field("cost", pa.string()))
    rows = [{**typed(), "cost": "1.5"}, {**typed(), "cost": "$1.00"}]
    path = tmp_path / "extract" / "part-0.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    with pytest.raises(InputError, match=r"part-0\.parquet: row 2, column cost: '\$1\.00' is ref"):
        ingest_with(ingest_gcp_files, config(tmp_path, "extract"))


def test_a_row_equal_in_every_column_to_another_is_refused(tmp_path: Path):
    rows = [row(), row(cost=0.5), row(), row(cost=0.5)]
    message = bad_message(tmp_path, rows)
    assert message.startswith(f"{tmp_path / 'export' / 'a.json'}: row 3 repeats row 1: every ")
    assert "export_time 2026-10-12T16:04:05.123456+00:00; 2 rows are repeated so" in message
    assert "runcost never drops duplicates itself" in message
    assert raw_files(tmp_path) == []


def test_a_later_load_of_the_same_usage_is_not_a_copy(tmp_path: Path):
    # the same SKU, hour and resource exported again later is a restatement, not a copy
    write_ndjson(tmp_path / "export" / "a.json", [row(), row(export_time="2026-10-12 18:00 UTC")])
    (delivery,) = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert pq.read_metadata(delivery.files[0]).num_rows == 2


def test_a_stray_copy_of_an_export_file_is_refused(tmp_path: Path):
    path = write_ndjson(tmp_path / "export" / "billing-000.json", [row()])
    shutil.copyfile(path, path.with_name("billing-001.json"))
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert str(caught.value).startswith(
        f"{path.with_name('billing-001.json')}: has exactly the content of {path} (sha256 "
    )
    assert "would count every line twice" in str(caught.value)
    assert raw_files(tmp_path) == []


def rows_of_day(count: int, month: str = "202610") -> list[dict]:
    return [row(cost=0.01 * (number + 1), invoice={"month": month}) for number in range(count)]


def current(tmp_path: Path, day: str = "2026-10-12") -> str | None:
    return RawStore(tmp_path / "warehouse" / "raw", "gcp").current_id("export", day)


def test_a_final_day_that_loses_more_than_a_tenth_of_its_rows_is_stopped(tmp_path: Path):
    # invoice month 2026-10 ended long ago and no row arrived since: the day is final
    path = write_ndjson(tmp_path / "export" / "a.json", rows_of_day(10))
    (first,) = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    write_ndjson(path, rows_of_day(8))
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    message = str(caught.value)
    assert message.startswith("gcp.files source export: the new delivery ")
    assert "of export partition day 2026-10-12 holds 8 lines (20% fewer), but the current " in (
        message
    )
    assert f"final delivery {first.delivery_id} holds 10;" in message
    assert "If Google really restated it so, run once with `runcost run --allow-shrink " in (
        message
    )
    assert current(tmp_path) == first.delivery_id, "the stored day stays current"
    (allowed,) = ingest_with(
        ingest_gcp_files, config(tmp_path, "export"), allow_shrink=["export/2026-10-12"]
    )
    assert current(tmp_path) == allowed.delivery_id != first.delivery_id
    assert pq.read_metadata(allowed.files[0]).num_rows == 8


def test_a_day_of_an_open_invoice_month_may_shrink(tmp_path: Path):
    path = write_ndjson(tmp_path / "export" / "a.json", rows_of_day(10, "209912"))
    ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    write_ndjson(path, rows_of_day(3, "209912"))
    (delivery,) = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert pq.read_metadata(delivery.files[0]).num_rows == 3


def test_a_day_gone_from_the_files_stays_as_stored(tmp_path: Path):
    """gcp.files cannot empty a day: a day no file holds keeps its stored delivery."""
    path = write_ndjson(tmp_path / "export" / "a.json", rows_of_day(4))
    (first,) = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    write_ndjson(path, [row(export_time="2026-10-13 05:00:00 UTC")])
    deliveries = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert [d.billing_period for d in deliveries] == ["2026-10-12", "2026-10-13"]
    assert deliveries[0].delivery_id == first.delivery_id
    assert json.loads((first.folder.parent / "current.json").read_text())["delivery_id"] == (
        first.delivery_id
    )
