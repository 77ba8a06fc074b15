"""MLflow runs -> canonical attempts: ids, statuses, nesting, resources, credentials, errors."""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from pathlib import Path

import pytest
from mlflow_store import VERSION, empty_store

from pipeline.common.errors import InputError
from pipeline.telemetry import mlflow
from pipeline.telemetry.adapters import arrow_schema, read
from pipeline.telemetry.mlflow_rest import credentials

UTC = dt.UTC
T0 = 1_790_000_000_000  # 2026-09-21T14:13:20Z in epoch ms


def at(minutes: float) -> dt.datetime:
    return dt.datetime(2026, 9, 21, 14, 13, 20, tzinfo=UTC) + dt.timedelta(minutes=minutes)


def store(
    path: Path,
    runs: list[tuple],
    tags: list[tuple] = (),  # type: ignore[assignment]
    metrics: list[tuple] = (),  # type: ignore[assignment]
    params: list[tuple] = (),  # type: ignore[assignment]
    version: str | None = VERSION,
) -> Path:
    """runs: (run_uuid, status, start ms, end ms, experiment_id); tags: (run, key, value)."""
    con = empty_store(path, version)
    con.execute("insert into experiments (experiment_id, name) values (1, 'resnet-sweep')")
    con.execute("insert into experiments (experiment_id, name) values (2, 'llm-pretrain')")
    con.executemany(
        "insert into runs (run_uuid, status, start_time, end_time, experiment_id, "
        "lifecycle_stage, artifact_uri) values (?, ?, ?, ?, ?, 'active', 's3://a/' || ?)",
        [(*run, run[0]) for run in runs],
    )
    con.executemany("insert into tags (run_uuid, key, value) values (?, ?, ?)", tags)
    con.executemany("insert into params (run_uuid, key, value) values (?, ?, ?)", params)
    con.executemany(
        "insert into metrics (run_uuid, key, value, timestamp, step, is_nan) "
        "values (?, ?, ?, ?, ?, ?)",
        metrics,
    )
    con.commit()
    con.close()
    return path


def source(path: Path, **options: object) -> dict[str, object]:
    return {"kind": "mlflow", "path": path, "options": options}


def rows(path: Path, **options: object) -> list[dict]:
    return read(source(path, **options), "mlflow test")["attempts"].to_pylist()


def error(path: Path, **options: object) -> str:
    with pytest.raises(InputError) as raised:
        read(source(path, **options), "src")
    return str(raised.value)


def test_runs_become_attempts_with_utc_times_parent_metric_and_source_tags(
    tmp_path: Path,
) -> None:
    path = store(
        tmp_path / "mlflow.db",
        runs=[
            ("r1", "FINISHED", T0, T0 + 90 * 60_000, 1),
            ("r2", "RUNNING", T0 + 95 * 60_000, None, 1),  # resumes r1, after it ended
        ],
        tags=[
            ("r2", "mlflow.parentRunId", "r1"),
            ("r1", "mlflow.runName", "bold-owl"),
            ("r1", "gpu_count", "8"),
            ("r1", "instance_type", "p5.48xlarge"),
        ],
        params=[("r1", "dataset_snapshot", "ds-7")],
        metrics=[
            ("r1", "val_acc", 0.5, T0 + 1000, 1, 0),
            ("r1", "val_acc", 0.9, T0 + 2000, 3, 0),
            ("r1", "val_acc", 0.7, T0 + 9000, 2, 0),  # later timestamp, lower step: not last
        ],
    )
    tables = read(source(path, metric="val_acc"), "label")
    assert tables["attempts"].schema == arrow_schema("attempts")
    first, second = tables["attempts"].to_pylist()
    assert first["attempt_id"] == "mlflow:r1"
    assert first["experiment_id"] == "1"
    assert first["status"] == "succeeded"
    assert first["started_at"] == at(0)
    assert first["ended_at"] == at(90)
    assert first["metric_name"] == "val_acc"
    assert first["metric_value"] == pytest.approx(0.9)
    assert first["gpu_count"] == 8
    assert first["instance_type"] == "p5.48xlarge"
    assert first["dataset_snapshot"] == "ds-7"
    assert first["artifact_uri"] == "s3://a/r1"
    assert dict(first["tags"]) == {
        "source": "mlflow",
        "source_native_id": "r1",
        "run_name": "bold-owl",
    }
    assert second["attempt_id"] == "mlflow:r2"
    assert second["parent_attempt_id"] == "mlflow:r1"
    assert second["status"] == "running"
    assert second["ended_at"] is None
    assert second["metric_name"] is None
    assert tables["attempt_resources"].num_rows == 0


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("FINISHED", "succeeded"),
        ("FAILED", "failed"),
        ("KILLED", "cancelled"),
        ("RUNNING", "running"),
        ("SCHEDULED", "running"),
    ],
)
def test_statuses_map(tmp_path: Path, raw: str, status: str) -> None:
    path = store(tmp_path / "m.db", runs=[("r1", raw, T0, None, 1)])
    assert rows(path)[0]["status"] == status


