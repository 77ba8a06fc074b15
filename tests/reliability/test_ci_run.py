"""`.ci/run` runs the README's two commands as written, in a fresh virtual environment: command
one installs runcost alone and runs the demo, command two adds the test extras and runs pytest."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CI_RUN = ROOT / ".ci" / "run"


def readme_commands() -> list[str]:
    """The README's first code block: the commands a new reader runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert block, "README.md has no sh code block"
    return block.group(1).splitlines()


def ci_lines() -> list[str]:
    """The lines .ci/run executes (comments and blank lines dropped)."""
    lines = CI_RUN.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_starts_with_runcost_alone_then_the_tests() -> None:
    install, test = readme_commands()
    assert install == "pip install -e . && runcost demo"
    extras = re.fullmatch(r"pip install -e '\.\[([a-z,-]+)\]' && pytest", test)
    assert extras, test
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    defined = pyproject["project"]["optional-dependencies"]
    assert set(extras.group(1).split(",")) == set(defined) - {"bench"}


def test_ci_runs_the_readme_commands_verbatim_in_a_fresh_environment() -> None:
    install, test = readme_commands()
    lines = ci_lines()
    fresh = lines.index("rm -rf .ci-venv")
    assert lines[fresh + 1 : fresh + 3] == ["python3 -m venv .ci-venv", ". .ci-venv/bin/activate"]
    # command one in a copy of the checkout (so its ./runcost-demo lands there), command two last
    (first,) = [index for index, line in enumerate(lines) if install in line]
    assert lines[first] == f'(cd "$scratch" && {install})'
    assert lines[-1] == test
    # nothing else installs into the environment before command one but pip itself
    installs = [line for line in lines[fresh:first] if "pip install" in line]
    assert installs == ["python -m pip install --quiet --upgrade pip"]
    copy = next(line for line in lines[fresh:first] if line.startswith("tar "))
    assert copy.endswith('| tar -xf - -C "$scratch"')


def test_ci_run_is_valid_bash_and_stops_at_the_first_failure() -> None:
    subprocess.run(["bash", "-n", str(CI_RUN)], check=True)
    assert "set -euo pipefail" in ci_lines()
    assert "export CI=true" in ci_lines()  # the recipe tests then fail rather than skip
