"""The scheduling recipes load in the real tools: systemd-analyze, Dagster and Apache Airflow.

Dagster and Airflow pin versions that conflict with runcost's, so each lives in a virtual
environment of its own (side_envs, installed from PyPI on first use). Under CI=true (.ci/run) a
missing systemd-analyze fails its test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from side_envs import AIRFLOW, run_python, side_python

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "scheduling"
DAGSTER = "dagster==1.13.29"


def require(tool: str, package: str) -> str:
    """The path of `tool`; skip without it, except under CI, where the check must run."""
    found = shutil.which(tool)
    if found is None:
        reason = f"{tool} is not installed (Debian: apt-get install {package}; .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must run this check")
        pytest.skip(reason)
    return found


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    analyze = require("systemd-analyze", "systemd")
    # verify needs ExecStart to exist: point it at a copy of the script
    script = tmp_path / "nightly.sh"
    shutil.copy(RECIPES / "nightly.sh", script)
    script.chmod(0o755)
    service = (RECIPES / "runcost-nightly.service").read_text(encoding="utf-8")
    (tmp_path / "runcost-nightly.service").write_text(
        service.replace("/srv/runcost/nightly.sh", str(script)), encoding="utf-8"
    )
    shutil.copy(RECIPES / "runcost-nightly.timer", tmp_path / "runcost-nightly.timer")
    result = subprocess.run(
        [
            analyze,
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


@pytest.mark.parametrize("zone", ["Asia/Kathmandu", "America/New_York", "UTC"])
def test_the_timer_elapses_at_0630_utc_in_any_local_timezone(zone: str) -> None:
    analyze = require("systemd-analyze", "systemd")
    timer = (RECIPES / "runcost-nightly.timer").read_text(encoding="utf-8")
    (calendar,) = [
        line.split("=", 1)[1] for line in timer.splitlines() if line.startswith("OnCalendar=")
    ]
    # from before to after New York's change to daylight-saving time (2027-03-14)
    result = subprocess.run(
        [analyze, "calendar", "--iterations=3", "--base-time=2027-03-13 12:00 UTC", calendar],
        capture_output=True,
        text=True,
        env={**os.environ, "TZ": zone},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    # in a local timezone other than UTC systemd adds an "(in UTC):" line under each elapse
    in_utc = [line.split(": ", 1)[1] for line in lines if line.startswith("(in UTC):")] or [
        line.split(": ", 1)[1] for line in lines if line.startswith(("Next elapse:", "Iter. #"))
    ]
    assert in_utc == [
        "Sun 2027-03-14 06:30:00 UTC",
        "Mon 2027-03-15 06:30:00 UTC",
        "Tue 2027-03-16 06:30:00 UTC",
    ]


@pytest.fixture(scope="module")
def dagster_python() -> Path:
    return side_python("dagster", DAGSTER)


@pytest.mark.slow
def test_dagster_validates_the_definitions(dagster_python: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(dagster_python),
            "-m",
            "dagster",
            "definitions",
            "validate",
            "-f",
            str(RECIPES / "dagster_runcost.py"),
        ],
        capture_output=True,
        text=True,
        env={
            **{key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
            "DAGSTER_HOME": str(tmp_path),
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All code locations passed validation." in done.stdout + done.stderr


DAGSTER_MATERIALIZE = """
import importlib.util, json, sys
from pathlib import Path
import dagster as dg
spec = importlib.util.spec_from_file_location("recipe", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.RUNCOST_HOME = Path(sys.argv[2])
schedule = module.defs.resolve_schedule_def("runcost_nightly")
result = dg.materialize([module.runcost_snapshot], raise_on_error=False)
found = {"success": result.success, "cron": schedule.cron_schedule,
         "timezone": schedule.execution_timezone}
if result.success:
    (materialization,) = result.asset_materializations_for_node("runcost_snapshot")
    found["metadata"] = {key: value.value for key, value in materialization.metadata.items()}
else:
    (failure,) = result.get_step_failure_events()
    user = failure.step_failure_data.user_failure_data
    found["failure"] = user.description
    found["metadata"] = {key: value.value for key, value in user.metadata.items()}
print(json.dumps(found))
"""

RUNCOST_STUB = """#!/bin/sh
echo "runcost $*" >&2
if [ -e fail ]; then echo "error: checks.conservation failed" >&2; exit 1; fi
mkdir -p warehouse
echo '{"run_id": "20270105T063000Z", "snapshot": "snapshots/20270105T063000Z"}' > warehouse/CURRENT
"""


@pytest.mark.slow
@pytest.mark.parametrize("fails", [False, True])
def test_dagster_materializes_the_asset_through_the_script(
    dagster_python: Path, tmp_path: Path, fails: bool
) -> None:
    # /srv/runcost as installed: the real nightly.sh, a runcost that writes what a run publishes
    home = tmp_path / "runcost"
    (home / "venv" / "bin").mkdir(parents=True)
    script = home / "nightly.sh"
    script.write_text(
        (RECIPES / "nightly.sh").read_text(encoding="utf-8").replace("/srv/runcost", str(home)),
        encoding="utf-8",
    )
    (home / "venv" / "bin" / "runcost").write_text(RUNCOST_STUB, encoding="utf-8")
    for path in (script, home / "venv" / "bin" / "runcost"):
        path.chmod(0o755)
    if fails:
        (home / "fail").touch()
    found = json.loads(
        run_python(
            dagster_python,
            DAGSTER_MATERIALIZE,
            str(RECIPES / "dagster_runcost.py"),
            str(home),
            env={"DAGSTER_HOME": str(tmp_path)},
        ).splitlines()[-1]
    )
    schedule = {"cron": "30 6 * * *", "timezone": "UTC"}
    if fails:
        assert found == schedule | {
            "success": False,
            "failure": "runcost run exited 1",
            "metadata": {
                "stderr": "runcost --log-format json run --config runcost.toml\n"
                "error: checks.conservation failed\n"
            },
        }
    else:
        assert found == schedule | {"success": True, "metadata": {"snapshot": "20270105T063000Z"}}


AIRFLOW_IMPORT = """
import json, sys
import pendulum
from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.serialized_objects import DagSerialization
from airflow.timetables.base import TimeRestriction
bag = DagBag(dag_folder=sys.argv[1])
(dag,) = bag.dags.values()
(task,) = dag.tasks
# the DAG as the scheduler holds it, and the next runs it computes
scheduled = DagSerialization.from_dict(DagSerialization.to_dict(dag))
restriction = TimeRestriction(earliest=pendulum.datetime(2027, 3, 13, tz="UTC"), latest=None,
                              catchup=True)
runs, last = [], None
for _ in range(3):
    info = scheduled.timetable.next_dagrun_info(last_automated_data_interval=last,
                                                restriction=restriction)
    runs.append(info.run_after.in_timezone("UTC").isoformat())
    last = info.data_interval
print(json.dumps({"errors": bag.import_errors, "dag": dag.dag_id, "type": type(task).__name__,
                  "command": task.bash_command, "queue": task.queue, "runs": runs,
                  "max_active_runs": dag.max_active_runs, "catchup": dag.catchup}))
"""


@pytest.mark.slow
def test_airflow_imports_the_dag_and_schedules_it_at_0630_utc(tmp_path: Path) -> None:
    python = side_python("airflow", AIRFLOW)
    found = json.loads(
        run_python(
            python,
            AIRFLOW_IMPORT,
            str(RECIPES / "airflow_runcost.py"),
            # an installation whose default timezone is not UTC: the schedule must not follow it
            env={
                "AIRFLOW_HOME": str(tmp_path),
                "AIRFLOW__CORE__DEFAULT_TIMEZONE": "Europe/Paris",
                "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
            },
        ).splitlines()[-1]
    )
    assert found == {
        "errors": {},
        "dag": "runcost_nightly",
        "type": "BashOperator",
        "command": "/srv/runcost/nightly.sh ",
        "queue": "runcost",
        "runs": [
            "2027-03-13T06:30:00+00:00",
            "2027-03-14T06:30:00+00:00",
            "2027-03-15T06:30:00+00:00",
        ],
        "max_active_runs": 1,
        "catchup": False,
    }


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
        ).splitlines()[-1]
    )
    assert found == {
        "type": "BashOperator",
        "ext": [".sh", ".bash"],
        "command": "/srv/runcost/nightly.sh ",
        "dag": "runcost_nightly",
    }
