"""Merging telemetry sources: identity rules, re-delivery, the registry and the config wiring."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from mlflow_store import empty_store

from pipeline.common.errors import ConfigError, InputError
from pipeline.config.loader import parse_config
from pipeline.telemetry import adapters
from pipeline.telemetry.adapters import read, read_sources, table
from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.merge import merge

UTC = dt.UTC


def at(hour: int) -> dt.datetime:
    return dt.datetime(2026, 10, 1, hour, tzinfo=UTC)


def attempt(
    attempt_id: str, source: str | None = None, native: str | None = None, **cols: object
) -> dict:
    tags = {} if source is None else {"source": source, "source_native_id": native or attempt_id}
    row = {"attempt_id": attempt_id, "experiment_id": "e1", "status": "running", "tags": tags}
    return row | cols


def batch(attempts=(), resources=(), events=(), experiments=()) -> dict:
    return {
        "attempts": table("attempts", attempts),
        "attempt_resources": table("attempt_resources", resources),
        "attempt_events": table("attempt_events", events),
        "experiments": table("experiments", experiments),
    }


def resource(attempt_id: str, resource_id: str) -> dict:
    return {"attempt_id": attempt_id, "resource_id": resource_id, "started_at": at(1)}


def test_same_source_and_native_id_updates_the_attempt_and_keeps_the_others() -> None:
    first = batch(
        [attempt("a1", "slurm", "7"), attempt("a2", "slurm", "8")],
        resources=[resource("a1", "i-1"), resource("a2", "i-2")],
    )
    again = batch(
        [attempt("a1", "slurm", "7", status="succeeded", ended_at=at(5))],
        resources=[resource("a1", "i-9")],
    )
    merged = merge([("first", first), ("again", again)])
    rows = {row["attempt_id"]: row for row in merged["attempts"].to_pylist()}
    assert sorted(rows) == ["a1", "a2"]
    assert (rows["a1"]["status"], rows["a1"]["ended_at"]) == ("succeeded", at(5))
    assert rows["a2"]["status"] == "running"
    held = {(r["attempt_id"], r["resource_id"]) for r in merged["attempt_resources"].to_pylist()}
    assert held == {("a1", "i-9"), ("a2", "i-2")}
    assert merged["attempts"].schema == arrow_schema("attempts")


def test_an_update_without_resources_keeps_the_earlier_resources() -> None:
    first = batch([attempt("a1")], resources=[resource("a1", "i-1")])
    again = batch([attempt("a1", status="failed")])
    merged = merge([("first", first), ("again", again)])
    assert merged["attempts"].column("status").to_pylist() == ["failed"]
    assert merged["attempt_resources"].column("resource_id").to_pylist() == ["i-1"]


@pytest.mark.parametrize(
    ("earlier", "later", "said"),
    [
        (("mlflow", "r1"), ("slurm", "r1"), "(slurm record 'r1') is already used by first (mlflow"),
        (("slurm", "7"), ("slurm", "8"), "(slurm record '8') is already used by first (slurm"),
        ((None, None), ("kubernetes", "uid"), "is already used by first (canonical record 'x')"),
    ],
)
def test_two_different_attempts_never_merge(earlier, later, said) -> None:
    with pytest.raises(InputError) as raised:
        merge(
            [
                ("first", batch([attempt("x", *earlier)])),
                ("second", batch([attempt("x", *later)])),
            ]
        )
    assert str(raised.value).startswith("second: attempt id 'x' ")
    assert said in str(raised.value)
    assert "two different attempts never merge" in str(raised.value)


def test_children_must_name_a_reported_attempt() -> None:
    with pytest.raises(InputError, match=r"attempt_resources name attempt\(s\) no source"):
        merge([("one", batch([attempt("a1")], resources=[resource("ghost", "i-1")]))])


def test_experiments_last_wins_and_missing_tables_are_empty() -> None:
    merged = merge(
        [
            ("a", batch(experiments=[{"experiment_id": "e1", "team": "old"}])),
            ("b", {"experiments": table("experiments", [{"experiment_id": "e1", "team": "new"}])}),
        ]
    )
    assert merged["experiments"].column("team").to_pylist() == ["new"]
    assert {name: t.num_rows for name, t in merged.items()} == {
        "attempts": 0,
        "attempt_resources": 0,
        "attempt_events": 0,
        "experiments": 1,
    }


def test_table_builds_canonical_rows_with_sorted_map_tags() -> None:
    built = table("attempts", [attempt("a1", "mlflow", "r1", gpu_count=8)])
    assert built.schema == arrow_schema("attempts")
    row = built.to_pylist()[0]
    assert row["tags"] == [("source", "mlflow"), ("source_native_id", "r1")]
    assert (row["gpu_count"], row["ended_at"]) == (8, None)


def test_registry_names_every_kind_and_refuses_others() -> None:
    assert adapters.kinds() == (
        "mlflow",
        "slurm",
        "kubernetes",
        "sagemaker",
        "checkpoint_log",
        "canonical",
        "prometheus",
    )
    with pytest.raises(InputError, match="kind 'wandb' is not known"):
        read({"kind": "wandb", "path": None}, "x")


def write_canonical(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "attempts.jsonl").write_text(text, encoding="utf-8")
    return folder


def write_mlflow(path: Path) -> Path:
    con = empty_store(path)
    con.executescript(
        """
        insert into experiments (experiment_id, name) values (1, 'sweep');
        insert into runs (run_uuid, status, start_time, end_time, experiment_id, lifecycle_stage)
            values ('r1', 'FAILED', 1790000000000, 1790003600000, 1, 'active');
        """
    )
    con.commit()
    con.close()
    return path


def test_config_sources_and_redelivery_are_read_and_merged(tmp_path: Path) -> None:
    first = {"attempt_id": "a1", "experiment_id": "e1", "status": "running"}
    write_canonical(
        tmp_path / "telemetry", [first, {**first, "attempt_id": "a2", "status": "failed"}]
    )
    write_canonical(
        tmp_path / "redelivered",
        [{**first, "status": "succeeded", "ended_at": "2026-10-01T05:00:00Z"}],
    )
    write_mlflow(tmp_path / "mlflow.db")
    config = parse_config(
        {
            "telemetry": {
                "path": "telemetry",
                "on_error": "skip",
                "sources": [
                    {"kind": "canonical", "path": "redelivered"},
                    {"kind": "mlflow", "path": "mlflow.db", "options": {"metric": "acc"}},
                ],
            }
        },
        base=tmp_path,
    )
    assert config.telemetry_on_error == "skip"
    assert [s.kind for s in config.telemetry_sources] == ["canonical", "mlflow"]
    assert config.telemetry_sources[1].path == tmp_path / "mlflow.db"
    assert config.telemetry_sources[1].options == {"metric": "acc"}
    rows = {row["attempt_id"]: row for row in read_sources(config)["attempts"].to_pylist()}
    assert {key: row["status"] for key, row in rows.items()} == {
        "a1": "succeeded",
        "a2": "failed",
        "mlflow:r1": "failed",
    }
    assert rows["a1"]["ended_at"] == at(5)


@pytest.mark.parametrize(
    ("telemetry", "said"),
    [
        ({"on_error": "ignore"}, 'telemetry.on_error must be "fail" or "skip"'),
        ({"sources": [{"kind": "wandb"}]}, "needs kind = one of mlflow, slurm"),
        ({"sources": [{"kind": "mlflow", "pth": "x"}]}, "found keys kind, pth"),
        ({"sources": [{"kind": "mlflow", "options": 3}]}, "options must be a table"),
        ({"sources": {"kind": "mlflow"}}, "must be [[telemetry.sources]] tables"),
    ],
)
def test_bad_source_config_is_refused(tmp_path: Path, telemetry: dict, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"telemetry": telemetry}, base=tmp_path)
    assert said in str(raised.value)
