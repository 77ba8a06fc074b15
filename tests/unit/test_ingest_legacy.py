"""Legacy CUR (lineItem/UnblendedCost headers, legacy manifests) mapped onto CUR 2.0 names."""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from test_ingest_aws import config_for, raw_files

from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.aws.legacy import LEGACY_COLUMNS, cur_tag_key, map_header, snake
from schemas import aws_cur2

REPORT = "legacy-report"
FOLDER = "20231101-20231201"
HEADER = [
    "identity/LineItemId", "identity/TimeInterval", "bill/BillType", "bill/PayerAccountId",
    "bill/BillingPeriodStartDate", "bill/BillingPeriodEndDate", "lineItem/UsageAccountId",
    "lineItem/LineItemType", "lineItem/UsageStartDate", "lineItem/UsageEndDate",
    "lineItem/ProductCode", "lineItem/UsageType", "lineItem/ResourceId", "lineItem/UsageAmount",
    "lineItem/CurrencyCode", "lineItem/UnblendedRate", "lineItem/UnblendedCost",
    "pricing/publicOnDemandCost", "pricing/unit", "product/ProductName", "product/instanceType",
    "product/region", "resourceTags/user:attempt-id", "resourceTags/aws:createdBy",
    "costCategory/team", "lineItem/SomethingNew",
]  # fmt: skip
COSTS = ["1.25", "0.000001", "3.3333333333"]


def legacy_rows() -> list[list[str]]:
    rows = []
    for index, cost in enumerate(COSTS):
        start = f"2023-11-0{index + 1}T0{index}:00:00Z"
        end = f"2023-11-0{index + 1}T0{index + 1}:00:00Z"
        rows.append([
            f"line-{index}", f"{start}/{end}", "Anniversary", "012345678901",
            "2023-11-01T00:00:00.000Z", "2023-12-01T00:00:00.000Z", "000011112222", "Usage",
            start, end, "AmazonEC2", "USE1-BoxUsage:p4d.24xlarge", f"i-{index:04d}", "1.0",
            "USD", "32.77", cost, "40.0", "Hrs", "Amazon Elastic Compute Cloud",
            "p4d.24xlarge", "us-east-1", "att-1" if index == 0 else "", "alice", "ml", "x",
        ])  # fmt: skip
    return rows


def csv_text() -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(legacy_rows())
    return text.getvalue()


def write_legacy(root: Path, name: str, content: bytes, assembly: str = "asm-1") -> Path:
    """The legacy layout: <report>/<YYYYMMDD-YYYYMMDD>/<assemblyId>/<file> + the manifest."""
    (root / FOLDER / assembly).mkdir(parents=True, exist_ok=True)
    (root / FOLDER / assembly / name).write_bytes(content)
    manifest = {
        "assemblyId": assembly,
        "reportName": REPORT,
        "compression": "GZIP",
        "contentType": "text/csv",
        "billingPeriod": {"start": "20231101T000000.000Z", "end": "20231201T000000.000Z"},
        "bucket": "billing-bucket",
        "reportKeys": [f"cur/{REPORT}/{FOLDER}/{assembly}/{name}"],
    }
    (root / FOLDER / f"{REPORT}-Manifest.json").write_text(json.dumps(manifest))
    return root


def test_mapping_table_has_one_entry_per_column_and_matches_the_naming_rule():
    legacy_names = [legacy for legacy, _ in LEGACY_COLUMNS]
    targets = [target for _, target in LEGACY_COLUMNS]
    assert len(set(legacy_names)) == len(legacy_names)
    assert len(set(targets)) == len(targets)
    contract = dict(aws_cur2.COLUMNS)
    assert all(target in contract and not contract[target].startswith("map") for target in targets)
    assert all(snake(legacy) == target for legacy, target in LEGACY_COLUMNS)
    assert ("reservation/ReservationARN", "reservation_reservation_a_r_n") in LEGACY_COLUMNS


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("user:attempt-id", "user_attempt_id"),
        ("user:ml:attempt_id", "user_ml_attempt_id"),
        ("aws:createdBy", "aws_created_by"),
        ("aws:ecs:serviceName", "aws_ecs_service_name"),
        ("user:app.kubernetes.io/name", "user_app_kubernetes_io_name"),
    ],
)
def test_tag_keys_are_normalized_as_cur_does(raw, key):
    assert cur_tag_key(raw) == key


def test_header_mapping_folds_tags_products_and_categories_into_maps():
    header = map_header(HEADER)
    assert header.columns["line_item_unblended_cost"] == HEADER.index("lineItem/UnblendedCost")
    assert header.columns["product_instance_type"] == HEADER.index("product/instanceType")
    assert [key for key, _ in header.maps["resource_tags"]] == ["user_attempt_id", "aws_created_by"]
    assert [key for key, _ in header.maps["product"]] == ["product_name", "region"]
    assert [key for key, _ in header.maps["cost_category"]] == ["team"]
    assert header.extras == ["lineItem/SomethingNew"]


