"""The prometheus source in nightly runs of the demo world with its DCGM samples
(pipeline/scenario/dcgm.py) backfilled into a real Prometheus: the idle GPU cost of each attempt
equals the hand-worked figures to the cent, measured windows are published as telemetry.gpu_usage,
and a later run whose Prometheus has dropped them keeps them."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from builders import records
from prometheus_server import Sample, prometheus_server
from prometheus_world import CLOCK, METRIC, configure

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


# Worked by hand from the demo bill: each spot node's hours (SpotUsage:g5.12xlarge), held whole by
# one attempt of 4 GPUs; idle_cost = cost x idle / held GPU-hours, unsampled_cost = cost x
# (held - sampled) / held, the same under both models (no pool places accelerator cost).
# att-vis-01: 2.0482 + 2.0438 + 2.0501 = 6.1421; 12 GPU-hours held and sampled, 4 idle (every
#   GPU's first hour): idle 6.1421 / 3 = 2.0473666667 ($2.05).
# att-vis-02: 2.0412 + 2.0418 + 1.02685 (half an hour) = 5.10985; 10 GPU-hours held, 8 sampled
#   (the exporter was down 10:00-10:30 on 4 GPUs), 0.5 idle (GPU 3, 09:00-09:30):
#   idle 5.10985 x 0.05 = 0.2554925 ($0.26), unsampled 5.10985 x 0.2 = 1.02197 ($1.02).
HAND_WORKED = {  # held, sampled, idle GPU-hours, accelerator, idle, unsampled cost
    "att-vis-01": (12.0, 12.0, 4.0, "6.1421", "2.0473666667", "0", "2.05"),
    "att-vis-02": (10.0, 8.0, 0.5, "5.10985", "0.2554925", "1.02197", "0.26"),
}


def test_windows_are_published_and_kept_when_prometheus_drops_them(tmp_path: Path) -> None:
    world = tmp_path / "world"
    write_scenario(world)
    samples = world / "dcgm" / "samples.om"
    with prometheus_server(tmp_path / "p1", METRIC, samples) as url:
        first = run_pipeline(load_config(configure(world, url)), now=CLOCK)
    every = measured(first.database)
    rows = [row for row in every if row["attempt_id"] in HAND_WORKED]
    assert [row["allocation_model"] for row in rows] == ["fully_loaded", "marginal"] * 2
    for row in rows:
        held, sampled, idle, cost, idle_cost, unsampled, cents = HAND_WORKED[row["attempt_id"]]
        assert (row["held_gpu_hours"], row["sampled_gpu_hours"]) == (held, sampled)
        assert row["idle_gpu_hours"] == pytest.approx(idle, abs=1e-9)
        assert row["accelerator_cost"] == Decimal(cost)
        assert row["idle_cost"] == Decimal(idle_cost)
        assert row["idle_cost"].quantize(Decimal("0.01")) == Decimal(cents)
        assert row["unsampled_cost"] == Decimal(unsampled)
        total = row["idle_cost"] + row["unsampled_cost"] + row["active_cost"]
        assert total == row["accelerator_cost"]
    # every other attempt holding GPUs was asked about and has no sample (no host in the map):
    # coverage 0, its whole accelerator cost unsampled
    others = [row for row in every if row["attempt_id"] not in HAND_WORKED]
    assert sorted({row["attempt_id"] for row in others}) == [
        "att-eks-01", "att-eks-02", "att-llm-01", "att-llm-02", "att-nlp-01", "att-rl-01",
        "att-rl-02",
    ]  # fmt: skip
    assert {(row["coverage"], row["idle_cost"]) for row in others} == {(0.0, 0)}
    assert all(row["unsampled_cost"] == row["accelerator_cost"] for row in others)
    con = open_database(first.database)
    windows = con.execute(
        "select gpu, state, started_at, ended_at from telemetry.gpu_usage "
        "where state = 'idle' order by all"
    ).fetchall()
    findings = con.execute(
        "select subject_id, effective_cost, confidence, evidence_windows from marts.waste_findings "
        "where finding_type = 'gpu_idle' order by subject_id"
    ).fetchall()
    con.close()
    start = dt.datetime(2026, 10, 5, 9, tzinfo=dt.UTC)
    # matched by host, one step below by pod: medium at coverage 1, low at 0.8
    hour, half = start + dt.timedelta(hours=1), start + dt.timedelta(minutes=30)
    node = "i-0b7e4d1c2a9f8001"
    assert findings == [
        ("att-vis-01", Decimal("2.0473666667"), "medium",
         [{"started_at": start, "ended_at": hour, "resource_id": f"{node}1", "gpus": 4}]),
        ("att-vis-02", Decimal("0.2554925000"), "low",
         [{"started_at": start, "ended_at": half, "resource_id": f"{node}2", "gpus": 1}]),
    ]  # fmt: skip
    assert windows == [
        *((f"GPU-v1-{gpu}", "idle", start, start + dt.timedelta(hours=1)) for gpu in range(4)),
        ("GPU-v2-3", "idle", start, start + dt.timedelta(minutes=30)),
    ]
    # the next night's Prometheus keeps 30 days: nothing of October is left
    later = [Sample({"Hostname": "gpu-v1", "gpu": "0", "UUID": "GPU-v1-0"}, CLOCK.timestamp(), 50)]
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
    with prometheus_server(tmp_path / "p1", METRIC, world / "dcgm" / "samples.om") as url:
        duckdb_run = same_tables_on_both_engines(configure(world, url), conf)
    assert len(measured(duckdb_run.database)) == 18  # 9 attempts holding GPUs x 2 models
