"""[gcp] in runcost.toml: the BigQuery export tables, billing project, window and start date."""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path

import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import parse_config
from pipeline.ingest.gcp.settings import GcpSettings

TABLE = "my-project.billing.gcp_billing_export_resource_v1_01338E_BE3FD6_363B4C"


def test_defaults_read_nothing_from_gcp(tmp_path: Path) -> None:
    assert parse_config({}, base=tmp_path).providers["gcp"] == GcpSettings()
    assert GcpSettings().window_days == 10


def test_every_key_is_read(tmp_path: Path) -> None:
    text = f"""
[gcp]
tables = ["{TABLE}", "other-project.costs.gcp_billing_export_v1_0A0A0A_0B0B0B_0C0C0C"]
billing_project = "finops-queries"
window_days = 5
start_date = 2026-01-15
api_endpoint = "http://127.0.0.1:9050"
"""
    config = parse_config(tomllib.loads(text), base=tmp_path)
    assert config.providers["gcp"] == GcpSettings(
        tables=(TABLE, "other-project.costs.gcp_billing_export_v1_0A0A0A_0B0B0B_0C0C0C"),
        billing_project="finops-queries",
        window_days=5,
        start_date=date(2026, 1, 15),
        api_endpoint="http://127.0.0.1:9050",
    )
    quoted = parse_config({"gcp": {"start_date": "2026-01-15"}}, base=tmp_path)
    assert quoted.providers["gcp"].start_date == date(2026, 1, 15)
    # domain-scoped project ids hold a dot and a colon
    scoped = parse_config({"gcp": {"tables": [f"example.com:{TABLE}"]}}, base=tmp_path)
    assert scoped.providers["gcp"].tables == (f"example.com:{TABLE}",)


WHERE = "runcost.toml"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"tables": ["billing.gcp_billing_export_v1_01338E_BE3FD6_363B4C"]},
            f"{WHERE}: gcp.tables: 'billing.gcp_billing_export_v1_01338E_BE3FD6_363B4C' is not "
            'a full table id; name each export table as "project.dataset.table", such as '
            '"my-project.billing.gcp_billing_export_resource_v1_01338E_BE3FD6_363B4C"',
        ),
        (
            {"tables": ["my-project.billing.gcp_billing_export_v1_*"]},
            f"{WHERE}: gcp.tables: 'my-project.billing.gcp_billing_export_v1_*' is not a full "
            'table id; name each export table as "project.dataset.table", such as '
            '"my-project.billing.gcp_billing_export_resource_v1_01338E_BE3FD6_363B4C"',
        ),
        (
            {
                "tables": [
                    TABLE,
                    "my-project.billing.gcp_billing_export_v1_01338E_BE3FD6_363B4C",
                ]
            },
            f"{WHERE}: gcp.tables lists {TABLE} and "
            "my-project.billing.gcp_billing_export_v1_01338E_BE3FD6_363B4C: the standard and "
            "detailed exports of billing account 01338E_BE3FD6_363B4C hold the same costs, so "
            "reading both would count every cost twice; keep one (the detailed export, "
            "gcp_billing_export_resource_v1_..., has resource names)",
        ),
        ({"tables": [TABLE, TABLE]}, f"{WHERE}: gcp.tables lists a table twice"),
        (
            {"tables": TABLE},
            f'{WHERE}: gcp.tables must be a list of non-empty strings, such as ["a", "b"]',
        ),
        (
            {"billing_project": "My Project"},
            f'{WHERE}: gcp.billing_project must be a project id, such as "my-billing-project" '
            "(the project that runs and pays for runcost's queries)",
        ),
        (
            {"window_days": 0},
            f"{WHERE}: gcp.window_days must be a whole number of days from 1 to 400 (how many "
            "recent daily partitions are checked for late rows every run; default 10)",
        ),
        (
            {"start_date": "2026-13-01"},
            f'{WHERE}: gcp.start_date must be a date, YYYY-MM-DD, such as "2026-01-01" (the '
            "first run reads every daily partition from that day on)",
        ),
        (
            {"start_date": "2026-1-1"},
            f'{WHERE}: gcp.start_date must be a date, YYYY-MM-DD, such as "2026-01-01" (the '
            "first run reads every daily partition from that day on)",
        ),
        (
            {"api_endpoint": "127.0.0.1:9050"},
            f"{WHERE}: gcp.api_endpoint must be an http:// or https:// URL, such as "
            '"http://127.0.0.1:9050" (a local BigQuery endpoint; leave it out for Google\'s)',
        ),
        (
            {"credentials": "key.json"},
            f"{WHERE}: unknown key gcp.credentials; allowed in [gcp]: api_endpoint, "
            "billing_project, files, read_api, start_date, storage_api_endpoint, tables, "
            "window_days",
        ),
    ],
)
def test_bad_values_name_the_key_and_the_fix(
    tmp_path: Path, section: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"gcp": section}, base=tmp_path)
    assert str(error.value) == message


def test_a_toml_datetime_is_not_a_start_date(tmp_path: Path) -> None:
    data = tomllib.loads("[gcp]\nstart_date = 2026-01-15T00:00:00Z\n")
    with pytest.raises(ConfigError, match=r"gcp\.start_date must be a date, YYYY-MM-DD"):
        parse_config(data, base=tmp_path)