def test_unknown_status_is_kept_as_unknown_with_raw_value_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = store(tmp_path / "m.db", runs=[("r1", "PAUSED", T0, None, 1)])
    with caplog.at_level(logging.WARNING, logger="runcost"):
        (row,) = rows(path)
    assert row["status"] == "unknown"
    assert dict(row["tags"])["raw_status"] == "PAUSED"
    assert "1 attempt(s) with a status runcost does not know" in caplog.text
    assert "'PAUSED' x1" in caplog.text


def test_configured_id_tags_win_and_fall_back_to_prefixed_run_id(tmp_path: Path) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[
            ("r1", "FAILED", T0, T0 + 1, 2),
            ("r2", "FINISHED", T0 + 1, T0 + 2, 2),
            ("r3", "FINISHED", T0 + 5, T0 + 6, 2),
        ],
        tags=[
            ("r1", "user_attempt_id", "att-42"),
            ("r1", "user_experiment_id", "exp-9"),
            ("r2", "mlflow.parentRunId", "r1"),
            ("r2", "instance_id", "i-0abc"),
        ],
    )
    found = read(
        source(
            path,
            attempt_id_tag="user_attempt_id",
            experiment_id_tag="user_experiment_id",
            experiment_id_from="name",
        ),
        "src",
    )
    first, second, third = found["attempts"].to_pylist()
    assert (first["attempt_id"], first["experiment_id"]) == ("att-42", "exp-9")
    # a retry without the tag takes the experiment of the run it resumes
    assert (second["attempt_id"], second["experiment_id"]) == ("mlflow:r2", "exp-9")
    assert second["parent_attempt_id"] == "att-42"
    assert (third["attempt_id"], third["experiment_id"]) == ("mlflow:r3", "llm-pretrain")
    (resource,) = found["attempt_resources"].to_pylist()
    assert resource["attempt_id"] == "mlflow:r2"
    assert resource["resource_id"] == "i-0abc"
    assert (resource["started_at"], resource["ended_at"]) == (
        at(0) + dt.timedelta(0, 0, 1000),
        at(0) + dt.timedelta(0, 0, 2000),
    )
    assert resource["resource_kind"] == "ec2_instance"


def test_sqlite_url_and_empty_prefix(tmp_path: Path) -> None:
    path = store(tmp_path / "m.db", runs=[("r1", "FINISHED", T0, T0, 1)])
    assert rows(f"sqlite:///{path}", id_prefix="")  # type: ignore[arg-type][0]["attempt_id"] == "r1"


def test_nan_metric_is_null(tmp_path: Path) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[("r1", "FAILED", T0, T0, 1)],
        metrics=[("r1", "loss", 0.0, T0, 5, 1)],
    )
    row = rows(path, metric="loss")[0]
    assert (row["metric_name"], row["metric_value"]) == ("loss", None)


def test_newer_schema_version_is_read_when_the_columns_are_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = store(tmp_path / "m.db", runs=[("r1", "FINISHED", T0, T0 + 60_000, 1)], version="9f8e")
    with sqlite3.connect(path) as con:  # what a later migration might add
        con.execute("alter table runs add column workspace varchar(63)")
        con.execute("create table run_links (run_uuid varchar(32), url varchar(500))")
    with caplog.at_level(logging.INFO, logger="runcost"):
        (row,) = rows(path)
    assert (row["attempt_id"], row["ended_at"]) == ("mlflow:r1", at(1))
    assert "schema version 9f8e, not one runcost was checked on" in caplog.text
    assert rows(path, accept_schema_version="9f8e")[0]["attempt_id"] == "mlflow:r1"


def test_store_without_alembic_version_is_read_when_the_columns_are_there(tmp_path: Path) -> None:
    path = store(tmp_path / "m.db", runs=[("r1", "FAILED", T0, T0, 1)], version=None)
    assert rows(path)[0]["status"] == "failed"


