"""MLflow over REST: runs logged by the real MLflow client to a real `mlflow server` on 127.0.0.1,
read back page by page; the same server's SQLite store read directly gives the same attempts."""

from __future__ import annotations

import base64
import datetime as dt
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow_server import MlflowServer, free_port, mlflow_server

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import read

pytest.importorskip("mlflow", reason="the mlflow extra: pip install -e '.[mlflow]'")

UTC = dt.UTC
T0 = 1_790_000_000_000  # 2026-09-21T14:13:20Z in epoch ms
MINUTE = 60_000


def at(minutes: float) -> dt.datetime:
    return dt.datetime(2026, 9, 21, 14, 13, 20, tzinfo=UTC) + dt.timedelta(minutes=minutes)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MlflowServer, dict]]:
    """A server holding two configured experiments and one other; run ids by name."""
    from mlflow.tracking import MlflowClient

    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as running:
        client = MlflowClient(tracking_uri=running.url)
        llm = client.create_experiment("llm-pretrain")
        sweep = client.create_experiment("resnet-sweep")
        other = client.create_experiment("notebooks")
        ids: dict[str, str] = {}

        def run(name: str, experiment: str, start: int, tags: dict[str, str]) -> str:
            created = client.create_run(
                experiment, start_time=T0 + start * MINUTE, tags=tags, run_name=name
            )
            ids[name] = created.info.run_id
            return created.info.run_id

        # the first attempt fails (NCCL timeout) after 50 minutes; its retry resumes it
        first = run("first", llm, 0, {"user_attempt_id": "llm-a1", "instance_id": "i-0aaa"})
        client.log_param(first, "gpu_count", "8")
        client.log_param(first, "instance_type", "p5.48xlarge")
        client.log_metric(first, "val_loss", 2.5, timestamp=T0 + 10 * MINUTE, step=100)
        client.log_metric(first, "val_loss", 2.1, timestamp=T0 + 40 * MINUTE, step=400)
        client.set_terminated(first, "FAILED", end_time=T0 + 50 * MINUTE)
        retry = run(
            "retry",
            llm,
            55,
            {"user_attempt_id": "llm-a2", "mlflow.parentRunId": first, "instance_id": "i-0bbb"},
        )
        client.log_param(retry, "gpu_count", "8")
        client.log_metric(retry, "val_loss", 1.9, timestamp=T0 + 90 * MINUTE, step=900)
        client.log_metric(retry, "val_loss", 1.7, timestamp=T0 + 80 * MINUTE, step=1000)
        client.set_terminated(retry, "FINISHED", end_time=T0 + 120 * MINUTE)
        # a run killed and then deleted in the UI: it still cost money
        killed = run("killed", llm, 130, {"user_attempt_id": "llm-a3"})
        client.set_terminated(killed, "KILLED", end_time=T0 + 135 * MINUTE)
        client.delete_run(killed)
        run("live", llm, 140, {"user_attempt_id": "llm-a4"})  # still running
        for n in range(2):
            trial = run(f"trial{n}", sweep, 10 + n, {"user_attempt_id": f"sweep-{n}"})
            client.log_metric(trial, "val_loss", 0.5 + n, timestamp=T0, step=1)
            client.set_terminated(trial, "FINISHED", end_time=T0 + (20 + n) * MINUTE)
        run("scratch", other, 0, {"user_attempt_id": "nb-1"})  # not a configured experiment
        # a sweep: the parent runs from minute 0 to 60, its trials inside it; one trial timed
        # out, one was interrupted (spot) and resumed by a run nested under it
        hpo = client.create_experiment("hpo")
        sweep = run("sweep", hpo, 0, {})
        for n, (status, reason) in enumerate((("FAILED", "timeout"), ("KILLED", "interrupted"))):
            trial = run(f"hpo{n}", hpo, 1 + n, {"mlflow.parentRunId": sweep, "end_reason": reason})
            client.log_param(trial, "volume_ids", [f"vol-0{n}a", f"vol-0{n}b"])
            client.set_tag(trial, "instance_id", f"i-0{n}f")
            client.log_param(trial, "checkpoint_uri", f"s3://ckpt/hpo{n}/")
            client.set_terminated(trial, status, end_time=T0 + (10 + n) * MINUTE)
        resumed = run("hpo1-resumed", hpo, 12, {"mlflow.parentRunId": ids["hpo1"]})
        client.set_terminated(resumed, "FINISHED", end_time=T0 + 40 * MINUTE)
        client.set_terminated(sweep, "FINISHED", end_time=T0 + 60 * MINUTE)
        yield running, ids


