"""What a run loads and prints beside its work: an AWS-only run never imports the BigQuery client,
and no third-party warning opens a run's output."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The bundled demo world (AWS CUR 2.0 only) in a folder of its own."""
    folder = tmp_path / "demo"
    shutil.copytree(ROOT / "fixtures" / "demo", folder, ignore=shutil.ignore_patterns("expected"))
    return folder


def test_a_run_without_gcp_tables_never_imports_the_bigquery_client(demo: Path) -> None:
    # the client and what it pulls in take about 0.75 CPU s to import: a quarter of a small
    # bill's run, paid by every run that reads no BigQuery table
    code = (
        "import sys\n"
        "from pipeline.config.loader import load_config\n"
        "from pipeline.run.nightly import run_pipeline\n"
        "run_pipeline(load_config('runcost.toml'))\n"
        "print(sorted(name for name in sys.modules if name.startswith('google.cloud.bigquery')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=demo, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_no_python_warning_opens_a_runs_output(demo: Path) -> None:
    # with PySpark installed (the spark extra), pandera imports pyspark.pandas, which warned on
    # every run that it does not yet fully support pandas 3
    done = subprocess.run(
        ["runcost", "run", "--config", "runcost.toml"],
        cwd=demo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stderr[:2000]