def test_store_lacking_a_read_column_is_refused_naming_it(tmp_path: Path) -> None:
    path = store(tmp_path / "m.db", runs=[], version="9f8e")
    with sqlite3.connect(path) as con:
        con.execute("alter table runs drop column end_time")
        con.execute("alter table metrics drop column is_nan")
    message = error(path)
    assert message.startswith(
        f"src: {path}: column runs.end_time is missing (schema version 9f8e); "
    )
    assert "runs(run_uuid, status, start_time, end_time" in message
    with sqlite3.connect(path) as con:
        con.execute("alter table runs add column end_time bigint")
    assert f"{path}: column metrics.is_nan is missing" in error(path)
    with sqlite3.connect(path) as con:
        con.execute("drop table tags")
    assert f"{path}: table tags is missing" in error(path)


def test_server_options_without_a_server_and_both_kinds_are_refused(tmp_path: Path) -> None:
    path = store(tmp_path / "m.db", runs=[])
    assert "option(s) experiments need options.tracking_uri" in error(path, experiments=["x"])
    both = error(path, tracking_uri="http://127.0.0.1:1", experiments=["x"])
    assert "set either path (an SQLite store) or options.tracking_uri" in both
    assert "read a tracking server with options.tracking_uri" in error(
        "postgresql://db/mlflow"  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "MLflow store not found"),
        (b"not a database at all" * 100, "cannot be read as SQLite"),
    ],
)
def test_missing_or_unreadable_store(tmp_path: Path, content: bytes | None, expected: str) -> None:
    path = tmp_path / "m.db"
    if content is not None:
        path.write_bytes(content)
    assert expected in error(path)


def test_end_before_start_fails_naming_the_run_or_is_skipped_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[("good", "FINISHED", T0, T0 + 5, 1), ("bad", "FINISHED", T0 + 5, T0, 1)],
    )
    message = error(path)
    assert message.startswith(f"src: {path}: run bad: end_time ")
    assert "is before start_time" in message
    with caplog.at_level(logging.WARNING, logger="runcost"):
        kept = read({**source(path), "on_error": "skip"}, "src")["attempts"].to_pylist()
    assert [row["attempt_id"] for row in kept] == ["mlflow:good"]
    assert "skipped 1 bad record(s)" in caplog.text


def test_two_runs_with_one_attempt_tag_value_are_refused(tmp_path: Path) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[("r1", "FINISHED", T0, T0, 1), ("r2", "FINISHED", T0 + 1, T0 + 1, 1)],
        tags=[("r1", "att", "same"), ("r2", "att", "same")],
    )
    message = error(path, attempt_id_tag="att")
    assert "run r2: attempt id 'same' (tag att) is also on run r1" in message


def test_bad_gpu_count_tag_and_unknown_option(tmp_path: Path) -> None:
    path = store(
        tmp_path / "m.db", runs=[("r1", "FINISHED", T0, T0, 1)], tags=[("r1", "gpu_count", "8.5")]
    )
    assert "run r1: tag gpu_count '8.5' is not a whole number" in error(path)
    assert "unknown option(s) colour" in error(path, colour="red")


def test_supported_versions_are_documented() -> None:
    docs = Path(__file__).parents[2] / "docs" / "telemetry.md"
    for version in mlflow.SUPPORTED_VERSIONS:
        assert version in docs.read_text(encoding="utf-8")


MINUTE = 60_000


