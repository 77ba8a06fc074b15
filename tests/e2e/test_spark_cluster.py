"""engine = "spark" on real cluster processes: a standalone master with one worker, and a Spark
Connect server (not yet pointed at the master: its executors likely run in its own JVM).
Every world, first run on an empty
warehouse, publishes what the DuckDB engine publishes, to the last decimal; the raw billing
Parquet is read by the executors, not passed through the driver. A second night that re-delivers
one month (of a CUR or a FOCUS bill on the standalone cluster, of a CUR through Spark Connect)
builds it alone and carries the others forward: what it publishes equals a full rebuild of the
same inputs, and the carried months' Parquet is the snapshot's, linked."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from engine_compare import assert_same_tables, spark_twin
from history_world import EXPORT, MONTHS, World, differences, published
from spark_cluster import APP_SETTINGS, connect_server, standalone_cluster

from pipeline.config.loader import load_config
from pipeline.run.nightly import RunResult, run_pipeline
from pipeline.run.sources import TELEMETRY_TABLES
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import current_snapshot

pytest.importorskip("pyspark", reason="the Spark engine needs the spark extra")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip(
        "PySpark needs a Java runtime, 17 or later (.ci/run installs one)", allow_module_level=True
    )

# one xdist worker runs every test of the group, so each cluster process starts once
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark-cluster")]
# small worlds: a few shuffle partitions, no adaptive re-planning
RUN_SETTINGS = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
}


def _gcp_world(folder: Path) -> Path:
    from pipeline.scenario.gcp_scenario import write_gcp_scenario

    return write_gcp_scenario(folder)


def _focus_world(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/focus_world.py
    from focus_world import write_focus_world

    return write_focus_world(folder)


WORLDS: dict[str, Callable[[Path], Path]] = {
    "demo": write_scenario,  # AWS CUR 2.0, pools, periods
    "gcp": _gcp_world,  # credits arrays, label maps, invoice months in Pacific time
    "focus": _focus_world,  # FOCUS CSV and Parquet, JSON tags
}


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as url:
        yield url


@pytest.fixture
def cluster_session(master: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """This process as the driver of an application on the standalone cluster (the one of the
    previous test, if it is running: the runs leave a cluster session running)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("runcost-tests")
    settings = {**APP_SETTINGS, **RUN_SETTINGS}
    settings["spark.local.dir"] = str(tmp_path_factory.mktemp("driver-local"))
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@pytest.fixture(scope="session")
def remote(master: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from pyspark.sql import SparkSession

    # a Connect session cannot start beside a classic one: stop the standalone tests' session
    classic = SparkSession.getActiveSession()
    if classic is not None:
        classic.stop()
    with connect_server(tmp_path_factory.mktemp("connect"), master=master) as url:
        yield url
    # a Connect client marks the process as Connect-only; later classic sessions must not be
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


@pytest.fixture(scope="session")
def duckdb_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """Each world's DuckDB run, once for both cluster modes: (config file, result)."""
    runs: dict[str, tuple[Path, Any]] = {}
    for name, write in WORLDS.items():
        config_file = write(tmp_path_factory.mktemp(f"world-{name}") / "world")
        runs[name] = (config_file, run_pipeline(load_config(config_file)))
    return runs


def _conf(settings: dict[str, str]) -> str:
    return "[spark.conf]\n" + "".join(f'"{key}" = "{value}"\n' for key, value in settings.items())


@pytest.fixture
def inspected(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the Spark engine read, captured before it closes: per raw view its input files
    and its plan, and the rows of every table that went through the driver."""
    from pipeline.dag.engines.spark.engine import SparkEngine

    seen: dict[str, Any] = {}
    close = SparkEngine.close

    def inspect_then_close(engine: SparkEngine) -> None:
        seen["through_driver"] = dict(engine.inputs.through_driver)
        seen["listed"] = dict(engine.inputs.read_by_executors)
        for qualified in engine.inputs.read_by_executors:
            frame = engine.session.table(qualified.replace(".", "__"))
            plan = io.StringIO()
            with contextlib.redirect_stdout(plan):
                frame.explain()
            seen[qualified] = (frame.inputFiles(), plan.getvalue())
        close(engine)

    monkeypatch.setattr(SparkEngine, "close", inspect_then_close)
    return seen


def _run_on_cluster(
    duckdb_runs: dict[str, tuple[Path, Any]], world: str, mode: str, spark: str
) -> None:
    config_file, duckdb_run = duckdb_runs[world]
    twin = spark_twin(config_file, spark + _conf(RUN_SETTINGS), name=f"spark-{mode}")
    spark_run = run_pipeline(load_config(twin))
    assert_same_tables(duckdb_run, spark_run)
    # a Spark engine with no shared Parquet would have left nothing to move into the snapshot
    assert sorted(path.name for path in (spark_run.snapshot / "marts").iterdir()) == sorted(
        path.name for path in (duckdb_run.snapshot / "marts").iterdir()
    )
    # the next night on the same inputs is decided before any build: no Spark job runs
    again = run_pipeline(load_config(twin))
    assert again.status == "unchanged" and again.snapshot == spark_run.snapshot
    assert "build" not in again.stage_seconds and again.content_hashes == spark_run.content_hashes


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_every_world_on_a_standalone_cluster(
    world: str, master: str, cluster_session: Any, duckdb_runs: dict, inspected: dict
) -> None:
    _run_on_cluster(duckdb_runs, world, "standalone", f'[spark]\nmaster = "{master}"\n')
    _assert_executors_read_the_bill(inspected, world, _cost_lines(duckdb_runs, world))


def _night_on_cluster(world: World, warehouse: Path, spark: str, **options: object) -> RunResult:
    """One night of the history ``world`` on ``warehouse``, built on the Spark cluster."""
    config = world.write_config(warehouse)
    config.write_text('engine = "spark"\n' + config.read_text(encoding="utf-8") + spark)
    return run_pipeline(load_config(config), now=world.clock, **options)


@pytest.fixture
def carried_by_engine(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What a Spark build with carried periods finished with: per table it carried periods
    into, whether each file of its carried partitions in the Parquet the executors wrote
    (before publish moves it) is the snapshot's file; the billing periods the temp views of
    the lines and slices (built before the carry, read by models that combine periods) hold."""
    from pipeline.dag.engines.spark.engine import SparkEngine

    seen: dict[str, Any] = {}
    finish = SparkEngine.finish

    def finish_then_look(engine: SparkEngine, *args: Any, **kwargs: Any) -> Any:
        outcome = finish(engine, *args, **kwargs)
        for name, held in engine.carried.items():
            for source in held.partitions:
                written = outcome.published_files[name] / source.name
                seen.setdefault(name, []).extend(
                    (written / path.name).stat().st_ino == path.stat().st_ino
                    for path in source.iterdir()
                )
        if engine.carried:
            for view in ("normalized__cost_lines", "allocation__cost_slices"):
                frame = engine.session.table(view).select("billing_period").distinct()
                seen[view] = sorted(row[0] for row in frame.collect())
        return outcome

    monkeypatch.setattr(SparkEngine, "finish", finish_then_look)
    return seen


@pytest.mark.parametrize("provider", ["aws", "focus"])
def test_a_second_night_on_a_cluster_builds_the_re_delivered_month_alone(
    provider: str, master: str, cluster_session: Any, carried_by_engine: dict, tmp_path: Path
) -> None:
    spark = f'[spark]\nmaster = "{master}"\n' + _conf(RUN_SETTINGS)
    _second_night(World(tmp_path / "inputs", provider), spark, carried_by_engine, tmp_path)


def _second_night(world: World, spark: str, carried_by_engine: dict, tmp_path: Path) -> None:
    """A first night on the cluster, then one re-delivering the newest month: that month is
    built alone, the others carried (their Parquet the snapshot's files), and every published
    table equals a full rebuild on the cluster of the same inputs."""
    (world.root / "exports" / EXPORT / "data").mkdir(parents=True)
    for period in MONTHS:
        world.deliver(period)
    world.write_telemetry()
    warehouse = tmp_path / "warehouse"
    assert _night_on_cluster(world, warehouse, spark).status == "published"
    assert not carried_by_engine  # a first night carries nothing
    shutil.copytree(warehouse, tmp_path / "rebuilt", symlinks=True)
    pointer = current_snapshot(warehouse)
    assert pointer is not None
    before = Path(pointer["snapshot"])
    newest = MONTHS[-1]
    world.deliveries[newest] += 1
    world.surcharge[newest] = Decimal("0.37")
    world.deliver(newest)

    result = _night_on_cluster(world, warehouse, spark)

    record = json.loads(Path(result.manifest).read_text(encoding="utf-8"))
    assert record["inputs"]["carried"] == list(MONTHS[:-1])
    assert {month: item["action"] for month, item in record["period_builds"].items()} == {
        **dict.fromkeys(MONTHS[:-1], "carried forward"),
        newest: "built",
    }
    # the views built before the carry were made again over every month's rows
    linked = dict(carried_by_engine)
    assert linked.pop("normalized__cost_lines") == list(MONTHS)
    assert linked.pop("allocation__cost_slices") == list(MONTHS)
    # the executors wrote the built month alone: every carried partition is the snapshot's files
    assert "normalized.cost_line_facts" in linked
    assert all(all(found) for found in linked.values()), linked
    partition = Path("normalized") / "cost_line_facts" / f"billing_period={MONTHS[0]}"
    for path in (Path(result.snapshot) / partition).iterdir():
        assert path.stat().st_ino == (before / partition / path.name).stat().st_ino
    # the same raw, every month built on the cluster
    reference = tmp_path / "rebuilt"
    shutil.rmtree(reference / "raw")
    shutil.copytree(warehouse / "raw", reference / "raw", symlinks=True)
    rebuilt = _night_on_cluster(world, reference, spark, full_refresh=True)
    rebuilt_record = json.loads(Path(rebuilt.manifest).read_text(encoding="utf-8"))
    assert rebuilt_record["inputs"].get("carried") is None
    assert differences(published(result.database), published(rebuilt.database)) == {}
    assert result.content_hashes == rebuilt.content_hashes


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_every_world_on_spark_connect(
    world: str, remote: str, duckdb_runs: dict, inspected: dict
) -> None:
    try:
        _run_on_cluster(duckdb_runs, world, "connect", f'[spark]\nremote = "{remote}"\n')
    finally:
        # a Connect client marks the process Connect-only: the next classic session in this
        # worker (test_spark_engine's) must not inherit it
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    _assert_executors_read_the_bill(inspected, world, _cost_lines(duckdb_runs, world))


def test_a_second_night_on_spark_connect_builds_the_re_delivered_month_alone(
    remote: str, carried_by_engine: dict, tmp_path: Path
) -> None:
    spark = f'[spark]\nremote = "{remote}"\n' + _conf(RUN_SETTINGS)
    try:
        _second_night(World(tmp_path / "inputs", "aws"), spark, carried_by_engine, tmp_path)
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def _cost_lines(duckdb_runs: dict[str, tuple[Path, Any]], world: str) -> int:
    return int(duckdb_runs[world][1].row_counts["normalized.cost_line_facts"])


BILL = {"demo": "raw.aws_cur2", "gcp": "raw.gcp_billing", "focus": "raw.focus_billing"}


def _assert_executors_read_the_bill(inspected: dict[str, Any], world: str, cost_lines: int) -> None:
    """The bill's Spark plan scans its Parquet files; only small tables came from the driver."""
    bill = BILL[world]
    files, plan = inspected[bill]
    listed = {os.path.realpath(path) for path in inspected["listed"][bill]}
    assert listed, bill  # the world has a bill to read
    assert {os.path.realpath(unquote(urlparse(uri).path)) for uri in files} == listed
    assert "parquet" in plan.lower() and "Scan" in plan, plan
    driver = inspected["through_driver"]
    assert not set(driver) & set(BILL.values())
    # settings, telemetry and lists of files (a row per delivery file): nothing bill-sized
    telemetry = max(driver[f"raw.{name}"] for name in TELEMETRY_TABLES)
    assert max(driver.values()) <= max(telemetry, len(listed)), driver
    assert max(driver.values()) < cost_lines


def test_spark_connect_session_reads_tags_in_nfc(
    remote: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """nfc_normalize, a UDF runcost registers (Spark has none), runs on the Connect server: a
    decomposed tag reads as the composed attempt id, as in DuckDB."""
    from pipeline.config.engine import SparkOptions
    from pipeline.dag.engines.spark.session import open_session
    from pipeline.dag.engines.spark.transpile import to_spark

    nfd, nfc = unicodedata.normalize("NFD", "att-café"), unicodedata.normalize("NFC", "att-café")
    sql = f"select nfc_normalize('{nfd}') as tag, nfc_normalize('att-llm-01') as plain"
    session, _started = open_session(SparkOptions(remote=remote), tmp_path_factory.mktemp("nfc"))
    try:
        assert [tuple(row) for row in session.sql(to_spark(sql)).collect()] == [(nfc, "att-llm-01")]
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
