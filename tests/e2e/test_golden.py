"""Golden test: the pipeline run on the scenario reproduces the oracle's costs to a micro-dollar."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.config.loader import load_config
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database

TOLERANCE = Decimal("0.000001")
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
ATTEMPT_MONEY = (*BASES, "estimated_cost")
EXPERIMENT_MONEY = (*BASES, "failed_attempt_cost", "experiment_only_cost")


@pytest.fixture(scope="module")
def published(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    from pipeline.run.nightly import (
        run_pipeline,
    )  # the lead's entry point; imported here, not at collection

    folder = tmp_path_factory.mktemp("golden")
    result = run_pipeline(load_config(write_scenario(folder)))
    con = open_database(result.database)
    yield folder / "expected", con
    con.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def mart(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, object]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def assert_rows_match(
    actual: list[dict[str, object]],
    expected: list[dict[str, str]],
    keys: tuple[str, ...],
    money: tuple[str, ...],
    counts: tuple[str, ...] = (),
) -> None:
    got = {tuple(row[key] for key in keys): row for row in actual}
    want = {tuple(row[key] for key in keys): row for row in expected}
    assert sorted(got) == sorted(want)
    for key, row in want.items():
        for column in money:
            difference = abs(Decimal(str(got[key][column])) - Decimal(row[column]))
            assert difference <= TOLERANCE, (key, column, got[key][column], row[column])
        for column in counts:
            assert str(got[key][column]) == row[column], (key, column)


def test_attempt_costs_match_the_oracle(published) -> None:
    expected, con = published
    actual = mart(
        con,
        "select attempt_id, experiment_id, allocation_model, billed_cost, effective_cost, "
        "list_cost, net_cost, estimated_cost from marts.attempt_costs",
    )
    rows = read_csv(expected / "attempt_costs.csv")
    assert len(rows) == 20  # 10 attempts x 2 models
    assert_rows_match(actual, rows, ("attempt_id", "allocation_model"), ATTEMPT_MONEY)
    assert {(row["attempt_id"], row["experiment_id"]) for row in actual} == {
        (row["attempt_id"], row["experiment_id"]) for row in rows
    }


def test_experiment_costs_match_the_oracle(published) -> None:
    expected, con = published
    actual = mart(con, "select * from marts.experiment_costs")
    rows = read_csv(expected / "experiment_costs.csv")
    assert len(rows) == 10  # 5 experiments x 2 models
    assert_rows_match(
        actual,
        rows,
        ("experiment_id", "allocation_model"),
        EXPERIMENT_MONEY,
        counts=("attempts", "failed_attempts"),
    )


def test_reconciliation_closes_to_the_bill(published) -> None:
    expected, con = published
    rows = mart(con, "select * from marts.reconciliation")
    assert len(rows) == 8  # 2 models x 4 bases for one payer, period and currency
    assert all(row["difference"] == 0 for row in rows), rows
    (totals,) = read_csv(expected / "bill_totals.csv")
    for row in rows:
        assert row["billing_period"] == totals["billing_period"]
        assert Decimal(str(row["bill_total"])) == Decimal(totals[str(row["cost_basis"])])


def test_each_pool_spreads_what_the_oracle_spreads(published) -> None:
    expected, con = published
    actual = mart(
        con,
        "select pool_name, sum(billed_cost) as billed_cost, sum(effective_cost) as effective_cost, "
        "sum(list_cost) as list_cost, sum(net_cost) as net_cost from marts.allocation_detail "
        "where allocation_model = 'fully_loaded' and allocation_method = 'pool' group by all",
    )
    rows = read_csv(expected / "pool_costs.csv")
    assert len(rows) == 5
    assert_rows_match(actual, rows, ("pool_name",), BASES)


def test_allocation_detail_sums_to_every_line_and_every_attempt(published) -> None:
    _, con = published
    broken = mart(
        con,
        "select allocation_model, line_id from marts.allocation_detail group by all having "
        + " or ".join(f"sum({basis}) <> any_value(line_{basis})" for basis in BASES),
    )
    assert broken == []
    lines = mart(con, "select count(distinct line_id) as n from marts.allocation_detail")
    assert lines == mart(con, "select count(*) as n from normalized.cost_lines")
    differences = mart(
        con,
        "select costs.attempt_id, costs.allocation_model from marts.attempt_costs as costs "
        "left join (select attempt_id, allocation_model, "
        + ", ".join(f"sum({basis}) as {basis}" for basis in BASES)
        + " from marts.allocation_detail group by all) as detail "
        "on costs.attempt_id = detail.attempt_id "
        "and costs.allocation_model = detail.allocation_model where "
        + " or ".join(f"coalesce(detail.{basis}, 0) <> costs.{basis}" for basis in BASES),
    )
    assert differences == []


def test_resource_classes_of_the_scenario_land_where_the_policy_says(published) -> None:
    _, con = published
    rows = mart(
        con,
        "select resource_class, allocation_model, allocation_method, unallocated_reason, "
        "pool_name, count(*) as slices, sum(effective_cost) as effective_cost "
        "from marts.allocation_detail group by all",
    )
    found = {
        (row["resource_class"], row["allocation_model"], row["allocation_method"],
         row["unallocated_reason"], row["pool_name"]): row["effective_cost"]
        for row in rows
    }  # fmt: skip
    # Bedrock ($3.75, tagged with exp-llm-7b) and a SageMaker endpoint (4 h at $1.408)
    for model in ("marginal", "fully_loaded"):
        assert found["other", model, "unallocated", "excluded_inference", None] == Decimal("3.75")
        assert found["compute", model, "unallocated", "excluded_inference", None] == Decimal(
            "5.632"
        )
    # the account credit is spread whole by net attributed cost
    assert found["credit", "fully_loaded", "pool", None, "account-credits"] == Decimal(-250)
    # the monitoring node's hours with nothing running stay visible (73 h at $0.192)
    assert found[
        "compute", "fully_loaded", "unallocated", "pool_no_eligible_attempts", "monitoring"
    ] == 73 * Decimal("0.192")
    # inter-AZ transfer is tagged to the attempts; checkpoint PUTs and GETs held by them
    assert found["data_transfer", "marginal", "tag", None, None] > 0
    assert found["storage_operations", "marginal", "resource_time", None, None] > 0
    kept = mart(
        con,
        "select distinct allocation_method, experiment_id from marts.allocation_detail "
        "where resource_id = 'vol-0c3d9e8f7a6b50022'",
    )
    assert kept == [{"allocation_method": "experiment_tag", "experiment_id": "exp-rl-agent"}]


def test_explain_prints_where_each_dollar_came_from(published) -> None:
    from click.testing import CliRunner

    from pipeline.cli.app import main
    from pipeline.cli.explain import explain_attempt
    from pipeline.common.errors import RuncostError

    expected, con = published
    for (attempt_id,) in con.execute("select attempt_id from marts.attempt_costs").fetchall():
        for model in ("marginal", "fully_loaded"):
            result = explain_attempt(con, attempt_id, model)
            assert result.group_sums() == result.totals, (attempt_id, model)
    database = str(expected.parent / "warehouse" / "runcost.duckdb")
    output = CliRunner().invoke(main, ["explain", "att-llm-01", "--database", database])
    assert output.exit_code == 0, output.output
    assert "totals equal marts.attempt_costs" in output.output
    for text in ("tag", "resource_time", "pool", "account-credits", "cost_weighted", "AmazonEC2"):
        assert text in output.output
    # one CLI call per process: open_snapshot locks the shared database instance's settings
    with pytest.raises(RuncostError, match=r"attempt 'att-nobody' is not in marts\.attempt_costs"):
        explain_attempt(con, "att-nobody")


def test_a_run_names_the_pool_whose_driver_has_no_usage(tmp_path: Path, caplog) -> None:
    import logging

    from pipeline.run.nightly import run_pipeline

    config = write_scenario(tmp_path)
    # attempt_count over each EKS hour: hours with a running attempt but no launch have
    # candidates and no usage, so those hours stay unallocated and the run says so
    text = config.read_text(encoding="utf-8").replace(
        'name = "eks-control-plane"\nselector = "service_name = \'AmazonEKS\'"\n'
        'driver = "gpu_seconds"\nspread = "billing_period"',
        'name = "eks-control-plane"\nselector = "service_name = \'AmazonEKS\'"\n'
        'driver = "attempt_count"\nspread = "charge_period"',
    )
    assert 'driver = "attempt_count"\nspread = "charge_period"' in text
    config.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="runcost"):
        result = run_pipeline(load_config(config))
    warnings = [r.getMessage() for r in caplog.records if "has no usage data" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith("pool eks-control-plane: driver attempt_count has no usage data")
    con = open_database(result.database)
    try:
        reasons = mart(
            con,
            "select unallocated_reason, count(*) as lines from marts.allocation_detail "
            "where pool_name = 'eks-control-plane' and allocation_model = 'fully_loaded' "
            "group by all order by all",
        )
    finally:
        con.close()
    # 744 EKS hours: 6 hours with a launch give 9 slices (9 launches); 17 hours with only
    # running attempts have no usage for the driver; 721 have no candidate at all
    counts = {row["unallocated_reason"]: row["lines"] for row in reasons}
    assert counts == {None: 9, "pool_driver_no_usage": 17, "pool_no_eligible_attempts": 721}