def test_a_sweep_parent_is_a_grouping_and_its_trials_are_attempts_of_their_own(
    tmp_path: Path,
) -> None:
    """A parent whose nested runs started while it ran is no attempt; a trial resumes nothing;
    a trial's retry (one nested run, after the trial ended) still resumes it."""
    path = store(
        tmp_path / "m.db",
        runs=[
            ("sweep", "FINISHED", T0, T0 + 60 * MINUTE, 1),
            ("t1", "FINISHED", T0 + MINUTE, T0 + 20 * MINUTE, 1),
            ("t2", "FAILED", T0 + 2 * MINUTE, T0 + 10 * MINUTE, 1),
            ("t2-retry", "FINISHED", T0 + 12 * MINUTE, T0 + 30 * MINUTE, 1),
            ("solo", "FAILED", T0, T0 + 5 * MINUTE, 2),
            ("solo-retry", "FINISHED", T0 + 5 * MINUTE, T0 + 9 * MINUTE, 2),
        ],
        tags=[
            ("sweep", "mlflow.runName", "lr-sweep"),
            ("sweep", "user_experiment_id", "resnet-lr"),
            ("sweep", "instance_id", "i-0dead"),
            ("t1", "mlflow.parentRunId", "sweep"),
            ("t2", "mlflow.parentRunId", "sweep"),
            ("t2-retry", "mlflow.parentRunId", "t2"),
            ("solo-retry", "mlflow.parentRunId", "solo"),
        ],
    )
    found = {
        row["attempt_id"]: row
        for row in rows(path, experiment_id_tag="user_experiment_id", experiment_id_from="name")
    }
    assert sorted(found) == [
        "mlflow:solo",
        "mlflow:solo-retry",
        "mlflow:t1",
        "mlflow:t2",
        "mlflow:t2-retry",
    ]
    assert [
        (found[a]["status"], found[a]["parent_attempt_id"], found[a]["experiment_id"])
        for a in sorted(found)
    ] == [
        ("failed", None, "llm-pretrain"),
        ("succeeded", "mlflow:solo", "llm-pretrain"),
        ("succeeded", None, "resnet-lr"),
        ("failed", None, "resnet-lr"),
        ("succeeded", "mlflow:t2", "resnet-lr"),
    ]
    for trial in ("mlflow:t1", "mlflow:t2"):
        tags = dict(found[trial]["tags"])
        assert (tags["parent_run_id"], tags["parent_run_name"]) == ("sweep", "lr-sweep")
    assert "parent_run_id" not in dict(found["mlflow:t2-retry"]["tags"])


def test_two_nested_runs_after_the_parent_ended_make_it_a_grouping(tmp_path: Path) -> None:
    """A run is resumed once; two runs nested under one that had ended are trials of it."""
    path = store(
        tmp_path / "m.db",
        runs=[
            ("p", "FINISHED", T0, T0 + MINUTE, 1),
            ("c1", "FINISHED", T0 + 2 * MINUTE, T0 + 3 * MINUTE, 1),
            ("c2", "FINISHED", T0 + 4 * MINUTE, T0 + 5 * MINUTE, 1),
        ],
        tags=[("c1", "mlflow.parentRunId", "p"), ("c2", "mlflow.parentRunId", "p")],
    )
    assert [(r["attempt_id"], r["parent_attempt_id"]) for r in rows(path)] == [
        ("mlflow:c1", None),
        ("mlflow:c2", None),
    ]


def test_a_grouping_that_names_resources_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[("sweep", "RUNNING", T0, None, 1), ("t1", "RUNNING", T0 + 1, None, 1)],
        tags=[("sweep", "instance_id", "i-0dead"), ("t1", "mlflow.parentRunId", "sweep")],
    )
    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = read(source(path), "src")
    assert tables["attempts"].column("attempt_id").to_pylist() == ["mlflow:t1"]
    assert tables["attempt_resources"].num_rows == 0
    assert (
        "src: 1 run(s) that group nested runs (a sweep parent) name resources; a grouping is not "
        "an attempt, so no attempt holds them: log them on the nested runs that used them. "
        "First: run sweep (i-0dead)"
    ) in caplog.text


@pytest.mark.parametrize(
    ("raw", "reason", "status", "failure_reason"),
    [
        ("FAILED", "timeout", "timeout", None),
        ("KILLED", "Timeout", "timeout", None),
        ("KILLED", "interrupted", "interrupted", None),
        ("FAILED", "interrupted", "interrupted", None),
        ("FAILED", "CUDA out of memory", "failed", "CUDA out of memory"),
        ("KILLED", None, "cancelled", None),
        ("FINISHED", "timeout", "succeeded", None),  # it finished: MLflow's status stands
        ("RUNNING", "interrupted", "running", None),
    ],
)
def test_end_reason_tag_gives_timeout_and_interrupted(
    tmp_path: Path, raw: str, reason: str | None, status: str, failure_reason: str | None
) -> None:
    tags = [("r1", "end_reason", reason)] if reason else []
    path = store(tmp_path / "m.db", runs=[("r1", raw, T0, None, 1)], tags=tags)
    (row,) = rows(path)
    assert (row["status"], row["failure_reason"]) == (status, failure_reason)
    refined = status != mlflow.STATUSES[raw]
    assert dict(row["tags"]).get("mlflow_status") == (raw if refined else None)
    renamed = store(
        tmp_path / "n.db", runs=[("r1", raw, T0, None, 1)], tags=[("r1", "why", reason or "")]
    )
    assert rows(renamed, status_tag="why")[0]["status"] == status


