"""House conventions that keep the project navigable: model headers, CLI help, docs, lint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.dag.models import LAYERS, discover

ROOT = Path(__file__).resolve().parent.parent
MODELS = discover(ROOT / "sql")


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.qualified)
def test_model_file_shape(model) -> None:
    text = model.sql
    assert model.layer in LAYERS
    assert re.fullmatch(r"[a-z][a-z0-9_]*", model.name), "file names are the table names"
    assert model.description and model.description[0].isupper(), "first line says what it is"
    assert model.grain.startswith("one row per"), "state the grain: one row per (...)"
    assert text.rstrip().endswith("select * from final"), "end with `select * from final`"
    assert re.search(r"^final as \($", text, re.MULTILINE), "the last CTE is named final"
    assert "{{" not in text and "{%" not in text, "no templating in models"


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    runner = CliRunner()
    assert main.commands, "the CLI has commands"
    for name, command in main.commands.items():
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert command.help, f"runcost {name} has no help text"
        assert f"runcost {name}" in readme, f"README.md does not document `runcost {name}`"


def test_sql_is_shipped_in_the_wheel() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    force_include = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force_include == {"sql": "pipeline/sql"}
    assert pyproject["project"]["scripts"] == {"runcost": "pipeline.cli:main"}


def test_every_published_mart_is_in_the_data_dictionary() -> None:
    dictionary = (ROOT / "docs" / "data-dictionary.md").read_text(encoding="utf-8")
    for model in MODELS:
        if model.layer in ("marts", "normalized", "allocation"):
            assert f"{model.qualified}" in dictionary, f"{model.qualified} is not documented"


def test_python_is_ruff_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    result = subprocess.run(
        [ruff, "check", "--quiet", str(ROOT)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_sql_is_sqlfluff_clean() -> None:
    sqlfluff = shutil.which("sqlfluff") or str(Path(sys.executable).parent / "sqlfluff")
    result = subprocess.run(
        [sqlfluff, "lint", str(ROOT / "sql"), "--config", str(ROOT / ".sqlfluff")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


# A comment or doc that names the round of work it came from (a session or issue number) tells
# the next engineer nothing: it states the reason and the measured fact instead (history is git's)
_HISTORY = re.compile(r"\b(session|issue)[ -]?#?[0-9]+", re.IGNORECASE)
_HISTORY_TREES = ("pipeline", "sql", "schemas", "docs", "tests", "bench", "fixtures", ".ci")
_TEXT_SUFFIXES = {".py", ".sql", ".md", ".toml", ".txt", ".sh", ".cron", ".service", ".timer", ""}


def test_no_file_names_how_it_was_developed() -> None:
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for tree in _HISTORY_TREES:
        files += [
            path
            for path in (ROOT / tree).rglob("*")
            if path.is_file() and path.suffix in _TEXT_SUFFIXES and "__pycache__" not in path.parts
        ]
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if _HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert found == [], "write the reason and the fact instead:\n" + "\n".join(found)
