"""`runcost check`: cost-allocation tags via botocore Stubber, and marts.tag_coverage."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import duckdb
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.common.errors import InputError
from pipeline.ingest.aws.tags import check_tag_keys, list_cost_allocation_tags
from pipeline.warehouse.snapshots import open_database

ATTEMPT_KEYS = ("attempt-id",)
EXPERIMENT_KEYS = ("ml:experiment_id",)


def client() -> Any:
    return boto3.client(
        "ce", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )


def tag(key: str, status: str, kind: str = "UserDefined") -> dict[str, str]:
    return {"TagKey": key, "Type": kind, "Status": status}


def page(tags: list[dict[str, str]], token: str | None = None) -> dict[str, Any]:
    return {"CostAllocationTags": tags, **({"NextToken": token} if token else {})}


def statuses(pages: list[dict[str, Any]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    ce = client()
    with Stubber(ce) as stub:
        for number, response in enumerate(pages):
            expected = {"MaxResults": 1000}
            if number:
                expected["NextToken"] = pages[number - 1]["NextToken"]
            stub.add_response("list_cost_allocation_tags", response, expected)
        found = check_tag_keys(ce, ATTEMPT_KEYS, EXPERIMENT_KEYS)
        stub.assert_no_pending_responses()
    return {item.cur_key: (item.status, item.aws_keys) for item in found}


def test_active_keys_pass_without_advice(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="runcost"):
        found = statuses([page([tag("attempt-id", "Active"), tag("ml:experiment_id", "Active")])])
    assert found == {
        "user_attempt_id": ("active", ("attempt-id",)),
        "user_ml_experiment_id": ("active", ("ml:experiment_id",)),
    }
    assert caplog.records == []


def test_inactive_key_warns_with_the_fix(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="runcost"):
        found = statuses([page([tag("attempt-id", "Inactive"), tag("ml:experiment_id", "Active")])])
    assert found["user_attempt_id"] == ("inactive", ("attempt-id",))
    (record,) = caplog.records
    message = record.getMessage()
    assert "attempt tag attempt-id is not an active cost-allocation tag" in message
    assert "Billing console > Cost allocation tags" in message
    assert "management" in message and "not retroactive" in message


def test_absent_key_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="runcost"):
        found = statuses([page([tag("attempt-id", "Active"), tag("team", "Active")])])
    assert found["user_ml_experiment_id"] == ("absent", ())
    (record,) = caplog.records
    assert "'ml:experiment_id' is not a cost-allocation tag" in record.getMessage()


def test_keys_on_a_later_page_are_found() -> None:
    found = statuses(
        [
            page([tag("team", "Active"), tag("attempt_id", "Inactive")], token="page-2"),
            page([tag("aws:eks:cluster-name", "Active", "AWSGenerated")], token="page-3"),
            page([tag("attempt-id", "Active"), tag("ml:experiment_id", "Inactive")]),
        ]
    )
    # attempt_id (inactive) and attempt-id (active) both become user_attempt_id: one is enough
    assert found == {
        "user_attempt_id": ("active", ("attempt-id", "attempt_id")),
        "user_ml_experiment_id": ("inactive", ("ml:experiment_id",)),
    }


def test_access_denied_names_the_permission() -> None:
    ce = client()
    with Stubber(ce) as stub:
        stub.add_client_error(
            "list_cost_allocation_tags",
            service_error_code="AccessDeniedException",
            service_message="User is not authorized to perform: ce:ListCostAllocationTags",
            http_status_code=400,
        )
        with pytest.raises(InputError, match="allow ce:ListCostAllocationTags"):
            list_cost_allocation_tags(ce)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.config.loader import load_config
    from pipeline.run.nightly import run_pipeline
    from pipeline.scenario import write_scenario

    folder = tmp_path_factory.mktemp("coverage")
    config = write_scenario(folder)
    run_pipeline(load_config(config))
    return config


def coverage(config: Path) -> dict[str, dict[str, Any]]:
    database = config.parent / "warehouse" / "runcost.duckdb"
    con = open_database(database)
    cursor = con.execute("select * from marts.tag_coverage")
    names = [column[0] for column in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    con.close()
    return {row["service_name"]: row for row in rows}


def test_tag_coverage_per_service(published: Path) -> None:
    rows = coverage(published)
    assert sorted(rows) == [
        "AmazonBedrock",
        "AmazonEC2",
        "AmazonEKS",
        "AmazonS3",
        "AmazonSageMaker",
    ]  # fmt: skip: the Savings Plan fee is a purchase, not usage, so it is not counted
    ec2 = rows["AmazonEC2"]
    assert ec2["source_format"] == "aws_cur"
    assert (ec2["attempt_tag_keys"], ec2["experiment_tag_keys"]) == (
        ["user_attempt_id"],
        ["user_experiment_id"],
    )
    assert ec2["attempt_tagged_lines"] == 52
    # an unknown attempt tag counts: the smoke test's att-manual-smoke has no experiment tag
    # ($0.8045), and the kept RL volume has only an experiment tag ($1.03224)
    assert ec2["attempt_tagged_cost"] - ec2["experiment_tagged_cost"] == Decimal("-0.22774")
    # the account credit (-$250, no resource) and EC2's tax ($28.10) carry no tags and do not count
    assert ec2["total_cost"] == Decimal("510.385852")
    assert ec2["attempt_tagged_cost"] == Decimal("349.207725")
    assert ec2["attempt_tagged_share"] == Decimal("0.6842033799")
    eks = rows["AmazonEKS"]
    assert (eks["total_cost"], eks["attempt_tagged_cost"]) == (Decimal("74.4"), 0)
    assert eks["attempt_tagged_share"] == 0
    s3 = rows["AmazonS3"]
    # only the dataset bucket carries the experiment tag; no S3 line carries an attempt tag
    assert s3["attempt_tagged_cost"] == 0
    assert s3["experiment_tagged_cost"] == Decimal("6.44721")
    assert s3["experiment_tagged_share"] == (
        s3["experiment_tagged_cost"] / s3["total_cost"]
    ).quantize(Decimal("0.0000000001"))
    for row in rows.values():
        assert row["billing_period"] == "2026-10"
        assert row["billing_account_id"] == "111111111111"
        assert row["sub_account_id"] == "222222222222"
        assert row["billing_currency"] == "USD"


def test_zero_total_has_no_share(tmp_path: Path) -> None:
    from pipeline.dag.models import discover

    (model,) = [item for item in discover() if item.qualified == "marts.tag_coverage"]
    con = duckdb.connect()
    con.execute("create schema normalized")
    con.execute(
        "create table normalized.cost_lines as select 'aws' as provider, '2026-10' as "
        "billing_period, 'p' as billing_account_id, 'a' as sub_account_id, 'AWSSupport' as "
        "service_name, 'USD' as billing_currency, 'att-1' as attempt_tag, "
        "cast(null as varchar) as experiment_tag, cast(v as decimal(38, 10)) as effective_cost, "
        "'Usage' as charge_category, 'r-1' as resource_id, 'aws_cur' as source_format "
        "from (values (5), (-5)) as t(v)"
    )
    con.execute("create schema config")
    con.execute(
        "create table config.attribution as select ['user_attempt_id'] as attempt_tag_keys, "
        "['user_experiment_id'] as experiment_tag_keys, ['attempt_id'] as attempt_label_keys, "
        "['experiment_id'] as experiment_label_keys"
    )
    row = con.execute(f"select * from ({model.sql})").fetchone()
    names = [column[0] for column in con.description]
    found = dict(zip(names, row, strict=True))
    assert found["total_cost"] == 0 and found["attempt_tagged_cost"] == 0
    assert found["attempt_tagged_share"] is None and found["experiment_tagged_share"] is None


def test_check_command_reports_keys_and_coverage(
    published: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ce = client()
    stub = Stubber(ce)
    stub.add_response(
        "list_cost_allocation_tags",
        page([tag("attempt_id", "Active"), tag("experiment_id", "Inactive")]),
        {"MaxResults": 1000},
    )
    stub.activate()
    monkeypatch.setattr(boto3, "client", lambda *args, **kwargs: ce)
    result = CliRunner().invoke(main, ["check", "--config", str(published)])
    assert result.exit_code == 1, result.output
    assert "user_attempt_id" in result.output and "active" in result.output
    assert "experiment tag experiment_id is not an active cost-allocation tag" in result.output
    assert "Tag coverage of the published bill" in result.output
    assert "overall:" in result.output and "of cost carries the attempt tag" in result.output


def test_check_command_without_a_snapshot(tmp_path: Path) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--config", str(config), "--skip-aws"])
    assert result.exit_code == 0, result.output
    assert "no published snapshot yet" in result.output


def never_called(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("runcost check asked AWS with no AWS export configured")


@pytest.mark.parametrize(
    "sources",
    [
        '[gcp]\nfiles = ["gcp/ndjson/billing-*.json"]\n',
        '[focus]\nfiles = ["focus/*.csv"]\n',
        "",
    ],
)
def test_check_asks_nothing_of_aws_without_an_aws_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sources: str
) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text(sources, encoding="utf-8")
    monkeypatch.setattr(boto3, "client", never_called)
    result = CliRunner().invoke(main, ["check", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "Cost Explorer: not asked (runcost.toml has no [aws] exports)\n"
        "tag coverage: no published snapshot yet; run `runcost run` first\n"
    )


def test_check_of_a_gcp_world_reports_its_label_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.config.loader import load_config
    from pipeline.run.nightly import run_pipeline
    from pipeline.scenario.worlds import write_world

    config = write_world("gcp", tmp_path / "g", seed=7)
    run_pipeline(load_config(config))
    monkeypatch.setattr(boto3, "client", never_called)
    result = CliRunner().invoke(main, ["check", "--config", str(config)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Cost Explorer: not asked (runcost.toml has no [aws] exports)"
    assert "(gcp_billing_export)" in result.output
    assert "Compute Engine" in result.output and "one block per row" not in result.output
    assert lines[-1].startswith("overall: ") and "of cost carries the attempt tag" in lines[-1]
