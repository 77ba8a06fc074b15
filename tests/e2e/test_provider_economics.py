"""The economics marts on a Google Cloud bill (`runcost demo --world gcp`) and on a FOCUS file,
against figures worked out by hand from the worlds' rows (pipeline/scenario/gcp_world.py,
tests/focus_economics_world.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from engine_compare import same_tables_on_both_engines
from focus_economics_world import economics_rows, write_focus_economics_world

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.warehouse.snapshots import DATABASE_NAME, open_database

D = Decimal


@pytest.fixture(scope="module")
def gcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    folder = tmp_path_factory.mktemp("gcp-demo") / "demo"
    result = CliRunner().invoke(main, ["demo", str(folder), "--world", "gcp"])
    assert result.exit_code == 0, result.output
    con = open_database(folder / "warehouse" / DATABASE_NAME)
    yield con
    con.close()


@pytest.fixture(scope="module")
def focus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("focus-economics")
    result = run_pipeline(load_config(write_focus_economics_world(folder)))
    con = open_database(result.database)
    yield con
    con.close()


def tco(con: duckdb.DuckDBPyConnection, experiment: str, model: str) -> dict[str, Decimal]:
    rows = con.execute(
        "select cost_category, sum(effective_cost) from marts.tco_breakdown "
        "where experiment_id = ? and allocation_model = ? and on_bill group by all",
        [experiment, model],
    ).fetchall()
    return {category: cost for category, cost in rows if cost != 0}


def findings(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "select finding_type, subject_id, effective_cost, idle_hours, confidence "
        "from marts.waste_findings order by all"
    ).fetchall()


def spot_and_on_demand(con: duckdb.DuckDBPyConnection, model: str) -> dict[str, tuple]:
    rows = con.execute(
        "select capacity_type, attempts, total_cost, billed_gpu_hours, price_per_gpu_hour "
        "from marts.capacity_type_economics where allocation_model = ?",
        [model],
    ).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_gcp_demo_shows_gpu_storage_and_network_spend(gcp) -> None:
    # exp-gcp-bert: T4 0.35/h x (4 h of att-gn1-01 + 3 of att-gn1-02) less the correction 0.07 =
    # 2.38 (2.10 on October's invoice, 0.28 on November's); N1 cores (8 x 0.031611) and RAM
    # (30 x 0.004237): att-gn1-01's 4 h less the 20% sustained use credit (0.303998/h) and
    # att-gn1-02's 3 h (0.379998/h) = 2.355986; its data disk 500 GiB x 0.000136986 = 0.068493/h
    # over the 4 hours att-gn1-01 held it = 0.273972; egress of att-gn1-01 (seed 7: 4.31 + 2.54
    # + 5.04 + 7.66 GiB at 0.12) = 2.346
    assert tco(gcp, "exp-gcp-bert", "marginal") == {
        "gpu_compute": D("2.38"),
        "other_compute": D("2.355986"),
        "storage": D("0.273972"),
        "networking": D("2.346"),
    }
    shown = gcp.execute(
        "select cost_category, sum(effective_cost) from marts.tco_breakdown "
        "where allocation_model = 'fully_loaded' group by all having sum(effective_cost) > 0"
    ).fetchall()
    assert {"gpu_compute", "storage", "networking"} <= {category for category, _ in shown}


def test_gcp_a2_machine_its_commitment_and_its_unused_reservation(gcp) -> None:
    # the A100 row 2.933908/h x 4 h = 11.735632; the A2 core (12 x 0.031611) and RAM
    # (85 x 0.004237) rows are accelerator too, at effective 0 under the CUD credit; fully
    # loaded adds the A2 commitment fees (12 x 0.019915 + 85 x 0.002669 = 0.465845/h x 4 =
    # 1.86338) and the unused reservation (0.379332 + 0.360145 + 2.933908 = 3.673385/h x 4 =
    # 14.69354, idle capacity); the checkpoints labelled with the experiment, 1,000 GiB x
    # 0.000035616 x 6 h = 0.213696, are its storage
    assert tco(gcp, "exp-gcp-llm", "marginal") == {
        "gpu_compute": D("11.735632"),
        "storage": D("0.213696"),
    }
    assert tco(gcp, "exp-gcp-llm", "fully_loaded") == {
        "gpu_compute": D("13.599012"),
        "idle_capacity": D("14.69354"),
        "storage": D("0.213696"),
    }


def test_gcp_gke_fee_is_control_plane(gcp) -> None:
    # pods' T4s: 3 h + 2 h at 0.35 = 1.75; their cores and RAM (6 cores, 24 GiB each):
    # 5 h x (6 x 0.031611 + 24 x 0.004237) = 1.45677; the zonal cluster fee, 0.10 an hour for
    # the 3 hours the pods ran, pooled over them
    assert tco(gcp, "exp-gcp-gke", "fully_loaded") == {
        "gpu_compute": D("1.75"),
        "other_compute": D("1.45677"),
        "control_plane": D("0.30"),
    }


def test_gcp_spot_vm_is_dynamic_and_its_own_capacity_type(gcp) -> None:
    # the Spot VM: 4 cores x 0.006655 + 15 GiB x 0.000892 = 0.04/h, its T4 0.14/h, 2 hours
    assert tco(gcp, "exp-gcp-spot", "marginal") == {
        "gpu_compute": D("0.28"),
        "other_compute": D("0.08"),
    }
    assert spot_and_on_demand(gcp, "marginal")["spot"] == (1, D("0.36"), 2.0, D("0.18"))
    categories = gcp.execute(
        "select distinct pricing_category from normalized.cost_lines "
        "where attempt_tag = 'att-spot-01'"
    ).fetchall()
    assert categories == [("Dynamic",)]


def test_gcp_waste_unattached_disk_idle_gke_node_and_stale_checkpoints(gcp) -> None:
    # the orphan disk: 200 GiB x 0.000136986 = 0.027397/h for 30 h, never in telemetry (medium);
    # the GKE node's unrequested rest: hours 02 and 03 4 cores and 12 GiB (0.177288 each), hour
    # 04 10 cores, 36 GiB and a T4 (0.818642), 9 rows, no attempt holds the node (low);
    # Cloud Storage more than 7 days after exp-gcp-llm's last attempt ended (October 14, 12:00):
    # labelled with the experiment, 1,000 GiB x 0.000035616 x 6 h = 0.213696 (high), and
    # att-a2-02's bucket, 2,000 GiB x 0.000035616 x 4 h = 0.284928 (medium)
    assert findings(gcp) == [
        ("idle_instance", "gke-ml-gke-gpu-pool-5f2c9a1e-k7xq", D("1.173218"), 9.0, "low"),
        ("stale_checkpoint_storage", "exp-gcp-llm", D("0.213696"), 6.0, "high"),
        ("stale_checkpoint_storage", "llm-a2-checkpoints", D("0.284928"), 4.0, "medium"),
        ("unattached_volume", "scratch-pd-orphan", D("0.82191"), 30.0, "medium"),
    ]


def test_gcp_gpu_models_and_counts(gcp) -> None:
    rows = gcp.execute(
        "select distinct charge_description, gpu_model, gpu_count "
        "from normalized.cost_line_profiles "
        "where cost_class = 'accelerator' and charge_description like '%GPU%' order by all"
    ).fetchall()
    assert rows == [
        ("Nvidia Tesla A100 GPU running in Americas", "A100", 1),
        ("Nvidia Tesla A100 GPU running in Americas", "A100", None),  # the reservation's
        ("Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas", "T4", None),
        ("Nvidia Tesla T4 GPU running in Americas", "T4", None),
    ]


def test_focus_tco_by_hand(focus) -> None:
    # exp-f: p4d 2 x 32.7726 + g5 Spot 2 x 0.40 = 66.3452; its disk 0.25; egress 0.90. Fully
    # loaded, the pools spread over att-f1 and att-f2 (both exp-f): the unused commitment 1.50,
    # the EKS fee 2 x 0.10, the day of support 5.00
    assert tco(focus, "exp-f", "marginal") == {
        "gpu_compute": D("66.3452"),
        "storage": D("0.25"),
        "networking": D("0.90"),
    }
    assert tco(focus, "exp-f", "fully_loaded") == {
        "gpu_compute": D("66.3452"),
        "storage": D("0.25"),
        "networking": D("0.90"),
        "idle_capacity": D("1.50"),
        "control_plane": D("0.20"),
        "support": D("5.00"),
    }
    # exp-g: a Google Cloud T4 hour named only by its charge description, and the day of S3
    # tagged to the experiment
    assert tco(focus, "exp-g", "marginal") == {"gpu_compute": D("0.35"), "storage": D("0.05")}


def test_focus_waste_by_hand(focus) -> None:
    # vol-0orphan0001: one row over 30 hours, 0.30; i-0idle0001: 3 hours at 0.192; S3 days
    # after the 7 stale days: tagged to exp-g (0.05, high), of att-f1's bucket (0.08, medium)
    assert findings(focus) == [
        ("idle_instance", "i-0idle0001", D("0.576"), 3.0, "low"),
        ("stale_checkpoint_storage", "ckpt-bucket-f1", D("0.08"), 24.0, "medium"),
        ("stale_checkpoint_storage", "exp-g", D("0.05"), 24.0, "high"),
        ("unattached_volume", "vol-0orphan0001", D("0.30"), 30.0, "medium"),
    ]


def test_focus_capacity_types_by_hand(focus) -> None:
    # marginal: Spot att-f2 0.80 over 2 GPU-hours; on-demand att-f1 66.6952 (2 p4d hours, disk,
    # egress) + att-f3 0.35 = 67.0452 over 2 x 8 + 1 = 17 GPU-hours
    kinds = spot_and_on_demand(focus, "marginal")
    assert kinds["spot"] == (1, D("0.80"), 2.0, D("0.40"))
    attempts, total, hours, price = kinds["on_demand"]
    assert (attempts, total, hours) == (2, D("67.0452"), 17.0)
    assert abs(price - D("67.0452") / 17) < D("1e-10")
    # fully loaded, att-f2 takes 1 of 9 GPU-seconds of the 6.70 pooled: 0.80 + 6.70 / 9
    spot_total = spot_and_on_demand(focus, "fully_loaded")["spot"][1]
    assert abs(spot_total - D("1.5444444444")) < D("1e-9")


def test_focus_classification_from_its_own_columns(focus) -> None:
    rows = focus.execute(
        "select distinct service_name, cost_class, usage_kind, gpu_model, gpu_count, "
        "commitment_status, pricing_category from normalized.cost_line_profiles "
        "where cost_class in ('accelerator', 'storage') or commitment_status is not null "
        "order by all"
    ).fetchall()
    assert rows == [
        ("Amazon Elastic Compute Cloud", "accelerator", "instance", "A100", 8, None, "Standard"),
        ("Amazon Elastic Compute Cloud", "accelerator", "instance", "A10G", None, None, "Dynamic"),
        ("Amazon Elastic Compute Cloud", "storage", "disk", None, None, None, "Standard"),
        ("Amazon Simple Storage Service", "storage", "stored_data", None, None, None, "Standard"),
        ("Compute Engine", "accelerator", "instance", "T4", None, None, "Standard"),
        ("Virtual Machines", "compute", None, None, None, "Unused", "Standard"),
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
    reason="PySpark needs a Java runtime, 17 or later (.ci/run installs one)",
)
def test_focus_economics_give_the_same_tables_on_spark(tmp_path: Path) -> None:
    """The classification's rules (regular expressions, JSON text, macros) transpiled by sqlglot:
    every published table of the FOCUS economics world equals DuckDB's on Spark (the GCP world
    runs on Spark in tests/e2e/test_spark_cluster.py)."""
    local = (
        '[spark.conf]\n"spark.sql.shuffle.partitions" = 1\n"spark.default.parallelism" = 1\n'
        '"spark.sql.adaptive.enabled" = false\n'
    )
    run = same_tables_on_both_engines(write_focus_economics_world(tmp_path / "world"), local)
    assert run.row_counts["normalized.cost_line_facts"] == len(economics_rows())
