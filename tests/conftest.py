"""Shared fixtures: a DAG built on no input, a moto S3 server and a BigQuery endpoint."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pytest
from bq_endpoint import BigQueryEndpoint
from moto.server import ThreadedMotoServer

from pipeline.config.loader import parse_config
from pipeline.dag.build import build
from pipeline.dag.models import discover
from pipeline.dag.pools import pool_models
from pipeline.ingest.aws import s3_source
from pipeline.run.settings import write_settings
from pipeline.run.sources import TELEMETRY_TABLES, register_sources
from pipeline.telemetry.canonical import empty_table


@pytest.fixture
def built_empty(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Every model built over an empty bill and empty telemetry."""
    config = parse_config({}, base=tmp_path)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    write_settings(con, config)
    register_sources(con, [], {name: empty_table(name) for name in TELEMETRY_TABLES})
    report = build(con, discover() + pool_models(config))
    assert report.check_failures == []
    yield con
    con.close()


S3_BUCKET = "billing-bucket"


@pytest.fixture
def moto_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto's server on 127.0.0.1, emptied, with fake credentials and no AWS config: its URL."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    # moto keeps its state per process: start every test from an empty store
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"))
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def s3(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any, list[str]]]:
    """A moto S3 server on 127.0.0.1 holding an empty `billing-bucket`, fake credentials, and
    the key of every GetObject runcost makes: (endpoint url, boto3 client, keys)."""
    url = moto_url
    gets: list[str] = []
    real = s3_source.make_client

    def counting_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
        client = real(endpoint_url, region)
        client.meta.events.register(
            "provide-client-params.s3.GetObject", lambda params, **_: gets.append(params["Key"])
        )
        return client

    monkeypatch.setattr(s3_source, "make_client", counting_client)
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
    client.create_bucket(Bucket=S3_BUCKET)
    yield url, client, gets


@pytest.fixture
def bq_endpoint() -> Iterator[BigQueryEndpoint]:
    """A local BigQuery REST endpoint on 127.0.0.1 over DuckDB (tests/bq_endpoint.py): load
    export rows into daily partitions with create_table / insert_rows / load_file."""
    endpoint = BigQueryEndpoint().start()
    try:
        yield endpoint
    finally:
        endpoint.stop()
