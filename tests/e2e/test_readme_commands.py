"""The README's commands work as written after `runcost demo`; demo and scenario keep an
existing runcost.toml; a run on unchanged inputs says only that."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"


def querying_block() -> str:
    section = README.read_text(encoding="utf-8").split("## Querying", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like the checkout after README command 1 (`runcost demo`)."""
    root = tmp_path_factory.mktemp("readme")
    (root / "docs").symlink_to(ROOT / "docs")
    done = subprocess.run(
        ["runcost", "demo"], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "cd runcost-demo" in done.stdout  # the demo's own hint is the README's
    assert "more experiment" not in done.stdout  # the demo's five are within the top 10
    return root


def test_the_querying_commands_run_as_written_after_the_demo(checkout: Path) -> None:
    block = querying_block()
    assert block.startswith("cd runcost-demo\n")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=checkout,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    demo = checkout / "runcost-demo"
    assert (demo / "unallocated.csv").read_text(encoding="utf-8").startswith("billing_period")
    assert (demo / "focus.parquet").stat().st_size > 0
    assert "<svg" in (demo / "runcost-report.html").read_text(encoding="utf-8")
    assert "exp-llm-7b" in done.stdout


def test_the_summary_lists_the_costliest_experiments_and_how_to_see_the_rest(
    tmp_path: Path,
) -> None:
    target = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", str(target), "--top", "2"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.stdout
    listed = re.findall(r"^(exp-[a-z0-9-]+) ", text, re.M)
    assert listed == ["exp-llm-7b", "exp-eks-finetune"]  # 1,464.51 and 688.54 fully loaded
    assert re.search(r"Experiment costs, run \S+: the 2 costliest of 5 \(effective cost", text)
    hint = (
        "and 3 more experiments; all of them, costliest first:\n"
        '  runcost sql "select experiment_id, effective_cost from marts.experiment_costs where '
        "allocation_model = 'fully_loaded' order by effective_cost desc, experiment_id\"\n"
    )
    assert hint in text
    query = hint.split('runcost sql "', 1)[1].rstrip('"\n')
    config = str(target / "runcost.toml")
    every = CliRunner().invoke(main, ["sql", query, "--config", config, "--format", "csv"])
    assert every.exit_code == 0, every.output
    assert [line.split(",")[0] for line in every.stdout.splitlines()[1:]] == [
        "exp-llm-7b", "exp-eks-finetune", "exp-rl-agent", "exp-nlp-distill", "exp-vision-sweep",
    ]  # fmt: skip


def test_a_no_change_run_says_only_that(checkout: Path) -> None:
    config = checkout / "runcost-demo" / "runcost.toml"
    result = CliRunner().invoke(main, ["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    assert re.fullmatch(
        r"no change: the inputs give the content of snapshot \S+, which stays current", lines[0]
    )
    assert "published" not in result.stdout


@pytest.mark.parametrize("command", ["scenario", "demo"])
def test_an_existing_runcost_toml_is_kept_without_force(tmp_path: Path, command: str) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("# my own settings\n", encoding="utf-8")
    refused = CliRunner().invoke(main, [command, str(tmp_path)])
    assert refused.exit_code == 1
    assert (
        f"error: {config} exists: the scenario would overwrite it; pick another DIRECTORY, or "
        "add --force to overwrite it"
    ) in " ".join(refused.output.split())
    assert config.read_text(encoding="utf-8") == "# my own settings\n"
    assert not (tmp_path / "telemetry").exists()


def test_force_overwrites(tmp_path: Path) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("# my own settings\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["scenario", str(tmp_path), "--force"])
    assert result.exit_code == 0, result.output
    assert "[warehouse]" in config.read_text(encoding="utf-8")