def source(url: str, **options: Any) -> dict[str, object]:
    defaults = {
        "tracking_uri": url,
        "experiments": ["llm-pretrain", "resnet-sweep"],
        "attempt_id_tag": "user_attempt_id",
        "experiment_id_from": "name",
        "metric": "val_loss",
        "page_size": 2,  # 6 runs: three pages through next_page_token
    }
    return {"kind": "mlflow", "path": None, "options": {**defaults, **options}}


def test_runs_are_read_over_rest_page_by_page_and_match_the_sqlite_store(
    server: tuple[MlflowServer, dict],
) -> None:
    running, ids = server
    tables = read(source(running.url), "mlflow server")
    attempts = {row["attempt_id"]: row for row in tables["attempts"].to_pylist()}
    assert sorted(attempts) == ["llm-a1", "llm-a2", "llm-a3", "llm-a4", "sweep-0", "sweep-1"]
    first, retry = attempts["llm-a1"], attempts["llm-a2"]
    assert (first["status"], first["started_at"], first["ended_at"]) == ("failed", at(0), at(50))
    assert (first["gpu_count"], first["instance_type"]) == (8, "p5.48xlarge")
    assert (first["metric_name"], first["metric_value"]) == ("val_loss", pytest.approx(2.1))
    assert first["experiment_id"] == "llm-pretrain"
    assert (retry["status"], retry["parent_attempt_id"]) == ("succeeded", "llm-a1")
    # latest = highest step, whatever the timestamp
    assert retry["metric_value"] == pytest.approx(1.7)
    assert attempts["llm-a3"]["status"] == "cancelled"
    assert dict(attempts["llm-a3"]["tags"])["mlflow_lifecycle_stage"] == "deleted"
    assert (attempts["llm-a4"]["status"], attempts["llm-a4"]["ended_at"]) == ("running", None)
    assert dict(first["tags"])["source_native_id"] == ids["first"]
    assert attempts["sweep-1"]["experiment_id"] == "resnet-sweep"
    resources = sorted(
        (r["attempt_id"], r["resource_id"], r["started_at"], r["ended_at"])
        for r in tables["attempt_resources"].to_pylist()
    )
    assert resources == [
        ("llm-a1", "i-0aaa", at(0), at(50)),
        ("llm-a2", "i-0bbb", at(55), at(120)),
    ]
    # the server's own SQLite store, read directly, gives the same rows for these experiments
    direct = read(
        {
            "kind": "mlflow",
            "path": running.store,
            "options": {"attempt_id_tag": "user_attempt_id", "experiment_id_from": "name"}
            | {"metric": "val_loss"},
        },
        "mlflow store",
    )["attempts"].to_pylist()
    same = sorted((r for r in direct if r["attempt_id"] in attempts), key=lambda r: r["attempt_id"])
    assert same == sorted(attempts.values(), key=lambda r: r["attempt_id"])
    hpo = {f"mlflow:{ids[name]}" for name in ("hpo0", "hpo1", "hpo1-resumed")}  # no sweep
    assert {r["attempt_id"] for r in direct} - set(attempts) == {"nb-1"} | hpo


def test_started_after_reads_only_later_runs(server: tuple[MlflowServer, dict]) -> None:
    running, _ = server
    later = read(source(running.url, started_after="2026-09-21T15:00:00Z"), "m")["attempts"]
    assert sorted(later.column("attempt_id").to_pylist()) == ["llm-a2", "llm-a3", "llm-a4"]