@pytest.mark.parametrize("packing", ["csv.gz", "zip"])
def test_legacy_csv_is_ingested_as_cur2(tmp_path, caplog, packing):
    text = csv_text().encode()
    if packing == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(f"{REPORT}-1.csv", text)
        content, name = buffer.getvalue(), f"{REPORT}-1.csv.zip"
    else:
        content, name = gzip.compress(text), f"{REPORT}-1.csv.gz"
    root = write_legacy(tmp_path / "exports" / REPORT, name, content)

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert (delivery.export, delivery.billing_period, delivery.delivery_id) == (
        REPORT, "2023-11", "asm-1",
    )  # fmt: skip
    assert "lineItem/SomethingNew" in caplog.text
    table = pq.read_table(delivery.files[0])
    assert [f.name for f in table.schema] == [
        n for n, _ in aws_cur2.COLUMNS if n in set(table.schema.names)
    ]
    assert table.schema.field("resource_tags").type == aws_cur2.ARROW_TYPES["map_string"]
    rows = table.to_pylist()
    assert [row["line_item_unblended_cost"] for row in rows] == [float(c) for c in COSTS]
    assert rows[0]["resource_tags"] == [("user_attempt_id", "att-1"), ("aws_created_by", "alice")]
    assert rows[1]["resource_tags"] == [("aws_created_by", "alice")]  # empty values dropped
    assert rows[0]["product"] == [("product_name", "Amazon Elastic Compute Cloud"),
                                  ("region", "us-east-1")]  # fmt: skip
    assert rows[0]["cost_category"] == [("team", "ml")]
    assert rows[0]["bill_payer_account_id"] == "012345678901"  # leading zeros kept
    assert rows[0]["line_item_unblended_rate"] == "32.77"
    assert rows[2]["line_item_usage_start_date"] == datetime(2023, 11, 3, 2, tzinfo=UTC)
    assert (delivery.folder / "asm-1" / name).read_bytes() == content


def test_legacy_parquet_with_snake_case_columns_is_mapped(tmp_path):
    columns = {
        "identity_line_item_id": pa.array(["a", "b"]),
        "bill_payer_account_id": pa.array(["1", "1"]),
        "bill_billing_period_start_date": pa.array([datetime(2023, 11, 1)] * 2, pa.timestamp("ms")),
        "bill_billing_period_end_date": pa.array([datetime(2023, 12, 1)] * 2, pa.timestamp("ms")),
        "line_item_usage_account_id": pa.array(["2", "2"]),
        "line_item_line_item_type": pa.array(["Usage", "Tax"]),
        "line_item_usage_start_date": pa.array([datetime(2023, 11, 2)] * 2, pa.timestamp("ms")),
        "line_item_usage_end_date": pa.array([datetime(2023, 11, 2, 1)] * 2, pa.timestamp("ms")),
        "line_item_product_code": pa.array(["AmazonEC2", "AmazonEC2"]),
        "line_item_resource_id": pa.array(["i-1", ""]),
        "line_item_unblended_cost": pa.array([2.5, 0.25]),
        "line_item_currency_code": pa.array(["USD", "USD"]),
        "product_product_name": pa.array(["Amazon EC2", "Amazon EC2"]),
        "resource_tags_user_attempt_id": pa.array(["att-9", None]),
    }
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    root = write_legacy(
        tmp_path / "exports" / REPORT, f"{REPORT}-1.snappy.parquet", buffer.getvalue()
    )

    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    rows = pq.read_table(delivery.files[0]).to_pylist()
    assert [row["resource_tags"] for row in rows] == [[("user_attempt_id", "att-9")], []]
    assert [row["product"] for row in rows] == [[("product_name", "Amazon EC2")]] * 2
    assert rows[0]["bill_billing_period_start_date"] == datetime(2023, 11, 1, tzinfo=UTC)
    assert [row["line_item_unblended_cost"] for row in rows] == [2.5, 0.25]


def test_legacy_csv_without_resource_ids_names_the_setting(tmp_path):
    header = [name for name in HEADER if name != "lineItem/ResourceId"]
    position = HEADER.index("lineItem/ResourceId")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(row[:position] + row[position + 1 :] for row in legacy_rows())
    root = write_legacy(
        tmp_path / "exports" / REPORT, "r.csv.gz", gzip.compress(text.getvalue().encode())
    )

    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert "r.csv.gz: column line_item_resource_id is missing" in str(error.value)
    assert 'enable "Include resource IDs"' in str(error.value)
    assert raw_files(tmp_path) == []
