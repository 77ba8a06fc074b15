"""Every scenario world run once, and every published mart read back as exact text rows."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipeline.config.loader import Config, load_config
from pipeline.scenario import write_gcp_scenario, write_scenario
from pipeline.warehouse.snapshots import open_database

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden_marts.json"
# one clock for every run: period status and estimates depend on it
CLOCK = datetime(2026, 11, 20, 12, tzinfo=UTC)
# published relations compared: every mart, and the line-level views computed on read
EXTRA_RELATIONS = ("allocation.cost_allocations", "normalized.focus")
# a run's own id differs on every run; it is left out of the comparison
RUN_IDS = ("previous_run_id",)


def _aws(folder: Path) -> list[tuple[Config, datetime]]:
    return [(load_config(write_scenario(folder)), CLOCK)]


def _aws_seed(folder: Path) -> list[tuple[Config, datetime]]:
    return [(load_config(write_scenario(folder, seed=11)), CLOCK)]


def _gcp(folder: Path) -> list[tuple[Config, datetime]]:
    return [(load_config(write_gcp_scenario(folder)), CLOCK)]


def _focus(folder: Path) -> list[tuple[Config, datetime]]:
    from focus_world import write_focus_world

    return [(load_config(write_focus_world(folder)), CLOCK)]


def _mixed(folder: Path) -> list[tuple[Config, datetime]]:
    from mixed_world import write_world

    return [(load_config(write_world(folder)), CLOCK)]


def _nights(folder: Path) -> list[tuple[Config, datetime]]:
    from nights import CLOCKS, write_night

    # each night is written just before it runs (the writer replaces the inputs)
    return [(lambda night=night: write_night(folder, night), CLOCKS[night]) for night in (1, 2, 3)]


def _scale(skew: bool) -> Callable[[Path], list[tuple[Config, datetime]]]:
    def world(folder: Path) -> list[tuple[Config, datetime]]:
        from bench.scale import ScaleSpec, generate

        generate(ScaleSpec(rows=20_000, seed=3, skew=skew), folder)
        return [(load_config(folder / "runcost.toml"), CLOCK)]

    return world


WORLDS: dict[str, Callable[[Path], list]] = {
    "aws": _aws,
    "aws_seed11": _aws_seed,
    "gcp": _gcp,
    "focus": _focus,
    "mixed": _mixed,
    "periods": _nights,
    "scale": _scale(False),
    "scale_skew": _scale(True),
}


def run_world(name: str, folder: Path) -> dict[str, dict[str, object]]:
    """Run the world's nights in order; the marts of the last run, by relation name."""
    con = open_database(run_world_database(name, folder))
    try:
        return published_rows(con)
    finally:
        con.close()


def run_world_database(name: str, folder: Path, partitions: int | None = None) -> Path:
    """Run the world's nights in order; the runcost.duckdb the last run published.

    ``partitions``: warehouse.resource_partitions for every run (else memory_limit chooses).
    """
    from pipeline.run.nightly import run_pipeline

    result = None
    for config, clock in WORLDS[name](folder):
        settings = config() if callable(config) else config
        if partitions is not None:
            settings = dataclasses.replace(settings, resource_partitions=partitions)
        result = run_pipeline(settings, now=clock)
    assert result is not None
    return result.database


def published_rows(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, object]]:
    """Columns and rows (every value as exact text, NULL as None) of every compared relation."""
    names = [
        f"marts.{row[0]}"
        for row in con.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' "
            "order by table_name"
        ).fetchall()
    ]
    found = {}
    for name in [*names, *EXTRA_RELATIONS]:
        described = [row[0] for row in con.execute(f"describe {name}").fetchall()]
        kept = ", ".join(f'"{column}"' for column in described if column not in RUN_IDS)
        cursor = con.execute(f"select {kept} from {name}")
        columns = [column[0] for column in cursor.description]
        rows = sorted(
            (
                [None if value is None else _text(value) for value in row]
                for row in cursor.fetchall()
            ),
            key=lambda row: [(value is None, value or "") for value in row],
        )
        found[name] = {"columns": columns, "rows": rows}
    return found


def _text(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value)


def digest(rows: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Per relation: its columns, row count and a sha256 of its sorted text rows.

    Equal digests mean equal multisets of rows (EXCEPT ALL empty both ways), exact to the last
    decimal; the rows themselves are too large to keep in the repository.
    """
    found = {}
    for name, content in rows.items():
        text = json.dumps(content["rows"], separators=(",", ":"))
        found[name] = {
            "columns": content["columns"],
            "rows": len(content["rows"]),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
    return found


def read_golden() -> dict[str, dict[str, dict[str, object]]]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


if __name__ == "__main__":
    # python tests/e2e/mart_worlds.py [world ...]: record the digests of the current shape
    import tempfile

    golden = read_golden() if GOLDEN.exists() else {}
    for world in sys.argv[1:] or WORLDS:
        with tempfile.TemporaryDirectory() as tmp:
            golden[world] = digest(run_world(world, Path(tmp)))
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
