"""The scheduling recipes in docs/scheduling call `runcost run` as the runcost user at 06:30 UTC,
and docs/operations.md shows them as they are. The real schedulers load them in
test_scheduling_tools.py."""

from __future__ import annotations

import ast
import configparser
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, available_timezones

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "scheduling"
OPERATIONS = ROOT / "docs" / "operations.md"
FIELD = r"(\*|\d+(-\d+)?(,\d+(-\d+)?)*)(/\d+)?"
CRON_LINE = re.compile(
    rf"^(?P<minute>{FIELD}) (?P<hour>{FIELD}) (?P<day>{FIELD}) (?P<month>{FIELD}) "
    rf"(?P<weekday>{FIELD}) (?P<user>[a-z_][a-z0-9_-]*) (?P<command>.+)$"
)
FIRST_DAY = datetime(2027, 1, 1, 6, 30, tzinfo=UTC)
UTC_GUARD = '[ "$(date -u +%H%M)" = 0630 ] || exit 0; '


def cron_file() -> tuple[dict[str, str], str]:
    """runcost.cron's environment settings and its one job line."""
    settings: dict[str, str] = {}
    jobs = []
    for line in (RECIPES / "runcost.cron").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if equals and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
            settings[name.strip()] = value.strip()
        else:
            jobs.append(line)
    (job,) = jobs
    return settings, job


def cron_command() -> str:
    """The job's command as cron hands it to /bin/sh: `\\%` unescaped (a bare % ends it)."""
    match = CRON_LINE.match(cron_file()[1])
    assert match, cron_file()[1]
    command = match["command"]
    assert re.search(r"(?<!\\)%", command) is None, "a bare % ends a cron command"
    return command.replace("\\%", "%")


def test_every_recipe_is_in_operations_md() -> None:
    operations = OPERATIONS.read_text(encoding="utf-8")
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


def test_operations_md_shows_the_script_and_the_cron_file_as_they_are() -> None:
    blocks = re.findall(
        r"```(?:sh)?\n(.*?)```",
        OPERATIONS.read_text(encoding="utf-8").split("## Scheduling")[1],
        re.S,
    )

    def without_comments(name: str) -> str:
        lines = (RECIPES / name).read_text(encoding="utf-8").splitlines(keepends=True)
        return "".join(line for line in lines if line[:2] == "#!" or line[:1] != "#")

    assert without_comments("nightly.sh") in blocks
    assert without_comments("runcost.cron") in blocks


def test_the_wrapper_script_runs_runcost() -> None:
    script = (RECIPES / "nightly.sh").read_text(encoding="utf-8")
    assert script.startswith("#!/bin/sh\n")
    assert "set -eu" in script
    assert script.rstrip().endswith(
        "exec venv/bin/runcost --log-format json run --config runcost.toml"
    )
    subprocess.run(["sh", "-n", str(RECIPES / "nightly.sh")], check=True)


def installed_script(home: Path) -> Path:
    """nightly.sh as installed in `home` (for /srv/runcost), with a runcost that records its
    arguments where the virtual environment's would be."""
    script = home / "nightly.sh"
    script.write_text(
        (RECIPES / "nightly.sh").read_text(encoding="utf-8").replace("/srv/runcost", str(home)),
        encoding="utf-8",
    )
    script.chmod(0o755)
    runcost = home / "venv" / "bin" / "runcost"
    runcost.parent.mkdir(parents=True)
    runcost.write_text('#!/bin/sh\necho "$@" > ran-with\n', encoding="utf-8")
    runcost.chmod(0o755)
    return script


def test_the_script_runs_runcost_as_the_owner_of_its_folder(tmp_path: Path) -> None:
    script = installed_script(tmp_path)
    done = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "ran-with").read_text(encoding="utf-8") == (
        "--log-format json run --config runcost.toml\n"
    )


