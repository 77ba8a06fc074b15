"""The prometheus source in nightly runs of the demo world: measured windows are published as
telemetry.gpu_usage, and a later run whose Prometheus has dropped them keeps them."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from builders import records
from prometheus_server import Sample, prometheus_server
from prometheus_world import CLOCK, METRIC, START, configure, vis_samples

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database


def measured(database: Path) -> list[dict]:
    con = open_database(database)
    try:
        return records(
            con,
            "select attempt_id, allocation_model, held_gpu_hours, sampled_gpu_hours, "
            "idle_gpu_hours, coverage, accelerator_cost, idle_cost, unsampled_cost, active_cost "
            "from marts.gpu_utilisation order by all",
        )
    finally:
        con.close()


def test_windows_are_published_and_kept_when_prometheus_drops_them(tmp_path: Path) -> None:
    world = tmp_path / "world"
    write_scenario(world)
    with prometheus_server(tmp_path / "p1", METRIC, vis_samples()) as url:
        first = run_pipeline(load_config(configure(world, url)), now=CLOCK)
    every = measured(first.database)
    rows = [row for row in every if row["attempt_id"] == "att-vis-01"]
    assert [row["allocation_model"] for row in rows] == ["fully_loaded", "marginal"]
    # every other attempt holding GPUs was asked about and has no sample (no host in the map):
    # coverage 0, its whole accelerator cost unsampled
    others = [row for row in every if row["attempt_id"] != "att-vis-01"]
    assert sorted({row["attempt_id"] for row in others}) == [
        "att-eks-01", "att-eks-02", "att-llm-01", "att-llm-02", "att-nlp-01", "att-rl-01",
        "att-rl-02", "att-vis-02",
    ]  # fmt: skip
    assert {(row["coverage"], row["idle_cost"]) for row in others} == {(0.0, 0)}
    assert all(row["unsampled_cost"] == row["accelerator_cost"] for row in others)
    for row in rows:
        # 4 GPUs x 3 h held and sampled, 4 x 1 h idle: a third of the accelerator cost
        assert (row["held_gpu_hours"], row["sampled_gpu_hours"]) == (12.0, 12.0)
        assert (row["idle_gpu_hours"], row["coverage"]) == (4.0, 1.0)
        assert row["accelerator_cost"] > 0
        third = (row["accelerator_cost"] / 3).quantize(Decimal("0.0000000001"))
        assert row["idle_cost"] == third
        assert row["unsampled_cost"] == 0
        assert row["idle_cost"] + row["active_cost"] == row["accelerator_cost"]
    con = open_database(first.database)
    windows = con.execute(
        "select gpu, state, started_at, ended_at from telemetry.gpu_usage "
        "where state <> 'unsampled' order by all"
    ).fetchall()
    con.close()
    assert len(windows) == 8 and windows[0] == (
        "GPU-v0",
        "busy",
        START + dt.timedelta(hours=1),
        START + dt.timedelta(hours=3),
    )
    # the next night's Prometheus keeps 30 days: nothing of October is left
    later = [Sample({"Hostname": "gpu-v1", "gpu": "0", "UUID": "GPU-v0"}, CLOCK.timestamp(), 50)]
    with prometheus_server(tmp_path / "p2", METRIC, later) as url:
        second = run_pipeline(load_config(configure(world, url)), now=CLOCK)
    assert measured(second.database) == every


@pytest.mark.slow
def test_the_measured_world_gives_the_same_tables_on_spark(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="the Spark engine needs the spark extra")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("PySpark needs a Java runtime, 17 or later (.ci/run installs one)")
    from engine_compare import same_tables_on_both_engines

    world = tmp_path / "world"
    write_scenario(world)
    conf = '[spark.conf]\n"spark.sql.shuffle.partitions" = 1\n"spark.default.parallelism" = 1\n'
    with prometheus_server(tmp_path / "p1", METRIC, vis_samples()) as url:
        duckdb_run = same_tables_on_both_engines(configure(world, url), conf)
    assert len(measured(duckdb_run.database)) == 18  # 9 attempts holding GPUs x 2 models
