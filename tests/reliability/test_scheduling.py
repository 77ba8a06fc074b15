"""The scheduling recipes in docs/scheduling parse, call `runcost run`, and are in the docs."""

from __future__ import annotations

import ast
import configparser
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from side_envs import AIRFLOW, run_python, side_python

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "scheduling"
FIELD = r"(\*|\d+(-\d+)?(,\d+(-\d+)?)*)(/\d+)?"
CRON_LINE = re.compile(
    rf"^{FIELD} {FIELD} {FIELD} {FIELD} {FIELD} (?P<user>[a-z_][a-z0-9_-]*) (?P<command>.+)$"
)


def test_every_recipe_is_in_operations_md() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    names = sorted(path.name for path in RECIPES.iterdir())
    assert names == [
        "airflow_runcost.py",
        "dagster_runcost.py",
        "nightly.sh",
        "runcost-nightly.service",
        "runcost-nightly.timer",
        "runcost.cron",
    ]
    for name in names:
        assert f"scheduling/{name}" in operations, f"docs/operations.md does not link {name}"


def test_the_wrapper_script_runs_runcost() -> None:
    script = (RECIPES / "nightly.sh").read_text(encoding="utf-8")
    assert script.startswith("#!/bin/sh\n")
    assert "set -eu" in script
    assert script.rstrip().endswith(
        "exec venv/bin/runcost --log-format json run --config runcost.toml"
    )
    if shutil.which("sh"):
        subprocess.run(["sh", "-n", str(RECIPES / "nightly.sh")], check=True)


def test_cron_line() -> None:
    lines = [
        line
        for line in (RECIPES / "runcost.cron").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#") and "=" not in line.split()[0]
    ]
    (line,) = lines
    match = CRON_LINE.match(line)
    assert match, line
    assert match["user"] == "runcost"
    assert match["command"].startswith("/srv/runcost/nightly.sh >>")


def test_systemd_units(tmp_path: Path) -> None:
    service = (RECIPES / "runcost-nightly.service").read_text(encoding="utf-8")
    timer = (RECIPES / "runcost-nightly.timer").read_text(encoding="utf-8")
    for text, sections in ((service, {"Unit", "Service"}), (timer, {"Unit", "Timer", "Install"})):
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # systemd keys are case-sensitive
        parser.read_string(text)
        assert set(parser.sections()) == sections
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.optionxform = str
    parsed.read_string(service)
    assert parsed["Service"]["Type"] == "oneshot"
    assert parsed["Service"]["ExecStart"] == "/srv/runcost/nightly.sh"
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed; the INI parse above is the check")
    # verify needs ExecStart to exist: point it at a copy of the script
    script = tmp_path / "nightly.sh"
    shutil.copy(RECIPES / "nightly.sh", script)
    script.chmod(0o755)
    (tmp_path / "runcost-nightly.service").write_text(
        service.replace("/srv/runcost/nightly.sh", str(script)), encoding="utf-8"
    )
    (tmp_path / "runcost-nightly.timer").write_text(timer, encoding="utf-8")
    result = subprocess.run(
        [
            "systemd-analyze",
            "verify",
            str(tmp_path / "runcost-nightly.timer"),
            str(tmp_path / "runcost-nightly.service"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr  # unknown keys are warnings: none allowed


def calls(tree: ast.AST) -> dict[str, list[ast.Call]]:
    found: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            found.setdefault(name, []).append(node)
    return found


def test_airflow_dag() -> None:
    source = (RECIPES / "airflow_runcost.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    compile(tree, "airflow_runcost.py", "exec")
    (operator,) = calls(tree)["BashOperator"]
    keywords = {
        item.arg: ast.literal_eval(item.value)
        for item in operator.keywords
        if item.arg in ("task_id", "bash_command")
    }
    assert keywords == {"task_id": "runcost_run", "bash_command": "/srv/runcost/nightly.sh "}
    (dag,) = calls(tree)["DAG"]
    settings = {item.arg: item.value for item in dag.keywords}
    assert ast.literal_eval(settings["schedule"]) == "30 6 * * *"
    assert ast.literal_eval(settings["max_active_runs"]) == 1


def test_dagster_asset() -> None:
    source = (RECIPES / "dagster_runcost.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    compile(tree, "dagster_runcost.py", "exec")
    (function,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [
        ast.unparse(item.func) for item in function.decorator_list if isinstance(item, ast.Call)
    ] == ["dg.asset"]
    (run,) = calls(function)["subprocess.run"]
    assert ast.unparse(run.args[0]) == "[str(RUNCOST_HOME / 'nightly.sh')]"
    assert "dg.Failure" in calls(function)
    (schedule,) = calls(tree)["dg.ScheduleDefinition"]
    settings = {item.arg: ast.unparse(item.value) for item in schedule.keywords}
    assert settings["cron_schedule"] == "'30 6 * * *'"


def test_no_bash_command_ends_in_a_template_extension() -> None:
    # BashOperator loads a command ending in .sh or .bash as a Jinja template file; a trailing
    # space keeps it a command
    for path in RECIPES.glob("*.py"):
        for operator in calls(ast.parse(path.read_text(encoding="utf-8"))).get("BashOperator", []):
            for item in operator.keywords:
                if item.arg == "bash_command":
                    command = ast.literal_eval(item.value)
                    assert not command.endswith((".sh", ".bash")), (path.name, command)


AIRFLOW_RENDER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("recipe", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
(task,) = module.dag.tasks
task.render_template_fields({"ds": "2026-11-01"}, jinja_env=module.dag.get_template_env())
print(json.dumps({"type": type(task).__name__, "ext": list(task.template_ext),
                  "command": task.bash_command, "dag": module.dag.dag_id}))
"""


@pytest.mark.slow
def test_airflow_renders_the_dag_with_the_real_bash_operator(tmp_path: Path) -> None:
    python = side_python("airflow", AIRFLOW)
    found = json.loads(
        run_python(
            python,
            AIRFLOW_RENDER,
            str(RECIPES / "airflow_runcost.py"),
            env={"AIRFLOW_HOME": str(tmp_path)},
        )
    )
    assert found == {
        "type": "BashOperator",
        "ext": [".sh", ".bash"],
        "command": "/srv/runcost/nightly.sh ",
        "dag": "runcost_nightly",
    }


def test_every_night_sets_up_what_the_recipes_use() -> None:
    readme = (RECIPES.parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Every night", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    steps = block.splitlines()

    def first(text: str) -> int:
        return next(index for index, line in enumerate(steps) if text in line)

    # the user, the folders and the environment exist before anything is copied or run
    assert first("useradd --system") < first("install -d -o runcost -g runcost /srv/runcost")
    assert "/var/log/runcost" in steps[first("install -d")]
    assert first("python3 -m venv /srv/runcost/venv") < first("venv/bin/pip install")
    assert first("venv/bin/pip install") < first("nightly.sh /srv/runcost/")
    assert first("runcost.toml /srv/runcost/") < first("enable --now runcost-nightly.timer")
    service = (RECIPES / "runcost-nightly.service").read_text(encoding="utf-8")
    assert "User=runcost" in service and "ExecStart=/srv/runcost/nightly.sh" in service
    assert "exec venv/bin/runcost" in (RECIPES / "nightly.sh").read_text(encoding="utf-8")
