"""The GCP scenario writer: same seed, same bytes; both extract formats hold the same rows."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.scenario import write_gcp_scenario
from pipeline.scenario.gcp_oracle import gcp_bases
from pipeline.scenario.gcp_world import build_gcp_world


def contents(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_same_seed_same_bytes_and_another_seed_moves_egress(tmp_path: Path) -> None:
    write_gcp_scenario(tmp_path / "a")
    write_gcp_scenario(tmp_path / "b")
    write_gcp_scenario(tmp_path / "c", seed=8)
    assert contents(tmp_path / "a") == contents(tmp_path / "b")
    changed = {
        name
        for name, body in contents(tmp_path / "a").items()
        if contents(tmp_path / "c")[name] != body
    }
    assert "expected/bill_totals.csv" in changed
    assert "telemetry/attempts.csv" not in changed


def test_both_formats_hold_every_row(tmp_path: Path) -> None:
    config = write_gcp_scenario(tmp_path, export_format="parquet")
    assert 'files = ["gcp/parquet/billing-*.parquet"]' in config.read_text()
    rows = build_gcp_world().rows
    parquet = sorted((tmp_path / "gcp" / "parquet").glob("billing-*.parquet"))
    ndjson = sorted((tmp_path / "gcp" / "ndjson").glob("billing-*.json"))
    assert len(parquet) == len(ndjson) == 2
    assert sum(pq.read_metadata(path).num_rows for path in parquet) == len(rows)
    assert sum(len(path.read_text().splitlines()) for path in ndjson) == len(rows)
    costs = [value for path in parquet for value in pq.read_table(path)["cost"].to_pylist()]
    assert sum(Decimal(str(value)) for value in costs) == sum(row.cost for row in rows)


def test_two_credits_on_one_row_are_both_counted_once() -> None:
    row = next(row for row in build_gcp_world().rows if len(row.credits) == 2)
    bases = gcp_bases(row)
    sud, promotion = (credit.amount for credit in row.credits)
    assert bases["effective_cost"] == row.cost + sud
    assert bases["net_cost"] == row.cost + sud + promotion
