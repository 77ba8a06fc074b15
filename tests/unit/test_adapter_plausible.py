"""What the telemetry files refuse, an adapter's tables are refused for too (one check for both):
a time in 2031 or 1900, a NaN metric, more GPUs than the instance type has, named by source and
run or job; on_error = "skip" leaves the attempt out; an unknown experiment is warned about."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

import pytest
from mlflow_store import empty_store
from test_telemetry_files import attempt, write

from pipeline.common.errors import InputError
from pipeline.config.loader import parse_config
from pipeline.run.nightly import run_pipeline
from pipeline.telemetry.adapters import read, read_sources

CLOCK = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
MS_2026 = 1_790_000_000_000  # 2026-09-21T14:13:20Z in epoch ms
MS_2031 = int(dt.datetime(2031, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
MLFLOW = "telemetry.sources[1] (mlflow)"
SAGEMAKER = "telemetry.sources[1] (sagemaker)"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-job/llm"
FIX = (
    'fix it where the source records it, or set telemetry.on_error = "skip" to leave the '
    "attempt out"
)


def mlflow_store(path: Path, runs: list[tuple], tags: list[tuple] = ()) -> Path:
    """runs: (run_uuid, status, start ms, end ms); tags: (run, key, value)."""
    con = empty_store(path)
    con.execute("insert into experiments (experiment_id, name) values (1, 'llm')")
    con.executemany(
        "insert into runs (run_uuid, status, start_time, end_time, experiment_id, "
        "lifecycle_stage, artifact_uri) values (?, ?, ?, ?, 1, 'active', 's3://a/' || ?)",
        [(*run, run[0]) for run in runs],
    )
    con.executemany("insert into tags (run_uuid, key, value) values (?, ?, ?)", tags)
    con.commit()
    con.close()
    return path


def mlflow(path: Path, on_error: str = "fail") -> dict[str, object]:
    return {"kind": "mlflow", "path": path, "options": {}, "on_error": on_error}


def refused(source: dict[str, object], label: str) -> str:
    with pytest.raises(InputError) as raised:
        read(source, label, CLOCK)
    return str(raised.value)


def test_mlflow_run_dated_2031_is_refused_naming_the_run(tmp_path: Path) -> None:
    path = mlflow_store(
        tmp_path / "m.db",
        [("r1", "FINISHED", MS_2026, MS_2026 + 60_000), ("r9", "RUNNING", MS_2031, None)],
    )

    assert refused(mlflow(path), MLFLOW) == (
        f"{MLFLOW}: attempt 'mlflow:r9' (its mlflow record 'r9'), column started_at: "
        "2031-01-01T00:00:00+00:00 is in the future: after the run's clock "
        "2026-11-01T00:00:00+00:00 by more than a day; fix the time (check the clock of the "
        f"host that wrote it); {FIX}"
    )


def test_mlflow_run_claiming_16_gpus_on_an_8_gpu_instance_is_refused(tmp_path: Path) -> None:
    tags = [("r1", "gpu_count", "16"), ("r1", "instance_type", "p4d.24xlarge")]
    path = mlflow_store(tmp_path / "m.db", [("r1", "FINISHED", MS_2026, MS_2026 + 1)], tags)

    assert refused(mlflow(path), MLFLOW) == (
        f"{MLFLOW}: attempt 'mlflow:r1' (its mlflow record 'r1'), column gpu_count: 16 GPUs "
        "claimed on 1 instance (node_count is empty) of 'p4d.24xlarge', which has 8 GPUs each; "
        "fix gpu_count (the attempt's total), or set node_count to the number of instances it "
        f"ran on; {FIX}"
    )


def test_mlflow_on_error_skip_leaves_the_run_out_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tags = [("r2", "instance_id", "i-0r2")]
    runs = [
        ("r1", "FINISHED", MS_2026, MS_2026 + 60_000),
        ("r2", "FINISHED", MS_2031, MS_2031 + 60_000),
    ]
    path = mlflow_store(tmp_path / "m.db", runs, tags)

    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = read(mlflow(path, on_error="skip"), MLFLOW, CLOCK)

    assert tables["attempts"].column("attempt_id").to_pylist() == ["mlflow:r1"]
    assert tables["attempt_resources"].num_rows == 0
    assert [record.getMessage() for record in caplog.records] == [
        f"{MLFLOW}: skipped 1 attempt(s) and 0 experiment(s) that cannot be right "
        f"(telemetry.on_error = \"skip\"); first: {MLFLOW}: attempt 'mlflow:r2' (its mlflow "
        "record 'r2'), column started_at: 2031-01-01T00:00:00+00:00 is in the future: after "
        "the run's clock 2026-11-01T00:00:00+00:00 by more than a day; fix the time (check the "
        "clock of the host that wrote it)"
    ]


def sagemaker_job(**changes: object) -> dict:
    job = {
        "TrainingJobName": "llm",
        "TrainingJobArn": ARN,
        "TrainingJobStatus": "Completed",
        "HyperParameters": {"experiment_id": '"exp-1"'},
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1},
        "CreationTime": "2026-10-01T09:55:00+00:00",
        "TrainingStartTime": "2026-10-01T10:00:00+00:00",
        "TrainingEndTime": "2026-10-01T12:00:00+00:00",
        "FinalMetricDataList": [{"MetricName": "val:loss", "Value": 1.25}],
    }
    job.update(changes)
    return job


def sagemaker(tmp_path: Path, job: dict) -> dict[str, object]:
    # json.dumps writes NaN as the bare word NaN, which Python's JSON reader (the adapter's) reads
    (tmp_path / "job.json").write_text(json.dumps(job))
    return {"kind": "sagemaker", "path": tmp_path / "job.json", "options": {}}


def test_sagemaker_job_starting_in_1900_is_refused_naming_the_job(tmp_path: Path) -> None:
    job = sagemaker_job(
        CreationTime="1900-01-01T09:55:00+00:00", TrainingStartTime="1900-01-01T10:00:00+00:00"
    )

    assert refused(sagemaker(tmp_path, job), SAGEMAKER) == (
        f"{SAGEMAKER}: attempt 'llm' (its sagemaker record '{ARN}'), column submitted_at: "
        "1900-01-01T09:55:00+00:00 is before 2000-01-01, older than any cloud bill (a clock "
        f"that was never set); fix the time (2 more problem(s) in this source); {FIX}"
    )


def test_sagemaker_nan_metric_is_refused_naming_the_job(tmp_path: Path) -> None:
    job = sagemaker_job(FinalMetricDataList=[{"MetricName": "val:loss", "Value": float("nan")}])

    assert refused(sagemaker(tmp_path, job), SAGEMAKER) == (
        f"{SAGEMAKER}: attempt 'llm' (its sagemaker record '{ARN}'), column metric_value: nan "
        "is not a number a result can be judged by (NaN compares above every threshold); leave "
        f"metric_value empty for a run with no valid metric, such as a diverged one; {FIX}"
    )


def test_a_plausible_job_is_read_as_it_is(tmp_path: Path) -> None:
    tables = read(sagemaker(tmp_path, sagemaker_job()), SAGEMAKER, CLOCK)

    assert tables["attempts"].column("gpu_count").to_pylist() == [8]
    assert tables["attempts"].column("metric_value").to_pylist() == [1.25]


def test_an_adapters_attempt_of_an_unlisted_experiment_is_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "telemetry").mkdir()
    write(tmp_path / "telemetry", "attempts", "csv", [attempt("a1", experiment_id="exp-1")])
    write(tmp_path / "telemetry", "experiments", "csv", [{"experiment_id": "exp-1"}])
    mlflow_store(tmp_path / "m.db", [("r1", "FINISHED", MS_2026, MS_2026 + 60_000)])
    config = parse_config(
        {
            "telemetry": {
                "path": "telemetry",
                "sources": [{"kind": "mlflow", "path": "m.db"}],
            }
        },
        base=tmp_path,
    )

    with caplog.at_level(logging.WARNING, logger="runcost"):
        tables = read_sources(config, CLOCK)

    assert tables["attempts"].num_rows == 2
    assert [record.getMessage() for record in caplog.records] == [
        f"{MLFLOW}: experiment '1' of attempt(s) 'mlflow:r1' is in no source's experiments; no "
        "team, quality metric or threshold applies to it: add the experiment where the "
        "experiments are listed, or fix the experiment id where the source records it"
    ]


def test_a_run_judges_a_sources_times_by_its_clock(tmp_path: Path) -> None:
    """2026-11-05 is long past by the wall clock, but 4 days after the run's clock (--as-of)."""
    later = int(dt.datetime(2026, 11, 5, tzinfo=dt.UTC).timestamp() * 1000)
    mlflow_store(tmp_path / "m.db", [("r1", "FINISHED", later, later + 60_000)])
    config = parse_config(
        {
            "warehouse": {"path": "warehouse"},
            "telemetry": {"sources": [{"kind": "mlflow", "path": "m.db"}]},
        },
        base=tmp_path,
    )

    with pytest.raises(InputError) as raised:
        run_pipeline(config, now=CLOCK)

    assert str(raised.value).startswith(
        f"{MLFLOW}: attempt 'mlflow:r1' (its mlflow record 'r1'), column started_at: "
        "2026-11-05T00:00:00+00:00 is in the future: after the run's clock "
        "2026-11-01T00:00:00+00:00 by more than a day"
    )


def test_a_canonical_source_is_judged_by_the_runs_clock(tmp_path: Path) -> None:
    """A canonical folder read as a source checks its times as telemetry.path does, by the
    clock the run passes, not the wall clock (by which 2026-11-05 is long past)."""
    (tmp_path / "later").mkdir()
    later = attempt("a1", started_at="2026-11-05T00:00:00Z")
    path = write(tmp_path / "later", "attempts", "csv", [later])
    source = {"kind": "canonical", "path": tmp_path / "later", "options": {}}

    message = refused(source, "telemetry.sources[1] (canonical)")

    assert message.startswith(
        f"{path}: row 1, column started_at: '2026-11-05T00:00:00Z' is in the future: after the "
        "run's clock 2026-11-01T00:00:00+00:00 by more than a day"
    )