def test_the_script_refuses_any_other_user(tmp_path: Path) -> None:
    script = installed_script(tmp_path)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "id").write_text("#!/bin/sh\necho airflow\n", encoding="utf-8")
    (stubs / "id").chmod(0o755)
    owner = subprocess.run(
        ["stat", "-c", "%U", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    done = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"},
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"nightly.sh: running as airflow, but {tmp_path} belongs to {owner}; run the scheduler's "
        f"job as {owner} (cron's user field, User= in the systemd unit, the user of the Airflow "
        "worker or Dagster daemon)\n"
    )
    assert not (tmp_path / "ran-with").exists()


def test_each_recipe_says_which_user_runs_it() -> None:
    for name in ("airflow_runcost.py", "dagster_runcost.py"):
        docstring = ast.get_docstring(ast.parse((RECIPES / name).read_text(encoding="utf-8")))
        assert docstring is not None
        assert "\nRuns as: " in docstring, name
        assert "`runcost`, the owner of /srv/runcost" in " ".join(docstring.split()), name
    service = (RECIPES / "runcost-nightly.service").read_text(encoding="utf-8")
    assert "\nUser=runcost\nGroup=runcost\n" in service
    assert CRON_LINE.match(cron_file()[1])["user"] == "runcost"  # type: ignore[index]
    assert "as the runcost user" in (RECIPES / "runcost.cron").read_text(encoding="utf-8")


def test_cron_line() -> None:
    match = CRON_LINE.match(cron_file()[1])
    assert match, cron_file()[1]
    assert [match[field] for field in ("minute", "hour", "day", "month", "weekday")] == [
        "*/15", "*", "*", "*", "*",
    ]  # fmt: skip
    assert cron_command() == (
        f"{UTC_GUARD}/srv/runcost/nightly.sh >>/var/log/runcost/nightly.log 2>&1 "
        '|| echo "runcost nightly failed (exit $?); see /var/log/runcost/nightly.log"'
    )


def test_cron_sets_no_timezone_debian_cron_would_ignore() -> None:
    # Debian's cron (3.0pl1) runs every line on the system's clock: CRON_TZ is not read, and TZ
    # only reaches the command's environment (its FEATURES file and cron(8))
    settings, _ = cron_file()
    assert settings == {"MAILTO": "finops-oncall@example.com"}


def test_every_timezone_has_a_quarter_hour_at_0630_utc() -> None:
    # the line fires at local minutes 0, 15, 30 and 45: 06:30 UTC must be one of them every day,
    # in every timezone and across its daylight-saving changes
    minutes = {0, 15, 30, 45}
    misses = []
    for name in sorted(available_timezones()):
        zone = ZoneInfo(name)
        for day in range(365):
            local = (FIRST_DAY + timedelta(days=day)).astimezone(zone)
            if local.minute not in minutes:
                misses.append(f"{name}: 06:30 UTC is {local:%H:%M} local on {local:%Y-%m-%d}")
    assert misses == []


@pytest.mark.parametrize(
    ("zone", "now", "fails", "runs", "mail"),
    [
        # 06:30 UTC is 12:15 in Kathmandu (+05:45) and 01:30 in New York (EST)
        ("Asia/Kathmandu", "2027-01-05 06:30:00", False, True, ""),
        ("Asia/Kathmandu", "2027-01-05 00:45:00", False, False, ""),  # 06:30 local
        ("America/New_York", "2027-01-05 06:30:04", False, True, ""),
        ("America/New_York", "2027-01-05 11:30:00", False, False, ""),  # 06:30 local
        ("America/New_York", "2027-01-05 06:30:00", True, True, "runcost nightly failed (exit 1)"),
        ("UTC", "2027-01-05 06:15:00", False, False, ""),
    ],
)
def test_the_cron_command_runs_the_script_only_at_0630_utc(
    tmp_path: Path, zone: str, now: str, fails: bool, runs: bool, mail: str
) -> None:
    script = tmp_path / "nightly.sh"
    script.write_text(
        f"#!/bin/sh\necho ran >> {tmp_path}/ran\necho 'a line of the log'\nexit {int(fails)}\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    epoch = int(datetime.fromisoformat(now).replace(tzinfo=UTC).timestamp())
    (stubs / "date").write_text(
        f'#!/bin/sh\nexec {shutil.which("date")} -d @{epoch} "$@"\n', encoding="utf-8"
    )
    (stubs / "date").chmod(0o755)
    command = cron_command().replace("/srv/runcost/nightly.sh", str(script))
    command = command.replace("/var/log/runcost", str(tmp_path))
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        env={"PATH": f"{stubs}:/usr/bin:/bin", "TZ": zone, "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0
    assert (tmp_path / "ran").exists() == runs
    # cron mails whatever the command prints: nothing, or the one failure line
    expected_mail = f"{mail}; see {tmp_path}/nightly.log\n" if mail else ""
    assert (done.stdout + done.stderr) == expected_mail
    if runs:
        assert (tmp_path / "nightly.log").read_text(encoding="utf-8") == "a line of the log\n"


def test_systemd_units() -> None:
    service = (RECIPES / "runcost-nightly.service").read_text(encoding="utf-8")
    timer = (RECIPES / "runcost-nightly.timer").read_text(encoding="utf-8")
    for text, sections in ((service, {"Unit", "Service"}), (timer, {"Unit", "Timer", "Install"})):
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
        parser.read_string(text)
        assert set(parser.sections()) == sections
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.optionxform = str  # type: ignore[assignment,method-assign]
    parsed.read_string(service)
    assert parsed["Service"]["Type"] == "oneshot"
    assert parsed["Service"]["ExecStart"] == "/srv/runcost/nightly.sh"
    parsed.read_string(timer)
    assert parsed["Timer"]["OnCalendar"] == "*-*-* 06:30:00 UTC"


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
        if item.arg in ("task_id", "bash_command", "queue")
    }
    assert keywords == {
        "task_id": "runcost_run",
        "bash_command": "/srv/runcost/nightly.sh ",
        "queue": "runcost",
    }
    (dag,) = calls(tree)["DAG"]
    settings = {item.arg: item.value for item in dag.keywords}
    assert ast.unparse(settings["schedule"]) == "CronTriggerTimetable('30 6 * * *', timezone='UTC')"
    assert ast.literal_eval(settings["max_active_runs"]) == 1


def test_dagster_asset() -> None:
    source = (RECIPES / "dagster_runcost.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    compile(tree, "dagster_runcost.py", "exec")
    # Dagster checks the context annotation at definition time: it must not be a string
    assert not [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "__future__"
    ]
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
    assert settings["execution_timezone"] == "'UTC'"


def test_no_bash_command_ends_in_a_template_extension() -> None:
    # BashOperator loads a command ending in .sh or .bash as a Jinja template file; a trailing
    # space keeps it a command
    for path in RECIPES.glob("*.py"):
        for operator in calls(ast.parse(path.read_text(encoding="utf-8"))).get("BashOperator", []):
            for item in operator.keywords:
                if item.arg == "bash_command":
                    command = ast.literal_eval(item.value)
                    assert not command.endswith((".sh", ".bash")), (path.name, command)


def test_every_night_sets_up_what_the_recipes_use() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
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
