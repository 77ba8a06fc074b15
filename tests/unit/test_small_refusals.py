"""The smaller refusals: volatile selectors, absurd prices, empty S3 exports, URL credentials."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import ingest_with
from test_ingest_s3 import LOCATION, s3_config

from pipeline.common.errors import ConfigError, InputError, RuncostError, redact_urls
from pipeline.config.periods import parse_period_settings
from pipeline.config.pools import COST_LINE_COLUMNS, validate_condition
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.aws.s3_source import S3ExportSource


@pytest.mark.parametrize(
    ("selector", "name"),
    [
        ("random() < 0.5", "rand"),
        ("current_setting('threads') = '2'", "current_setting"),
        ("billing_period < now()", "now"),
        ("charge_period_start < current_timestamp", "current_timestamp"),
        ("resource_id = uuid()::varchar", "uuid"),
    ],
)
def test_volatile_functions_in_a_selector_are_refused(selector: str, name: str):
    with pytest.raises(ConfigError) as caught:
        validate_condition(selector, COST_LINE_COLUMNS, "pools[1] (x).selector")
    assert str(caught.value).startswith(f"pools[1] (x).selector: {name}() gives another answer")
    assert "every night would republish" in str(caught.value)


def test_a_column_condition_is_still_a_selector():
    validate_condition("service_name = 'AmazonEKS'", COST_LINE_COLUMNS, "pools[1].selector")


@pytest.mark.parametrize("price", ["1e400", 1e300, "2000000000"])
def test_a_price_per_hour_beyond_any_instance_is_refused(tmp_path: Path, price):
    item = {"instance_type": "p4d", "region": "us-east-1", "price_per_hour": price}
    data = {"estimates": {"prices": [{**item, "currency": "USD"}]}}
    with pytest.raises(ConfigError, match=r"price_per_hour .* is not a price per hour"):
        parse_period_settings(data, tmp_path, "runcost.toml")


def test_an_s3_prefix_with_no_objects_is_an_error(tmp_path: Path, s3):
    url, _client, _keys = s3  # the bucket exists and is empty
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_aws_exports, s3_config(tmp_path, url))
    assert str(caught.value).startswith(f"{LOCATION}: the export holds no files; ")
    assert not (tmp_path / "warehouse" / "raw").exists()


def test_credentials_in_an_endpoint_url_are_never_echoed(monkeypatch: pytest.MonkeyPatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    url = "http://runcost:hunter2-secret@127.0.0.1:9"
    source = S3ExportSource(LOCATION, endpoint_url=url, region="us-east-1")
    with pytest.raises(InputError) as caught:
        source.list_files("data/")
    assert "hunter2" not in str(caught.value)
    assert "cannot reach S3" in str(caught.value)
    assert redact_urls(f"see {url}/x") == "see http://***@127.0.0.1:9/x"
    assert "hunter2" not in str(RuncostError(f"failed at {url}"))


def test_attempt_and_experiment_ids_are_trimmed_like_resource_ids(tmp_path: Path):
    from test_telemetry_files import write

    from pipeline.telemetry import load_telemetry

    write(
        tmp_path,
        "attempts",
        "csv",
        [
            {"attempt_id": " a1 ", "experiment_id": "e1 ", "status": "succeeded"},
            {"attempt_id": "a2", "experiment_id": " e1", "status": "failed"},
        ],
    )
    attempts = load_telemetry(tmp_path)["attempts"]
    assert attempts.column("attempt_id").to_pylist() == ["a1", "a2"]
    assert attempts.column("experiment_id").to_pylist() == ["e1", "e1"]
