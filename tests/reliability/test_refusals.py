"""Bad re-deliveries, broken pointers and hostile analyst queries: refused or repaired, and the
previous snapshot stays current and readable."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from worlds import make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse.snapshots import DATABASE_NAME


def world(tmp_path: Path, template: Path) -> tuple[Path, Path]:
    config = make_world(tmp_path / "world", template)
    assert run_in_process(config) == "published"
    return config, load_config(config).warehouse


def redeliver(config: Path, change, execution: str = "restated-1") -> Path:
    """Rewrite the CUR data file with ``change`` (a function of the table) under a new manifest."""
    (data,) = (config.parent / "aws").rglob("*.parquet")
    table = pq.read_table(data)
    pq.write_table(change(table), data)
    manifest = next((config.parent / "aws").rglob("*-Manifest.json"))
    body = json.loads(manifest.read_text(encoding="utf-8"))
    body["executionId"] = execution
    manifest.write_text(json.dumps(body), encoding="utf-8")
    return data


def one_error(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in output, output
    return output[output.index("error: ") :].replace("\n", "")


def nan_cost(table: pa.Table) -> pa.Table:
    column = "line_item_unblended_cost"
    cells = table.column(column).to_pylist()
    cells[3] = math.nan
    index = table.schema.get_field_index(column)
    return table.set_column(index, table.schema.field(column), pa.array(cells, pa.float64()))


def test_bad_money_in_a_re_delivery_keeps_the_snapshot_and_a_fix_is_read(
    tmp_path: Path, template: Path
):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    original = pq.read_table(next((config.parent / "aws").rglob("*.parquet")))
    data = redeliver(config, nan_cost)

    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    message = one_error(result.output)
    assert f"error: {data}: row 4, column line_item_unblended_cost: 'nan' is refused" in message
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    assert manifests(warehouse)[-1]["status"] == "failed"

    pq.write_table(original, data)  # the operator re-copies the file; same manifest
    assert run_in_process(config) == "published", "the corrected copy is read afresh"
    runs = manifests(warehouse)
    assert runs[-1]["totals"] == runs[0]["totals"], "the same bill as before the bad copy"


def test_a_zero_row_re_delivery_stops_the_run_unless_allowed_once(tmp_path: Path, template: Path):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    redeliver(config, lambda table: table.slice(0, 0))

    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 1
    message = one_error(result.output)
    assert "billing period 2026-10 holds no lines, but the current " in message
    assert "run once with `runcost run --allow-shrink 2026-10`" in message
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before

    allowed = ["run", "--config", str(config), "--allow-shrink", "2026-10"]
    result = CliRunner().invoke(main, allowed)
    assert result.exit_code == 0, result.output
    assert manifests(warehouse)[-1]["allow_shrink"] == ["2026-10"]
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") != pointer


@pytest.mark.parametrize("content", ["", '{"run_id": "2026'], ids=["empty", "partial"])
def test_a_broken_current_is_repaired_at_startup(tmp_path: Path, template: Path, content: str):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    (warehouse / "CURRENT").write_text(content, encoding="utf-8")
    status = CliRunner().invoke(main, ["status", "--config", str(config)])
    assert status.exit_code == 0, status.output
    assert "is empty or unreadable" in status.output
    assert json.loads(pointer)["run_id"] in status.output
    assert run_in_process(config) == "unchanged"
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer


def test_an_empty_database_and_stray_files_are_repaired_at_startup(
    tmp_path: Path, template: Path, caplog
):
    config, warehouse = world(tmp_path, template)
    before = published_hashes(warehouse)
    (warehouse / DATABASE_NAME).write_bytes(b"")  # what a full disk left before this fix
    stray = [
        warehouse / ".ingest-staging" / "dead0001" / "0000" / "part.parquet",
        warehouse / f".{DATABASE_NAME}.20260101T000000000000Z-dead00.tmp.wal",
        next(warehouse.glob("runs/*")) / ".manifest.json.tmp",
    ]
    for path in stray:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("left by a dead run", encoding="utf-8")
    with caplog.at_level("WARNING", logger="runcost"):
        run_in_process(config)
    assert "rewrote it from the current snapshot" in caplog.text
    assert published_hashes(warehouse) == before
    assert not any(path.exists() for path in stray)
    assert not (warehouse / ".ingest-staging").exists()


def test_analyst_queries_fetch_nothing_from_the_network(tmp_path: Path, template: Path):
    config, _warehouse = world(tmp_path, template)
    for query in (
        "select * from read_csv('http://127.0.0.1:9/x.csv')",
        "select * from read_csv('/etc/passwd')",
    ):
        result = CliRunner().invoke(main, ["sql", "--config", str(config), query])
        assert result.exit_code == 1
        assert "error: query failed: Permission Error: Cannot access file" in one_error(
            result.output
        )
    ok = CliRunner().invoke(
        main, ["sql", "--config", str(config), "select count(*) from marts.attempt_costs"]
    )
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("target", ["CURRENT", DATABASE_NAME, "snapshots/x.csv"])
def test_output_inside_the_warehouse_is_refused(tmp_path: Path, template: Path, target: str):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    output = warehouse / target
    result = CliRunner().invoke(
        main, ["sql", "--config", str(config), "select 1", "--format", "csv", "--output", output]
    )
    assert result.exit_code == 2
    assert f"error: --output {output}: is inside the warehouse" in one_error(result.output)
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    published_hashes(warehouse)


def test_debug_prints_the_traceback_after_the_error_line(tmp_path: Path):
    missing = tmp_path / "nowhere" / "runcost.toml"
    plain = CliRunner().invoke(main, ["run", "--config", str(missing)])
    debug = CliRunner().invoke(main, ["--debug", "run", "--config", str(missing)])
    assert plain.exit_code == debug.exit_code == 1
    assert "Traceback" not in plain.output and "Traceback" in debug.output
    assert one_error(plain.output)