def test_unknown_experiment_and_bad_run_are_named(server: tuple[MlflowServer, dict]) -> None:
    running, ids = server
    with pytest.raises(InputError) as raised:
        read(source(running.url, experiments=["llm-pretrain", "llm-pretrian"]), "src")
    assert str(raised.value) == (
        f"src: {running.url}: experiment 'llm-pretrian' not found (RESOURCE_DOES_NOT_EXIST); "
        "check options.experiments against the experiment names in the MLflow UI"
    )
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=running.url)
    for key, value, problem in (
        (
            "user_attempt_id",
            "sweep-0",
            f"attempt id 'sweep-0' (tag user_attempt_id) is also on run {ids['trial0']}",
        ),
        ("gpu_count", "eight", "tag gpu_count 'eight' is not a whole number"),
    ):
        client.set_tag(ids["trial1"], key, value)
        try:
            with pytest.raises(InputError) as raised:
                read(source(running.url), "src")
        finally:
            if key == "user_attempt_id":
                client.set_tag(ids["trial1"], key, "sweep-1")
            else:
                client.delete_tag(ids["trial1"], key)
        where = f"src: {running.url}: experiment resnet-sweep: run {ids['trial1']}: "
        assert str(raised.value).startswith(where + problem)


def test_unreachable_server_and_secrets_in_config_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setattr("pipeline.common.http.RETRY_SECONDS", 0.01)
    with pytest.raises(InputError) as raised:
        read(source(url), "src")
    assert str(raised.value).startswith(f"src: {url}: cannot reach the MLflow tracking server (")
    assert (
        f"after 3 tries; check options.tracking_uri and that the server answers {url}/health"
        in (str(raised.value))
    )
    with pytest.raises(InputError, match=r"options.token would put a secret in runcost.toml"):
        read(source(url, token="dapi123"), "src")
    monkeypatch.delenv("RUNCOST_TEST_MLFLOW_TOKEN", raising=False)
    with pytest.raises(
        InputError, match=r"token_env names RUNCOST_TEST_MLFLOW_TOKEN, which is not"
    ):
        read(source(url, token_env="RUNCOST_TEST_MLFLOW_TOKEN"), "src")
    with pytest.raises(InputError, match=r"needs options.experiments = \[\"name\", ...\]"):
        read(source(url, experiments=[]), "src")
    with pytest.raises(InputError, match=r"tracking_uri 'databricks' is not an http\(s\) URL"):
        read(source("databricks"), "src")


ADMIN = ("admin", "admin-password-1234")
READER = ("runcost", "reader-password-5678")
OUTSIDER = ("outsider", "outsider-password-9012")