def test_every_resource_a_run_names_is_held(tmp_path: Path) -> None:
    path = store(
        tmp_path / "m.db",
        runs=[("r1", "FINISHED", T0, T0 + MINUTE, 1), ("r2", "FINISHED", T0, T0 + MINUTE, 1)],
        tags=[
            ("r1", "instance_id", "i-0aaa, i-0bbb"),
            ("r1", "checkpoint_uri", "s3://ckpt-bucket/runs/r1/"),
            ("r1", "gpu_count", "16"),
            ("r2", "instance_id", "i-0ccc"),
        ],
        params=[
            ("r1", "volume_ids", "['vol-01', 'vol-02']"),  # mlflow.log_param of a list
            ("r2", "volume_ids", '["vol-03"]'),
            ("r2", "checkpoint_uri", "arn:aws:s3:::other-bucket"),
        ],
    )
    tags = ["instance_id", "volume_ids", "checkpoint_uri"]
    held = read(source(path, resource_tags=tags), "src")["attempt_resources"].to_pylist()
    assert [
        (r["attempt_id"], r["resource_id"], r["resource_kind"], r["ended_at"], r["gpu_count"])
        for r in held
    ] == [
        ("mlflow:r1", "i-0aaa", "ec2_instance", at(1), 16),
        ("mlflow:r1", "i-0bbb", "ec2_instance", at(1), 16),
        ("mlflow:r1", "vol-01", "ebs_volume", at(1), 16),
        ("mlflow:r1", "vol-02", "ebs_volume", at(1), 16),
        ("mlflow:r1", "ckpt-bucket", "s3_bucket", at(1), 16),
        ("mlflow:r2", "i-0ccc", "ec2_instance", at(1), None),
        ("mlflow:r2", "vol-03", "ebs_volume", at(1), None),
        ("mlflow:r2", "other-bucket", "s3_bucket", at(1), None),
    ]
    # resource_tag (one name) still works; the two together are refused
    one = read(source(path, resource_tag="volume_ids"), "src")["attempt_resources"]
    assert one.column("resource_id").to_pylist() == ["vol-01", "vol-02", "vol-03"]
    assert error(path, resource_tag="x", resource_tags=["y"]) == (
        "src: set options.resource_tags (a list of tag names), not resource_tag too"
    )
    assert error(path, resource_tags="instance_id") == (
        'src: options.resource_tags must be a list of tag names: resource_tags = ["instance_id", '
        '"volume_ids", "checkpoint_bucket"]'
    )


@pytest.mark.parametrize(
    ("env", "options", "sent"),
    [
        ({}, {}, ("none", None)),
        ({"MLFLOW_TRACKING_TOKEN": "t0k"}, {}, ("bearer", "Bearer t0k")),
        (  # as the MLflow client: a user and password win over a token
            {
                "MLFLOW_TRACKING_USERNAME": "u",
                "MLFLOW_TRACKING_PASSWORD": "p",
                "MLFLOW_TRACKING_TOKEN": "t",
            },
            {},
            ("basic", "Basic dTpw"),
        ),
        (
            {"MLFLOW_TRACKING_USERNAME": "u", "MLFLOW_TRACKING_TOKEN": "t"},
            {},
            ("bearer", "Bearer t"),
        ),
        (  # a named token variable wins over the default user and password
            {"MLFLOW_TRACKING_USERNAME": "u", "MLFLOW_TRACKING_PASSWORD": "p", "TOK": "t"},
            {"token_env": "TOK"},
            ("bearer", "Bearer t"),
        ),
        ({"U": "u", "P": "p"}, {"username_env": "U", "password_env": "P"}, ("basic", "Basic dTpw")),
    ],
)
def test_credentials_follow_the_mlflow_client(
    monkeypatch: pytest.MonkeyPatch, env: dict, options: dict, sent: tuple
) -> None:
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    found = credentials(options, "src")
    assert (found.kind, found.header) == sent


def test_credential_settings_that_cannot_work_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InputError) as raised:
        credentials({"token_env": "T", "username_env": "U"}, "src")
    assert str(raised.value) == (
        "src: set options.token_env (a bearer token) or options.username_env and "
        "options.password_env (MLflow basic auth), not both"
    )
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "p")
    with pytest.raises(InputError) as raised:
        credentials({}, "src")
    assert str(raised.value) == (
        "src: MLFLOW_TRACKING_PASSWORD is set but MLFLOW_TRACKING_USERNAME is not; MLflow basic "
        "auth needs both: export MLFLOW_TRACKING_USERNAME=<user> and "
        "MLFLOW_TRACKING_PASSWORD=<password> where runcost runs (a user with READ on the "
        "experiments), or set options.username_env and options.password_env to the variables "
        "that hold them"
    )
