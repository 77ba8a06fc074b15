"""Config keys of the AWS ingest: aws.endpoint_url, aws.region, warehouse.raw_retention_days."""

from __future__ import annotations

import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import parse_config


def test_defaults(tmp_path):
    config = parse_config({}, base=tmp_path)
    aws = config.providers["aws"]
    assert (config.raw_retention_days, aws.endpoint_url, aws.region) == (
        90,
        None,
        None,
    )


def test_values_are_read(tmp_path):
    config = parse_config(
        {
            "warehouse": {"raw_retention_days": 30},
            "aws": {
                "exports": ["s3://billing/cur/ml-cur"],
                "endpoint_url": "http://127.0.0.1:9000",
                "region": "eu-west-1",
            },
        },
        base=tmp_path,
    )
    assert config.raw_retention_days == 30
    aws = config.providers["aws"]
    assert aws.exports == ("s3://billing/cur/ml-cur",)
    assert (aws.endpoint_url, aws.region) == ("http://127.0.0.1:9000", "eu-west-1")
    # Where the bill is read from does not change results: not part of the fingerprint.
    assert (
        config.fingerprint()
        == parse_config(
            {"aws": {"exports": ["s3://billing/cur/ml-cur"]}}, base=tmp_path
        ).fingerprint()
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"warehouse": {"raw_retention_days": -1}}, "warehouse.raw_retention_days must be"),
        ({"warehouse": {"raw_retention_days": 1.5}}, "warehouse.raw_retention_days must be"),
        ({"warehouse": {"raw_retention_days": True}}, "warehouse.raw_retention_days must be"),
        ({"aws": {"endpoint_url": "minio:9000"}}, "aws.endpoint_url must be an http:// or"),
        ({"aws": {"endpoint_url": 9000}}, "aws.endpoint_url must be an http:// or"),
        ({"aws": {"region": ""}}, "aws.region must be a region name"),
        ({"aws": {"access_key": "x"}}, "unknown key aws.access_key"),
    ],
)
def test_bad_values_name_the_key(tmp_path, data, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        parse_config(data, base=tmp_path)
