"""Data Exports manifests: the documented layout, the accepted variants, and broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.common.errors import InputError
from pipeline.ingest.aws.manifest import parse_manifest, write_manifest

SOURCE = "/exports/ml-cur/metadata/BILLING_PERIOD=2026-10/ml-cur-Manifest.json"
DATA = "s3://bucket/cur/ml-cur/data/BILLING_PERIOD=2026-10"

# The documented top-level fields only: no billing period field, so it comes from the path.
DOCUMENTED = {
    "executionId": "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
    "exportArn": "arn:aws:bcm-data-exports:us-east-1:123456789012:export/ml-cur-5f2d",
    "columns": [
        {"name": "bill_bill_type", "type": "string"},
        {"name": "resource_tags", "type": "map"},
    ],
    "dataFiles": [f"{DATA}/ml-cur-00001.snappy.parquet", f"{DATA}/ml-cur-00002.snappy.parquet"],
    "additionalOutputFiles": [],
}


def test_documented_layout():
    manifest = parse_manifest(json.dumps(DOCUMENTED), SOURCE)
    assert manifest.source == SOURCE
    assert manifest.export_name == "ml-cur"
    assert manifest.billing_period == "2026-10"
    assert manifest.execution_id == "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    assert manifest.data_files == (
        f"{DATA}/ml-cur-00001.snappy.parquet",
        f"{DATA}/ml-cur-00002.snappy.parquet",
    )
    assert manifest.columns == ("bill_bill_type", "resource_tags")


def test_period_from_the_data_files_when_the_path_has_none():
    manifest = parse_manifest(json.dumps(DOCUMENTED), "ml-cur-Manifest.json")
    assert manifest.billing_period == "2026-10"


@pytest.mark.parametrize("start", ["2026-11-01T00:00:00.000Z", "20261101T000000.000Z", "2026-11"])
def test_billing_period_field_and_legacy_names_are_accepted(start):
    legacy = {
        "assemblyId": "asm-7",
        "reportName": "old-cur",
        "billingPeriod": {"start": start, "end": "20261201T000000.000Z"},
        "reportKeys": ["old/cur/20261101-20261201/asm-7/old-cur-1.csv.gz"],
        "columns": [{"category": "lineItem", "name": "UsageStartDate"}],
    }
    manifest = parse_manifest(json.dumps(legacy), "old-cur-Manifest.json")
    assert (manifest.export_name, manifest.billing_period, manifest.execution_id) == (
        "old-cur",
        "2026-11",
        "asm-7",
    )
    assert manifest.data_files == ("old/cur/20261101-20261201/asm-7/old-cur-1.csv.gz",)
    assert manifest.columns == ("UsageStartDate",)


def test_no_billing_period_anywhere_is_refused():
    body = {**DOCUMENTED, "dataFiles": ["s3://b/x/part-1.parquet"]}
    with pytest.raises(InputError) as error:
        parse_manifest(json.dumps(body), "ml-cur-Manifest.json")
    assert str(error.value) == (
        "ml-cur-Manifest.json: cannot tell the manifest's billing period; keep it under "
        "metadata/BILLING_PERIOD=YYYY-MM/ as AWS delivers it"
    )


def test_data_file_objects_and_duplicates():
    body = {**DOCUMENTED, "dataFiles": [{"key": "a.parquet"}, {"s3Uri": "b.parquet"}, "a.parquet"]}
    assert parse_manifest(json.dumps(body), SOURCE).data_files == ("a.parquet", "b.parquet")
    body["dataFiles"] = [{"size": 3}]
    with pytest.raises(InputError, match=r"data file entry \{'size': 3\} has no path"):
        parse_manifest(json.dumps(body), SOURCE)


def test_export_name_falls_back_to_the_arn():
    assert parse_manifest(json.dumps(DOCUMENTED), "s3://b/manifest.json").export_name == (
        "ml-cur-5f2d"
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"dataFiles": [', "manifest is not valid JSON"),
        ("[1, 2]", "manifest must be a JSON object"),
        ('{"executionId": "x", "dataFiles": []}', "manifest lists no data files"),
        ('{"executionId": "x"}', "expected a non-empty 'dataFiles' list"),
    ],
)
def test_broken_manifests(text, words):
    with pytest.raises(InputError) as error:
        parse_manifest(text, SOURCE)
    assert str(error.value).startswith(f"{SOURCE}: ")
    assert words in str(error.value)


def test_files_of_several_periods_are_refused():
    body = {
        **DOCUMENTED,
        "dataFiles": [f"{DATA}/a.parquet", "s3://b/x/data/BILLING_PERIOD=2026-09/b"],
    }
    with pytest.raises(InputError, match=r"several billing periods \(2026-09, 2026-10\)"):
        parse_manifest(json.dumps(body), "ml-cur-Manifest.json")


def test_invalid_month_in_the_path_is_refused():
    with pytest.raises(InputError, match="BILLING_PERIOD=2026-13 is not a valid YYYY-MM month"):
        parse_manifest(json.dumps(DOCUMENTED), "/x/metadata/BILLING_PERIOD=2026-13/m-Manifest.json")


def test_write_manifest_round_trips(tmp_path: Path):
    path = tmp_path / "metadata" / "BILLING_PERIOD=2026-12" / "ml-cur-Manifest.json"
    write_manifest(
        path,
        export_name="ml-cur",
        bucket="billing",
        prefix="/cur/",
        billing_period="2026-12",
        execution_id="exec-9",
        data_keys=["ml-cur/data/BILLING_PERIOD=2026-12/ml-cur-00001.snappy.parquet"],
        columns=[("bill_bill_type", "string"), ("resource_tags", "map_string")],
    )
    body = json.loads(path.read_text())
    assert body["dataFiles"] == [
        "s3://billing/cur/ml-cur/data/BILLING_PERIOD=2026-12/ml-cur-00001.snappy.parquet"
    ]
    assert body["columns"] == [
        {"name": "bill_bill_type", "type": "string"},
        {"name": "resource_tags", "type": "map"},
    ]
    assert body["billingPeriod"] == {
        "start": "2026-12-01T00:00:00.000Z",
        "end": "2027-01-01T00:00:00.000Z",
    }
    manifest = parse_manifest(path.read_text(), str(path))
    assert (manifest.export_name, manifest.billing_period, manifest.execution_id) == (
        "ml-cur",
        "2026-12",
        "exec-9",
    )
    assert manifest.columns == ("bill_bill_type", "resource_tags")


def test_write_manifest_without_prefix(tmp_path: Path):
    # An export at the bucket root has no prefix: no empty path segment may appear.
    path = tmp_path / "m-Manifest.json"
    write_manifest(
        path,
        export_name="m",
        bucket="billing",
        prefix="",
        billing_period="2026-01",
        execution_id="e",
        data_keys=["/m/data/BILLING_PERIOD=2026-01/m-00001.snappy.parquet"],
        columns=[],
    )
    body = json.loads(path.read_text())
    assert body["dataFiles"] == [
        "s3://billing/m/data/BILLING_PERIOD=2026-01/m-00001.snappy.parquet"
    ]
    assert body["billingPeriod"]["end"] == "2026-02-01T00:00:00.000Z"