def _as_admin(url: str, endpoint: str, payload: dict[str, str]) -> None:
    """POST one call of MLflow's auth REST API (`<version>/mlflow/...`) as the admin."""
    pair = base64.b64encode(":".join(ADMIN).encode()).decode()
    request = urllib.request.Request(
        f"{url}/api/{endpoint}",
        json.dumps(payload).encode(),
        {"Content-Type": "application/json", "Authorization": f"Basic {pair}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """`mlflow server --app-name basic-auth`: experiment `secured` with one finished run; user
    runcost reads it (default permission READ), user outsider may not."""
    from mlflow.tracking import MlflowClient

    with (
        mlflow_server(tmp_path_factory.mktemp("mlflow-auth"), admin=ADMIN) as running,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv("MLFLOW_TRACKING_USERNAME", ADMIN[0])
        env.setenv("MLFLOW_TRACKING_PASSWORD", ADMIN[1])
        client = MlflowClient(tracking_uri=running.url)
        secured = client.create_experiment("secured")
        run = client.create_run(secured, start_time=T0, tags={"user_attempt_id": "sec-1"})
        client.set_terminated(run.info.run_id, "FINISHED", end_time=T0 + MINUTE)
        for user, password in (READER, OUTSIDER):
            create = {"username": user, "password": password}
            _as_admin(running.url, "2.0/mlflow/users/create", create)
        _as_admin(
            running.url,
            "3.0/mlflow/users/permissions/grant",
            {
                "username": OUTSIDER[0],
                "resource_type": "experiment",
                "resource_id": secured,
                "permission": "DENY",
            },
        )
        yield running


@pytest.fixture
def no_mlflow_credentials(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def secured(url: str, **options: Any) -> dict[str, object]:
    return source(url, experiments=["secured"], **options)


def test_basic_auth_user_and_password_from_mlflows_variables_or_named_ones(
    auth_server: MlflowServer, no_mlflow_credentials: pytest.MonkeyPatch
) -> None:
    env = no_mlflow_credentials
    env.setenv("MLFLOW_TRACKING_USERNAME", READER[0])
    env.setenv("MLFLOW_TRACKING_PASSWORD", READER[1])
    env.setenv("MLFLOW_TRACKING_TOKEN", "a-bearer-token")  # as in MLflow: basic auth wins
    attempts = read(secured(auth_server.url), "m")["attempts"].to_pylist()
    assert [(a["attempt_id"], a["status"], a["ended_at"]) for a in attempts] == [
        ("sec-1", "succeeded", at(1))
    ]
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        env.delenv(name)
    env.setenv("RC_MLFLOW_USER", READER[0])
    env.setenv("RC_MLFLOW_PASSWORD", READER[1])
    named = secured(
        auth_server.url, username_env="RC_MLFLOW_USER", password_env="RC_MLFLOW_PASSWORD"
    )
    assert read(named, "m")["attempts"].column("attempt_id").to_pylist() == ["sec-1"]


def test_basic_auth_refusals_name_the_source_and_the_fix(
    auth_server: MlflowServer, no_mlflow_credentials: pytest.MonkeyPatch
) -> None:
    env, url = no_mlflow_credentials, auth_server.url

    def message(**options: Any) -> str:
        with pytest.raises(InputError) as raised:
            read(secured(url, **options), "telemetry.sources[1] (mlflow)")
        assert "\n" not in str(raised.value)  # the CLI prints it as one error: line
        return str(raised.value)

    where = f"telemetry.sources[1] (mlflow): {url}: HTTP 401 reading experiment 'secured': "
    fix = (
        "export MLFLOW_TRACKING_USERNAME=<user> and MLFLOW_TRACKING_PASSWORD=<password> where "
        "runcost runs (a user with READ on the experiments), or set options.username_env and "
        "options.password_env to the variables that hold them"
    )
    env.setenv("MLFLOW_TRACKING_USERNAME", READER[0])
    env.setenv("MLFLOW_TRACKING_PASSWORD", "not-the-password")
    assert message() == (
        where + "the server refused user 'runcost' with the password in "
        "MLFLOW_TRACKING_PASSWORD; " + fix
    )
    assert "not-the-password" not in message()
    env.setenv("MLFLOW_TRACKING_PASSWORD", OUTSIDER[1])
    env.setenv("MLFLOW_TRACKING_USERNAME", OUTSIDER[0])
    assert message() == (
        f"telemetry.sources[1] (mlflow): {url}: HTTP 403 reading experiment 'secured': user "
        "'outsider' may not read it; grant user 'outsider' READ on the experiment (MLflow basic "
        "auth; CAN_READ on Databricks), or use an identity that has it"
    )
    env.delenv("MLFLOW_TRACKING_PASSWORD")
    assert message() == (
        "telemetry.sources[1] (mlflow): MLFLOW_TRACKING_USERNAME is set but "
        "MLFLOW_TRACKING_PASSWORD is not; MLflow basic auth needs both: " + fix
    )
    env.setenv("MLFLOW_TRACKING_TOKEN", "a-bearer-token")  # half a pair and a token: the token
    assert message().startswith(where + "the server asks for a user and password")
    env.delenv("MLFLOW_TRACKING_TOKEN")
    env.delenv("MLFLOW_TRACKING_USERNAME")
    basic = (
        "the server asks for a user and password (MLflow basic auth), {}; export "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD where runcost runs (a user with "
        "READ on the experiments), or set options.username_env and options.password_env to the "
        "variables that hold them"
    )
    assert message() == where + basic.format("none was sent")
    env.setenv("MLFLOW_TRACKING_TOKEN", "a-bearer-token")
    assert message() == where + basic.format("not the token in MLFLOW_TRACKING_TOKEN")
    assert message(username_env="RC_NOT_SET", password_env="RC_NOT_SET_EITHER") == (
        "telemetry.sources[1] (mlflow): options.username_env / password_env name RC_NOT_SET "
        "and RC_NOT_SET_EITHER, not set in the environment; export RC_NOT_SET=<user> and "
        "RC_NOT_SET_EITHER=<password> where runcost runs (a user with READ on the experiments)"
    )
    with pytest.raises(InputError, match=r"options.password would put a secret in runcost"):
        read(secured(url, password=READER[1]), "src")


def test_a_wrong_path_says_the_url_and_how_to_fix_it(server: tuple[MlflowServer, dict]) -> None:
    running, _ = server
    with pytest.raises(InputError) as raised:
        read(source(f"{running.url}/mlflow/"), "src")
    assert str(raised.value) == (
        f"src: {running.url}/mlflow/api/2.0/mlflow/experiments/get-by-name: HTTP 404 Not "
        "Found: no MLflow REST API at this URL, so the path of options.tracking_uri "
        f"'{running.url}/mlflow' is wrong; set it to the address the MLflow client uses as "
        "MLFLOW_TRACKING_URI (scheme, host, port, and the server's --static-prefix if it has "
        "one), without /api/2.0/mlflow or a UI page"
    )


def test_a_sweep_parent_groups_its_trials_over_rest(server: tuple[MlflowServer, dict]) -> None:
    """The sweep parent is no attempt; trials resume nothing, their statuses come from
    end_reason, every resource they name is held; a nested run after its trial ended resumes it.
    The window leaves the parent out: runcost looks it up (runs/get) to tell trials from retries."""
    running, ids = server
    options = {"experiments": ["hpo"], "attempt_id_tag": None}
    resource_tags = ["instance_id", "volume_ids", "checkpoint_uri"]
    for started_after in (None, "2026-09-21T14:14:00Z"):  # the sweep started at 14:13:20
        tables = read(
            source(
                running.url, **options, started_after=started_after, resource_tags=resource_tags
            ),
            "m",
        )
        native = {
            dict(row["tags"])["source_native_id"]: row for row in tables["attempts"].to_pylist()
        }
        assert sorted(native) == sorted([ids["hpo0"], ids["hpo1"], ids["hpo1-resumed"]])
        timed_out, interrupted = native[ids["hpo0"]], native[ids["hpo1"]]
        resumed = native[ids["hpo1-resumed"]]
        assert (timed_out["status"], timed_out["parent_attempt_id"]) == ("timeout", None)
        assert (interrupted["status"], interrupted["parent_attempt_id"]) == ("interrupted", None)
        assert resumed["parent_attempt_id"] == f"mlflow:{ids['hpo1']}"
        assert dict(timed_out["tags"])["parent_run_id"] == ids["sweep"]
        assert dict(timed_out["tags"])["parent_run_name"] == "sweep"
        held = sorted(
            (row["attempt_id"], row["resource_id"], row["resource_kind"])
            for row in tables["attempt_resources"].to_pylist()
        )
        first = f"mlflow:{ids['hpo0']}"
        assert [h for h in held if h[0] == first] == sorted(
            [
                (first, "ckpt", "s3_bucket"),
                (first, "i-00f", "ec2_instance"),
                (first, "vol-00a", "ebs_volume"),
                (first, "vol-00b", "ebs_volume"),
            ]
        )
        assert len(held) == 8
