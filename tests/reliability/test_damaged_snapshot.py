"""A damaged file in the current snapshot: status names it, the next run rebuilds and says so."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from worlds import make_world, manifests, published_hashes, run_in_process

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse.integrity import DamagedFile
from pipeline.warehouse.queries import warehouse_status
from pipeline.warehouse.snapshots import current_snapshot


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, template: Path) -> Path:
    """A world with one clean snapshot; each test damages a copy of it."""
    config = make_world(tmp_path_factory.mktemp("damaged") / "world", template)
    assert run_in_process(config) == "published"
    return config.parent


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


# (file of the snapshot, what is done to it, its table, what status and the run say is wrong)
DAMAGE = {
    "truncated mart": (
        "marts/attempt_costs.parquet",
        truncate,
        "marts.attempt_costs",
        "holds 100 bytes where snapshot.json records {size} (truncated or overwritten)",
    ),
    "truncated telemetry": (
        "telemetry/attempts.parquet",
        truncate,
        "telemetry.attempts",
        "holds 100 bytes where snapshot.json records {size} (truncated or overwritten)",
    ),
    "deleted partition": (
        "marts/reconciliation/billing_period=2026-10/part_0.parquet",
        Path.unlink,
        "marts.reconciliation",
        "is missing",
    ),
    "truncated record": (
        "snapshot.json",
        lambda path: path.write_bytes(path.read_bytes()[:1000]),
        None,
        "is not whole JSON (truncated?): <the JSON error>",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_file_is_named_and_the_next_run_repairs_it(
    tmp_path: Path, published: Path, reference_hashes: dict[str, str], damage: str
) -> None:
    world = tmp_path / "world"
    shutil.copytree(published, world, symlinks=True)
    config = world / "runcost.toml"
    warehouse = load_config(config).warehouse
    current = current_snapshot(warehouse)
    assert current is not None
    relative, spoil, table, problem = DAMAGE[damage]
    path = Path(current["snapshot"]) / relative
    size = path.stat().st_size
    spoil(path)
    if relative == "snapshot.json":  # the line the truncation ends in depends on the record
        problem = json_problem(path)
    found = DamagedFile(str(path), table, problem.format(size=size))

    status = warehouse_status(warehouse)
    assert status.damaged_files == [found]
    assert status.to_json()["damaged_files"] == [asdict(found)]
    shown = CliRunner().invoke(main, ["status", "--config", str(config)], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert (
        f"damaged: {found.path}: {found.problem}; the next `runcost run` rebuilds it from raw/ "
        "and the telemetry"
    ) in shown.output

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 0, result.output
    text = result.output.replace("\n", "")
    telemetry = " it reads (not the damaged published telemetry)" if "telemetry" in damage else ""
    assert (
        f"the current snapshot {current['run_id']} is damaged: {found.path}: {found.problem}; "
        f"this run rebuilds it from raw/ and the telemetry{telemetry} and publishes it whole"
    ) in text
    run = manifests(warehouse)[-1]
    assert run["status"] == "published"
    assert run["repaired"] == [asdict(found)]
    assert (
        f"repaired the damaged snapshot: snapshot {run['run_id']} is current and whole; "
        f"rebuilt {found.path}"
    ) in text
    assert warehouse_status(warehouse).damaged_files == []
    assert published_hashes(warehouse) == reference_hashes, "as a clean run publishes"
    assert run_in_process(config) == "unchanged"


def json_problem(path: Path) -> str:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        return f"is not whole JSON (truncated?): {error}"
    raise AssertionError(f"{path} still parses")
