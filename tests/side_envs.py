"""Separate Python environments for tests that need another version of a package.

A DuckDB 1.x client (dashboards bundle older DuckDB than runcost's) and Apache Airflow live
in their own virtual environments, created once under $RUNCOST_SIDE_ENVS (default
~/.cache/runcost-test-envs) by pip from PyPI, and reused while the requirement is unchanged.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import venv
from pathlib import Path

DUCKDB_1 = "duckdb==1.1.3"  # the oldest DuckDB that runcost.duckdb promises to open
AIRFLOW = "apache-airflow==3.3.2"


def side_python(name: str, requirement: str) -> Path:
    """The python of a virtual environment holding ``requirement`` (created when missing)."""
    root = Path(os.environ.get("RUNCOST_SIDE_ENVS", Path.home() / ".cache/runcost-test-envs"))
    folder = root / name
    python = folder / "bin" / "python"
    marker = folder / "installed.txt"
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"{name}.lock").open("w") as lock:  # pytest-xdist workers: one installs
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text(encoding="utf-8") == requirement:
            return python
        venv.create(folder, with_pip=True, clear=True)
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", requirement],
            capture_output=True,
            text=True,
            check=False,
        )
        assert installed.returncode == 0, f"pip install {requirement}: {installed.stderr}"
        marker.write_text(requirement, encoding="utf-8")
    return python


def run_python(
    python: Path,
    script: str,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run ``script`` in the side environment (plus ``env``); return its standard output."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | (env or {})
    done = subprocess.run(
        [str(python), "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


__all__ = ["AIRFLOW", "DUCKDB_1", "run_python", "side_python"]
