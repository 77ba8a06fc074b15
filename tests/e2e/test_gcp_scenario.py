"""The GCP scenario through the files source: exact per invoice month, per attempt as the oracle."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.config import load_config
from pipeline.scenario import write_gcp_scenario

BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")


@pytest.fixture(scope="module", params=["ndjson", "parquet"])
def published(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    from pipeline.run import run_pipeline

    folder = tmp_path_factory.mktemp(f"gcp-{request.param}")
    result = run_pipeline(load_config(write_gcp_scenario(folder, export_format=request.param)))
    con = duckdb.connect(str(result.database), read_only=True)
    yield folder / "expected", con
    con.close()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_invoice_month_reconciles_exactly(published) -> None:
    _expected, con = published
    rows = con.execute(
        "select billing_period, allocation_model, cost_basis, difference "
        "from marts.reconciliation where provider = 'gcp' order by all"
    ).fetchall()
    assert {row[0] for row in rows} == {"2026-10", "2026-11"}
    assert len(rows) == 2 * 2 * 4  # months x models x bases
    assert all(row[3] == 0 for row in rows), [row for row in rows if row[3] != 0]


def test_invoice_month_totals_equal_the_oracle(published) -> None:
    expected, con = published
    got = {
        row[0]: dict(zip(BASES, row[1:], strict=True))
        for row in con.execute(
            "select billing_period, sum(billed_cost), sum(effective_cost), sum(list_cost), "
            "sum(net_cost) from normalized.cost_lines where provider = 'gcp' group by 1"
        ).fetchall()
    }
    want = {row["billing_period"]: row for row in read_csv(expected / "bill_totals.csv")}
    assert sorted(got) == sorted(want) == ["2026-10", "2026-11"]
    for month, totals in want.items():
        for basis in BASES:
            assert got[month][basis] == Decimal(totals[basis]), (month, basis)
    # November's invoice holds only the late GPU hour (0.35) and the correction (-0.07)
    assert got["2026-11"]["billed_cost"] == Decimal("0.28")


def test_attempt_costs_equal_the_oracle_in_all_four_bases(published) -> None:
    expected, con = published
    cursor = con.execute(
        "select attempt_id, allocation_model, billed_cost, effective_cost, list_cost, net_cost, "
        "estimated_cost from marts.attempt_costs"
    )
    got = {(row[0], row[1]): row[2:] for row in cursor.fetchall()}
    want = read_csv(expected / "attempt_costs.csv")
    assert len(want) == 12  # 6 attempts x 2 models
    assert sorted(got) == sorted((row["attempt_id"], row["allocation_model"]) for row in want)
    for row in want:
        key = (row["attempt_id"], row["allocation_model"])
        for index, column in enumerate((*BASES, "estimated_cost")):
            assert got[key][index] == Decimal(row[column]), (key, column)


def test_late_row_and_correction_belong_to_november(published) -> None:
    _expected, con = published
    rows = con.execute(
        "select provider_line_type, charge_class, resource_class, billed_cost, attempt_tag "
        "from normalized.cost_lines where billing_period = '2026-11' order by billed_cost"
    ).fetchall()
    assert rows == [
        ("adjustment", "Correction", "gpu", Decimal("-0.07"), "att-gn1-01"),
        ("regular", None, "gpu", Decimal("0.35"), "att-gn1-02"),
    ]


def test_gke_pod_rows_reach_their_attempts_by_k8s_label(published) -> None:
    _expected, con = published
    rows = con.execute(
        "select attempt_tag, count(*) from normalized.cost_lines "
        "where tags['k8s-namespace'] is not null group by 1 order by 1 nulls last"
    ).fetchall()
    # 3 SKUs per pod-hour: att-gke-01 ran 3 hours, att-gke-02 2; the node's idle rest is untagged
    assert rows == [("att-gke-01", 9), ("att-gke-02", 6), (None, 9)]
