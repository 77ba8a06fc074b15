"""An export read straight from S3 with boto3: listed by prefix, streamed to disk, never whole."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config as BotoConfig
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
)

from pipeline.common.errors import InputError
from pipeline.ingest.export_source import SourceFile

# Large files go in 16 MiB parts, a few at a time, straight into the target file.
TRANSFER = TransferConfig(
    multipart_threshold=64 * 1024 * 1024,
    multipart_chunksize=16 * 1024 * 1024,
    max_concurrency=4,
    use_threads=True,
)
_DENIED = {"AccessDenied", "403", "Forbidden", "AllAccessDisabled", "AccountProblem"}
_MISSING = {"NoSuchKey", "404", "NotFound"}
_SETUP = "see docs/aws-setup.md for the policy runcost needs"


def parse_s3_uri(location: str) -> tuple[str, str]:
    """s3://bucket/prefix/export-name -> (bucket, 'prefix/export-name')."""
    rest = location[len("s3://") :] if location.startswith("s3://") else ""
    bucket, _, prefix = rest.partition("/")
    prefix = prefix.strip("/")
    if not bucket or not prefix:
        raise InputError(
            f"{location}: not an S3 export location; write s3://<bucket>/<prefix>/<export-name>, "
            "the folder that holds the export's data/ and metadata/"
        )
    return bucket, prefix


def make_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """An S3 client on the standard credential chain (profile, environment, instance role)."""
    session = boto3.session.Session(region_name=region)
    retries = BotoConfig(retries={"max_attempts": 5, "mode": "standard"})
    return session.client("s3", endpoint_url=endpoint_url, config=retries)


class S3ExportSource:
    """One export under s3://bucket/prefix/<export-name>/ (the folder holding data/, metadata/)."""

    def __init__(
        self,
        location: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        client: Any = None,
    ) -> None:
        self.bucket, prefix = parse_s3_uri(location)
        self.root = prefix + "/"
        self.location = f"s3://{self.bucket}/{prefix}"
        self.export_name = prefix.rsplit("/", 1)[-1]
        self.client = client if client is not None else make_client(endpoint_url, region)

    def list_files(self, prefix: str) -> list[SourceFile]:
        found = []
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.root + prefix):
                for item in page.get("Contents", []):
                    key = item["Key"]
                    if key.endswith("/"):
                        continue  # a folder marker made by a console upload
                    found.append(
                        SourceFile(
                            key[len(self.root) :],
                            int(item["Size"]),
                            str(item.get("ETag", "")).strip('"') or None,
                            _utc(item.get("LastModified")),
                        )
                    )
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, prefix, "s3:ListBucket") from error
        return sorted(found, key=lambda file: file.key)

    def stat(self, key: str) -> SourceFile | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.root + key)
        except ClientError as error:
            if _code(error) in _MISSING:
                return None
            raise self._error(error, key, "s3:GetObject") from error
        except BotoCoreError as error:
            raise self._error(error, key, "s3:GetObject") from error
        etag = str(head.get("ETag", "")).strip('"') or None
        return SourceFile(key, int(head["ContentLength"]), etag, _utc(head.get("LastModified")))

    def read_bytes(self, key: str) -> bytes:
        """A small object (a manifest) read whole."""
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self.root + key)["Body"]
            with body:
                return bytes(body.read())
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, key, "s3:GetObject") from error

    def download(self, file: SourceFile, target: Path) -> None:
        """Stream one object to ``target`` (the caller compares its size with the listing)."""
        try:
            with target.open("wb") as handle:
                self.client.download_fileobj(
                    self.bucket, self.root + file.key, handle, Config=TRANSFER
                )
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, file.key, "s3:GetObject") from error

    def fingerprint(self, file: SourceFile) -> str:
        return file.etag or f"size:{file.size}"

    def describe(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.root}{key}"

    def _error(self, error: Exception, key: str, permission: str) -> InputError:
        where = self.describe(key)
        if isinstance(error, NoCredentialsError | CredentialRetrievalError):
            return InputError(
                f"{where}: no AWS credentials found; runcost uses the standard chain "
                "(AWS_PROFILE or ~/.aws/config, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or an "
                f"instance or task role), never the config file; {_SETUP}"
            )
        if not isinstance(error, ClientError):
            return InputError(f"{where}: cannot reach S3 ({error}); check aws.endpoint_url")
        code = _code(error)
        if code in _DENIED:
            resource = (
                f"arn:aws:s3:::{self.bucket} (prefix {self.root}{key})"
                if permission == "s3:ListBucket"
                else f"arn:aws:s3:::{self.bucket}/{self.root}{key}"
            )
            return InputError(
                f"{where}: access denied ({code}): runcost needs {permission} on {resource}; "
                f"grant it to the credentials runcost runs with ({_SETUP})"
            )
        if code == "NoSuchBucket":
            return InputError(f"{where}: bucket {self.bucket} does not exist; check aws.exports")
        if code in _MISSING:
            return InputError(f"{where}: no such object; run again once the delivery is complete")
        if code in {"PreconditionFailed", "412"}:
            return InputError(
                f"{where}: the object changed while it was being downloaded (AWS is delivering "
                "a refresh); run again in a few minutes"
            )
        message = error.response.get("Error", {}).get("Message", "")
        return InputError(f"{where}: S3 error {code}: {message}")


def _utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(UTC) if moment is not None else None


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
