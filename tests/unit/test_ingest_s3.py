"""S3 ingest against moto's server: incremental downloads, create-new mode, access denied."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from builders import ingest_with
from test_ingest_aws import EXPORT, PERIOD, cur_table, raw_files, write_export

from pipeline.common.errors import InputError
from pipeline.config.loader import Config
from pipeline.ingest.aws import s3_source
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.aws.s3_source import S3ExportSource
from pipeline.ingest.aws.settings import AwsSettings
from pipeline.ingest.export_source import SourceFile

BUCKET = "billing-bucket"
LOCATION = f"s3://{BUCKET}/cur/{EXPORT}"


def upload(client: Any, root: Path) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            client.upload_file(
                str(path), BUCKET, f"cur/{EXPORT}/{path.relative_to(root).as_posix()}"
            )


def s3_config(tmp_path: Path, url: str, **changes: Any) -> Config:
    config = Config(
        path=None,
        warehouse=tmp_path / "warehouse",
        providers={"aws": AwsSettings(exports=(LOCATION,), endpoint_url=url)},
    )
    return dataclasses.replace(config, **changes)


def test_s3_delivery_is_downloaded_once_and_verified(tmp_path, s3):
    url, client, gets = s3
    local = write_export(
        tmp_path / "export", {"a.parquet": cur_table(), "b.parquet": cur_table(rows=2)}
    )
    upload(client, local)
    config = s3_config(tmp_path, url)

    [first] = ingest_with(ingest_aws_exports, config)

    data = f"cur/{EXPORT}/data/BILLING_PERIOD={PERIOD}"
    manifest = f"cur/{EXPORT}/metadata/BILLING_PERIOD={PERIOD}/{EXPORT}-Manifest.json"
    assert sorted(gets) == sorted([manifest, f"{data}/a.parquet", f"{data}/b.parquet"])
    assert (first.delivery_id, first.new) == ("exec-0001", True)
    for path in first.files:
        assert (
            path.read_bytes()
            == (local / "data" / f"BILLING_PERIOD={PERIOD}" / path.name).read_bytes()
        )

    gets.clear()
    [again] = ingest_with(ingest_aws_exports, config)
    assert gets == []
    assert again == dataclasses.replace(first, new=False)


def test_create_new_mode_takes_the_newest_complete_refresh(tmp_path, s3):
    url, client, gets = s3
    root = tmp_path / "export"
    for folder, execution in (("20261002T010000Z-aaa", "aaa"), ("20261003T010000Z-bbb", "bbb")):
        write_export(root, {"x.parquet": cur_table(rows=len(execution) + (execution == "bbb"))},
                     execution_id=execution, subfolder=folder)  # fmt: skip
        meta = root / "metadata" / f"BILLING_PERIOD={PERIOD}"
        (meta / folder).mkdir(parents=True)
        (meta / f"{EXPORT}-Manifest.json").rename(meta / folder / f"{EXPORT}-Manifest.json")
    # A newer refresh still being written: data without its manifest, so not complete.
    write_export(root, {"x.parquet": cur_table(rows=9)}, execution_id=None,
                 subfolder="20261004T010000Z-ccc")  # fmt: skip
    upload(client, root)

    [delivery] = ingest_with(ingest_aws_exports, s3_config(tmp_path, url))

    assert delivery.delivery_id == "bbb"
    assert [p.relative_to(delivery.folder).as_posix() for p in delivery.files] == [
        "20261003T010000Z-bbb/x.parquet"
    ]
    assert not any("ccc" in key or "aaa" in key for key in gets)


def test_a_missing_listed_object_is_named(tmp_path, s3):
    url, client, _gets = s3
    upload(
        client,
        write_export(
            tmp_path / "export", {"a.parquet": cur_table()}, listed=["a.parquet", "gone.parquet"]
        ),
    )
    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, s3_config(tmp_path, url))
    message = str(error.value)
    assert f"{EXPORT}-Manifest.json: lists s3://billing-bucket/cur/data/{EXPORT}/" in message
    assert (
        f"s3://{BUCKET}/cur/{EXPORT}/data/BILLING_PERIOD={PERIOD}/gone.parquet does not exist"
        in message
    )
    assert raw_files(tmp_path) == []


def stubbed(operation: str, code: str = "AccessDenied") -> Any:
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_client_error(operation, service_error_code=code, http_status_code=403)
    stubber.activate()
    return client


def test_list_denied_names_s3_listbucket_and_the_bucket(tmp_path, monkeypatch):
    monkeypatch.setattr(s3_source, "make_client", lambda *args: stubbed("list_objects_v2"))
    config = Config(
        path=None, warehouse=tmp_path / "warehouse", providers={"aws": AwsSettings((LOCATION,))}
    )
    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, config)
    message = str(error.value)
    assert message.startswith(f"s3://{BUCKET}/cur/{EXPORT}/metadata/: access denied (AccessDenied)")
    assert (
        f"runcost needs s3:ListBucket on arn:aws:s3:::{BUCKET} (prefix cur/{EXPORT}/metadata/)"
        in message
    )
    assert raw_files(tmp_path) == []


def test_get_denied_names_s3_getobject_and_the_key():
    source = S3ExportSource(LOCATION, client=stubbed("get_object"))
    with pytest.raises(InputError) as error:
        source.read_bytes("metadata/BILLING_PERIOD=2026-10/ml-cur-Manifest.json")
    key = f"cur/{EXPORT}/metadata/BILLING_PERIOD=2026-10/ml-cur-Manifest.json"
    assert str(error.value).startswith(f"s3://{BUCKET}/{key}: access denied (AccessDenied)")
    assert f"runcost needs s3:GetObject on arn:aws:s3:::{BUCKET}/{key}" in str(error.value)


def test_download_denied_names_s3_getobject(tmp_path):
    source = S3ExportSource(LOCATION, client=stubbed("head_object", code="403"))
    with pytest.raises(
        InputError,
        match=r"access denied \(403\): runcost needs s3:GetObject on "
        r"arn:aws:s3:::billing-bucket/cur/ml-cur/data/x.parquet",
    ):
        source.download(SourceFile("data/x.parquet", 10, "e"), tmp_path / "x.parquet")


def test_no_credentials_is_explained(tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    source = S3ExportSource(LOCATION, endpoint_url="http://127.0.0.1:9", region="us-east-1")
    with pytest.raises(
        InputError, match="no AWS credentials found; runcost uses the standard chain"
    ):
        source.list_files("metadata/")


@pytest.mark.parametrize("location", ["s3://", "s3://bucket-only", "s3:///prefix"])
def test_bad_s3_locations_are_refused(location):
    with pytest.raises(InputError, match="not an S3 export location"):
        S3ExportSource(location, client=object())
