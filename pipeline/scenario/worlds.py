"""The bundled worlds `runcost demo` and `runcost scenario` write, by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.scenario import write_gcp_scenario, write_scenario
from pipeline.scenario.cur_csv import write_csv_scenario

# name -> writer(out_dir, seed) returning the world's runcost.toml
WORLDS: dict[str, Callable[[Path, int], Path]] = {
    "aws": lambda out_dir, seed: write_scenario(out_dir, seed=seed),
    "aws-csv": lambda out_dir, seed: write_csv_scenario(out_dir, seed=seed),
    "gcp": lambda out_dir, seed: write_gcp_scenario(out_dir, seed=seed),
}


def write_world(name: str, out_dir: Path, seed: int = 7) -> Path:
    """Write the world ``name`` (aws, aws-csv or gcp) into out_dir; return its runcost.toml."""
    return WORLDS[name](Path(out_dir), seed)
