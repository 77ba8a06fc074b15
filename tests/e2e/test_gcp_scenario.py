"""The GCP scenario through the files source and the BigQuery path: exact per invoice month, per
attempt as the oracle; a late row on a second night re-reads one partition and moves one attempt."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from bq_endpoint import BigQueryEndpoint

from pipeline.config.loader import load_config
from pipeline.scenario import write_gcp_scenario
from pipeline.scenario.gcp_rows import GcpRow
from pipeline.scenario.gcp_scenario import TABLE, export_table
from pipeline.scenario.gcp_world import build_gcp_world
from pipeline.warehouse.snapshots import open_database
from schemas import gcp_billing

BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")


TABLE_ID = f"ml-research-prod.billing.{TABLE}"


def load_export(endpoint: BigQueryEndpoint, rows: list[GcpRow]) -> None:
    """The scenario's export in a BigQuery table, each row in the partition of its export day."""
    endpoint.create_table(TABLE_ID, gcp_billing.arrow_schema())
    endpoint.insert_by_day(
        TABLE_ID, export_table(rows).to_pylist(), day_of=lambda row: row["export_time"].date()
    )


def read_from_bigquery(config: Path, endpoint: BigQueryEndpoint, start: str) -> Path:
    """runcost.toml with [gcp] reading the export table over HTTP instead of its files."""
    text = config.read_text(encoding="utf-8")
    files = next(line for line in text.splitlines() if line.startswith("files = "))
    tables = f'tables = ["{TABLE_ID}"]\napi_endpoint = "{endpoint.url}"\nstart_date = "{start}"'
    config.write_text(text.replace(files, tables), encoding="utf-8")
    return config


@pytest.fixture(scope="module", params=["ndjson", "parquet", "bigquery"])
def published(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, duckdb.DuckDBPyConnection]]:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp(f"gcp-{request.param}")
    if request.param == "bigquery":
        endpoint = BigQueryEndpoint().start()
        request.addfinalizer(endpoint.stop)
        load_export(endpoint, build_gcp_world(7).rows)
        config = read_from_bigquery(write_gcp_scenario(folder), endpoint, "2026-10-01")
    else:
        config = write_gcp_scenario(folder, export_format=request.param)
    result = run_pipeline(load_config(config))
    con = open_database(result.database)
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
    assert len(want) == 14  # 7 attempts x 2 models
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


def attempt_billed(database: Path) -> dict[tuple[str, str], Decimal]:
    with open_database(database) as con:
        rows = con.execute(
            "select attempt_id, allocation_model, billed_cost from marts.attempt_costs"
        ).fetchall()
    return {(attempt, model): cost for attempt, model, cost in rows}


def test_a_late_row_rereads_its_partition_and_moves_only_its_attempt(
    tmp_path: Path, bq_endpoint: BigQueryEndpoint
) -> None:
    from pipeline.run.nightly import run_pipeline

    world = build_gcp_world(7)
    load_export(bq_endpoint, world.rows)
    config = load_config(
        read_from_bigquery(write_gcp_scenario(tmp_path), bq_endpoint, "2026-10-01")
    )
    first = run_pipeline(config)
    before = attempt_billed(first.database)
    bq_endpoint.queries.clear()

    # the night after: one more T4 hour of att-gn1-02 lands late in the newest partition
    template = next(
        row
        for row in world.rows
        if row.labels.get("user_attempt_id") == "att-gn1-02" and row.cost_type == "regular"
    )
    late = replace(
        template,
        cost=Decimal("0.11"),
        cost_at_list=Decimal("0.11"),
        credits=(),
        invoice_month="202611",
        export_time=datetime(2026, 11, 3, 20, 0, tzinfo=UTC),
    )
    bq_endpoint.insert_rows(TABLE_ID, export_table([late]).to_pylist(), date(2026, 11, 3))
    second = run_pipeline(config)

    assert bq_endpoint.fetches() == [(TABLE_ID, "2026-11-03")]
    refetched = json.loads(second.manifest.read_text())["inputs"]["gcp"]["refetched"]
    assert refetched == [f"{TABLE_ID}$2026-11-03"]
    after = attempt_billed(second.database)
    moved = {key: after[key] - before[key] for key in before if after[key] != before[key]}
    assert moved == {
        ("att-gn1-02", "marginal"): Decimal("0.11"),
        ("att-gn1-02", "fully_loaded"): Decimal("0.11"),
    }
    with open_database(second.database) as con:
        assert con.execute(
            "select count(*) from marts.reconciliation where provider = 'gcp' and difference <> 0"
        ).fetchone() == (0,)
        november = con.execute(
            "select sum(billed_cost) from normalized.cost_lines where billing_period = '2026-11'"
        ).fetchone()[0]
    assert november == Decimal("0.39")  # 0.28 before, plus the late 0.11
