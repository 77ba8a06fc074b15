"""Split cost allocation: the scenario's EKS node goes to its pods' attempts as the oracle says."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.common.errors import CheckFailed
from pipeline.config.loader import load_config
from pipeline.scenario import EXPORT_DIR, EXPORT_NAME, execution_id, write_scenario
from pipeline.scenario.cur_writer import write_cur_delivery
from pipeline.scenario.world import EKS_NODE, build_world
from pipeline.warehouse.snapshots import open_database

# Each slice is the line times a DOUBLE share, rounded to 10 places; nine node lines per attempt.
TOLERANCE = Decimal("0.00000001")
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
SEED = 7


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, object]]:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("split")
    result = run_pipeline(load_config(write_scenario(folder, seed=SEED)))
    con = open_database(result.database)
    yield folder, result, con
    con.close()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, object]]:
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_split_slices_equal_the_oracle_per_pod_attempt(published) -> None:
    folder, _, con = published
    with (folder / "expected" / "split_costs.csv").open(encoding="utf-8") as handle:
        expected = {
            (row["attempt_id"], row["attribution_method"]): row for row in csv.DictReader(handle)
        }
    assert sorted(expected) == [
        ("att-eks-01", "split_cost"),
        ("att-eks-01", "split_unused"),
        ("att-eks-02", "split_cost"),
        ("att-eks-02", "split_unused"),
    ]
    actual = rows(
        con,
        "select allocation_model, attempt_id, attribution_method, sum(billed_cost) as billed_cost,"
        " sum(effective_cost) as effective_cost, sum(list_cost) as list_cost,"
        " sum(net_cost) as net_cost, count(*) as slices from allocation.cost_allocations"
        " where attribution_method in ('split_cost', 'split_unused')"
        " group by all order by all",
    )
    got = {
        (row["allocation_model"], row["attempt_id"], row["attribution_method"]) for row in actual
    }
    assert got == {
        ("marginal", "att-eks-01", "split_cost"),
        ("marginal", "att-eks-02", "split_cost"),
        ("fully_loaded", "att-eks-01", "split_cost"),
        ("fully_loaded", "att-eks-02", "split_cost"),
        ("fully_loaded", "att-eks-01", "split_unused"),
        ("fully_loaded", "att-eks-02", "split_unused"),
    }
    for row in actual:
        want = expected[row["attempt_id"], row["attribution_method"]]
        for basis in BASES:
            assert abs(row[basis] - Decimal(want[basis])) <= TOLERANCE, (row, basis)
    # 3 node-hours x 3 lines (Savings Plan covered usage, its negation, on-demand usage)
    first = next(r for r in actual if r["attempt_id"] == "att-eks-01")
    assert first["slices"] == 9
    second = next(r for r in actual if r["attempt_id"] == "att-eks-02")
    assert second["slices"] == 6  # its pod ran 2 of the 3 hours


def test_split_cost_comes_before_resource_time(published) -> None:
    _, _, con = published
    methods = rows(
        con,
        "select distinct a.attribution_method from allocation.cost_allocations as a "
        f"where a.resource_id = '{EKS_NODE}' and a.attempt_id is not null order by 1",
    )
    # att-eks-01 holds the node in attempt_resources, yet no slice is by resource and time
    assert methods == [{"attribution_method": "split_cost"}, {"attribution_method": "split_unused"}]


def test_unused_capacity_and_unlabelled_pods_stay_unallocated_in_marginal(published) -> None:
    _, _, con = published
    node = rows(
        con,
        "select sum(effective_cost) as cost from normalized.cost_lines "
        f"where resource_id = '{EKS_NODE}'",
    )[0]["cost"]
    assert node == Decimal("95.028075")  # 3 x ($3.00 plan + 0.875 h x $32.7726)
    pods = rows(
        con,
        "select pod_resource_id like '%/kube-system/%' as system,"
        " sum(split_cost) as split_cost, sum(unused_cost) as unused_cost"
        " from normalized.split_cost_lines group by all order by all",
    )
    attempts, system = pods
    unallocated = {
        row["unallocated_reason"]: row["cost"]
        for row in rows(
            con,
            "select unallocated_reason, sum(effective_cost) as cost"
            " from allocation.cost_allocations where allocation_model = 'marginal'"
            f" and resource_id = '{EKS_NODE}' and allocation_kind = 'unallocated' group by all",
        )
    }
    without_attempt = system["split_cost"] + system["unused_cost"]
    assert unallocated == {
        "split_unused_capacity": attempts["unused_cost"],
        "split_pod_without_attempt": without_attempt,
    }
    assert without_attempt == Decimal("0.454735")  # the kube-system pod, 3 hours


def test_split_rows_never_reach_the_bill(published) -> None:
    folder, _, con = published
    (count,) = con.execute(
        "select count(*) from normalized.cost_lines where operation = 'EKSPod-EC2'"
    ).fetchone()
    assert count == 0
    (split_rows,) = con.execute("select count(*) from normalized.split_cost_lines").fetchone()
    # per pod-hour: vCPU, GB and Accelerator rows for trainers, vCPU and GB for the system pod
    assert split_rows == 3 * 3 + 3 * 2 + 2 * 3
    with (folder / "expected" / "bill_totals.csv").open(encoding="utf-8") as handle:
        (totals,) = list(csv.DictReader(handle))
    bill = rows(
        con,
        "select cost_basis, bill_total from marts.reconciliation"
        " where allocation_model = 'marginal'",
    )
    assert {row["cost_basis"]: row["bill_total"] for row in bill} == {
        basis: Decimal(totals[basis]) for basis in BASES
    }


def test_instance_hour_check_holds_on_the_scenario(published) -> None:
    _, result, _ = published
    manifest = json.loads(result.manifest.read_text(encoding="utf-8"))
    assert manifest["checks"]["split_cost_matches_instance"] == "passed"


def test_instance_hour_check_fails_on_a_corrupted_split_row(tmp_path: Path) -> None:
    from pipeline.run.nightly import run_pipeline

    config = write_scenario(tmp_path, seed=SEED)
    world = build_world(SEED)
    lines = list(world.lines)
    index = next(
        number
        for number, line in enumerate(lines)
        if line.operation == "EKSPod-EC2" and line.usage_type.endswith("Accelerator-Hours")
    )
    columns = dict(lines[index].columns)
    columns["split_line_item_split_cost"] += 0.01  # one cent more than AWS's own split
    lines[index] = replace(lines[index], columns=columns)
    write_cur_delivery(
        tmp_path / EXPORT_DIR, EXPORT_NAME, world.billing_period, lines, execution_id(SEED)
    )
    with pytest.raises(CheckFailed) as raised:
        run_pipeline(load_config(config))
    failed = {name: found for name, _, _, found in raised.value.failures}
    assert failed == {"split_cost_matches_instance": 1}
    (_, columns_out, found_rows, _) = raised.value.failures[0]
    row = dict(zip(columns_out, found_rows[0], strict=True))
    assert row["parent_resource_id"] == EKS_NODE
    assert row["difference"] == Decimal("0.0100000000")
