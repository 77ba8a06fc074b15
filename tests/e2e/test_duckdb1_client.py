"""runcost.duckdb opens in DuckDB 1.1 (a separate environment) after the warehouse moved or
was copied, and reads the same totals as runcost sql; warehouse/latest serves the Parquet."""

from __future__ import annotations

import csv
import io
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from side_envs import DUCKDB_1, run_python, side_python

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import DATABASE_NAME, LATEST_NAME

TOTALS = (
    "select allocation_model, sum(effective_cost)::varchar as effective, "
    "sum(billed_cost)::varchar as billed, count(*) as attempts "
    "from marts.attempt_costs group by all order by all"
)

# runs in the DuckDB 1.x environment: every published view binds, and the totals
READER = """
import json, sys, duckdb
warehouse, mode, totals = sys.argv[1], sys.argv[2], sys.argv[3]
con = duckdb.connect(warehouse + "/runcost.duckdb" if mode == "search_path" else "runcost.duckdb",
                     read_only=True)
if mode == "search_path":
    con.execute("set file_search_path = '" + warehouse.replace("'", "''") + "'")
views = con.execute(
    "select schema_name || '.' || view_name from duckdb_views() where not internal order by 1"
).fetchall()
rows = {name: con.execute("select count(*) from " + name).fetchone()[0] for (name,) in views}
# every value of every row as text: each column's pages are decoded, whatever their encoding
decoded = {
    name: con.execute("select count(t::varchar) from " + name + " as t").fetchone()[0]
    for (name,) in views
}
print(json.dumps({
    "version": duckdb.__version__,
    "rows": rows,
    "decoded": decoded,
    "totals": [list(row) for row in con.execute(totals).fetchall()],
    "run_id": con.execute("select run_id from runcost_snapshot").fetchone()[0],
}))
"""

LATEST = """
import sys, duckdb
con = duckdb.connect()
print(con.execute(
    "select sum(effective_cost)::varchar from read_parquet(?)", [sys.argv[1]]
).fetchone()[0])
"""


@pytest.fixture(scope="module")
def duckdb1() -> Path:
    return side_python("duckdb-1.1", DUCKDB_1)


@pytest.fixture(scope="module")
def moved_and_copied(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pipeline.run.nightly import run_pipeline

    root = tmp_path_factory.mktemp("relocate")
    result = run_pipeline(load_config(write_scenario(root / "built")))
    warehouse = result.database.parent
    copied = root / "copied" / "warehouse"
    shutil.copytree(warehouse, copied, symlinks=True)
    moved = root / "mounted" / "elsewhere" / "warehouse"
    moved.parent.mkdir(parents=True)
    shutil.move(warehouse, moved)  # the original path is gone: nothing can read it by accident
    assert not warehouse.exists()
    return {"moved": moved, "copied": copied}


def runcost_totals(database: Path) -> list[list[object]]:
    result = CliRunner().invoke(
        main, ["sql", "--database", str(database), "--format", "csv", TOTALS]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.output)))[1:]
    return [[model, effective, billed, int(count)] for model, effective, billed, count in rows]


@pytest.mark.parametrize("where", ["moved", "copied"])
@pytest.mark.parametrize("mode", ["search_path", "working_directory"])
def test_duckdb_1_reads_a_relocated_warehouse(
    duckdb1: Path, moved_and_copied: dict[str, Path], where: str, mode: str
) -> None:
    warehouse = moved_and_copied[where]
    found = json.loads(run_python(duckdb1, READER, str(warehouse), mode, TOTALS, cwd=warehouse))
    assert found["version"].startswith("1.1.")
    assert found["totals"] == runcost_totals(warehouse / DATABASE_NAME)
    assert found["totals"] and all(row[3] > 0 for row in found["totals"])
    # every view binds in DuckDB 1.1: the models published as views included
    assert {"marts.attempt_costs", "marts.experiment_costs", "marts.reconciliation"} <= set(
        found["rows"]
    )
    assert found["rows"]["marts.attempt_costs"] > 0
    # and reads every column: the published Parquet's format 2 encodings included
    assert found["decoded"] == found["rows"]


def test_a_copy_reads_its_own_snapshot(duckdb1: Path, moved_and_copied: dict[str, Path]) -> None:
    # emptying the moved warehouse's snapshot must not change what the copy reads
    copied, moved = moved_and_copied["copied"], moved_and_copied["moved"]
    before = runcost_totals(copied / DATABASE_NAME)
    holding = moved.parent / "held-aside"
    shutil.move(moved / "snapshots", holding)
    try:
        found = json.loads(
            run_python(duckdb1, READER, str(copied), "search_path", TOTALS, cwd=moved.parent)
        )
        assert found["totals"] == before
    finally:
        shutil.move(holding, moved / "snapshots")


def test_latest_is_a_stable_path_to_the_current_parquet(
    duckdb1: Path, moved_and_copied: dict[str, Path]
) -> None:
    warehouse = moved_and_copied["moved"]
    latest = warehouse / LATEST_NAME
    assert latest.is_symlink() and not Path(latest.readlink()).is_absolute()
    run_id = json.loads((warehouse / "CURRENT").read_text(encoding="utf-8"))["run_id"]
    assert latest.resolve() == (warehouse / "snapshots" / run_id).resolve()
    total = run_python(duckdb1, LATEST, str(latest / "marts" / "attempt_costs.parquet")).strip()
    expected = sum(Decimal(row[1]) for row in runcost_totals(warehouse / DATABASE_NAME))
    assert Decimal(total) == expected
