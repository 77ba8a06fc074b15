"""GPU utilisation from a real Prometheus (DCGM samples backfilled with promtool) beside the bill:
idle windows, coverage and the idle share of each attempt's accelerator cost, worked by hand.

The scenario, 2026-10-01 10:00-12:00 UTC, one sample a minute at :30 (scrapes are not on the
minute), idle below 5 %:

- att-a and att-b share i-node1 (p4d.24xlarge, $32 an hour, 8 GPUs): 4 GPUs each, by pod.
  a0 is idle (0 %) 10:30-11:00, else 80 %; a1 has a gap 11:00-11:20 (no sample, not zero); the
  exporter of a2 and a3 restarted at 11:00 (a new series, same GPU labels). b0-b3 are idle (2 %)
  10:00-11:00, then 100 %.
- att-c's pod was rescheduled: train-c-0 on i-node2 10:00-11:00, train-c-1 on i-node3
  11:00-12:00 (g5.12xlarge, $6 an hour, 4 GPUs each). c0 idle 10:00-10:15, c4 idle (3 %) all
  hour, the others 60 %.
- att-d held i-node4 (g5.12xlarge, $6) 10:00-11:00 and Prometheus has no sample of it.
"""

from __future__ import annotations

import datetime as dt
import http.server
import logging
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from builders import at, cur_line, records, sql_models, write_cur
from prometheus_server import Sample, free_port, prometheus_server

from pipeline.common.errors import InputError
from pipeline.config.loader import parse_config
from pipeline.dag.build import build
from pipeline.dag.pools import pool_models
from pipeline.run.history import set_clock
from pipeline.run.settings import write_settings
from pipeline.run.sources import register_sources
from pipeline.telemetry.adapters import read_sources
from pipeline.telemetry.prometheus import read

METRIC = "DCGM_FI_DEV_GPU_UTIL"
CLOCK = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)
LABEL = "telemetry.sources[1] (prometheus)"


def minutes(start: dt.datetime, count: int) -> list[float]:
    """The sample times of `count` minutes from `start`, each at :30."""
    return [start.timestamp() + 30 + 60 * n for n in range(count)]


def gpu(uuid: str, host: str, pod: str, **extra: str) -> dict[str, str]:
    return {"UUID": uuid, "gpu": uuid[-1], "Hostname": host, "namespace": "ml", "pod": pod, **extra}


def scenario_samples() -> list[Sample]:
    found = []

    def series(labels: dict[str, str], start: dt.datetime, count: int, value: float) -> None:
        found.extend(Sample(labels, t, value) for t in minutes(start, count))

    exporter = {"instance": "10.0.0.7:9400"}
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(10), 30, 80)
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(10, 30), 30, 0)
    series(gpu("GPU-a0", "gpu-01", "train-a-0"), at(11), 60, 80)
    series(gpu("GPU-a1", "gpu-01", "train-a-0"), at(10), 60, 80)
    series(gpu("GPU-a1", "gpu-01", "train-a-0"), at(11, 20), 40, 80)  # 11:00-11:20: no sample
    for uuid in ("GPU-a2", "GPU-a3"):  # the exporter restarted at 11:00 with another address
        series(gpu(uuid, "gpu-01", "train-a-0", **exporter), at(10), 60, 80)
        series(gpu(uuid, "gpu-01", "train-a-0", instance="10.0.0.9:9400"), at(11), 60, 80)
    for n in range(4):
        series(gpu(f"GPU-b{n}", "gpu-01", "train-b-0"), at(10), 60, 2)
        series(gpu(f"GPU-b{n}", "gpu-01", "train-b-0"), at(11), 60, 100)
    series(gpu("GPU-c0", "gpu-02", "train-c-0"), at(10), 15, 0)
    series(gpu("GPU-c0", "gpu-02", "train-c-0"), at(10, 15), 45, 60)
    for n in (1, 2, 3):
        series(gpu(f"GPU-c{n}", "gpu-02", "train-c-0"), at(10), 60, 60)
    series(gpu("GPU-c4", "gpu-03", "train-c-1"), at(11), 60, 3)
    for n in (5, 6, 7):
        series(gpu(f"GPU-c{n}", "gpu-03", "train-c-1"), at(11), 60, 60)
    # another namespace's pod of the same name: selected by the regex, never matched
    series({**gpu("GPU-x0", "gpu-09", "train-a-0"), "namespace": "other"}, at(10), 60, 0)
    return found


ATTEMPTS = [
    {"attempt_id": "att-a", "experiment_id": "exp-1", "status": "succeeded"},
    {"attempt_id": "att-b", "experiment_id": "exp-2", "status": "succeeded"},
    {"attempt_id": "att-c", "experiment_id": "exp-1", "status": "succeeded"},
    {"attempt_id": "att-d", "experiment_id": "exp-2", "status": "failed"},
]
RESOURCES = [  # attempt, instance, pod, start, end, GPUs
    ("att-a", "i-node1", "ml/train-a-0", at(10), at(12), 4),
    ("att-b", "i-node1", "ml/train-b-0", at(10), at(12), 4),
    ("att-c", "i-node2", "ml/train-c-0", at(10), at(11), 4),
    ("att-c", "i-node3", "ml/train-c-1", at(11), at(12), 4),
    ("att-d", "i-node4", "ml/train-d-0", at(10), at(11), 4),
]


def write_telemetry(folder: Path) -> Path:
    """The scenario's canonical telemetry files (attempt_resources with the pods)."""
    folder.mkdir(parents=True, exist_ok=True)
    spans = {}
    for attempt, _instance, _pod, start, end, _gpus in RESOURCES:
        low, high = spans.get(attempt, (start, end))
        spans[attempt] = (min(low, start), max(high, end))
    lines = ["attempt_id,experiment_id,status,started_at,ended_at,gpu_count"]
    for row in ATTEMPTS:
        start, end = spans[row["attempt_id"]]
        lines.append(
            f"{row['attempt_id']},{row['experiment_id']},{row['status']},"
            f"{start.isoformat()},{end.isoformat()},4"
        )
    (folder / "attempts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = ["attempt_id,resource_id,resource_kind,started_at,ended_at,gpu_count,pod"]
    for attempt, instance, pod, start, end, gpus in RESOURCES:
        lines.append(
            f"{attempt},{instance},ec2_instance,{start.isoformat()},{end.isoformat()},{gpus},{pod}"
        )
    (folder / "attempt_resources.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def bill() -> list[dict]:
    def hour(instance: str, kind: str, start: int, cost: float) -> dict:
        return cur_line(
            line_item_resource_id=instance,
            product_instance_type=kind,
            line_item_usage_type=f"BoxUsage:{kind}",
            line_item_usage_start_date=at(start),
            line_item_usage_end_date=at(start + 1),
            line_item_unblended_cost=cost,
            line_item_net_unblended_cost=cost,
        )

    return [
        hour("i-node1", "p4d.24xlarge", 10, 32.0),
        hour("i-node1", "p4d.24xlarge", 11, 32.0),
        hour("i-node2", "g5.12xlarge", 10, 6.0),
        hour("i-node3", "g5.12xlarge", 11, 6.0),
        hour("i-node4", "g5.12xlarge", 10, 6.0),
    ]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with prometheus_server(
        tmp_path_factory.mktemp("prometheus"), METRIC, scenario_samples()
    ) as url:
        yield url


def source_config(folder: Path, url: str, **options: object) -> dict:
    return {
        "telemetry": {
            "path": str(write_telemetry(folder / "telemetry")),
            "sources": [{"kind": "prometheus", "options": {"url": url, "by": "pod", **options}}],
        }
    }


@pytest.fixture(scope="module")
def built(
    prometheus: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, pa.Table], list[str]]]:
    """The scenario's telemetry read with the Prometheus source (in queries of 2 pods and 40
    steps, so the hours are cut into several queries), and every model built over its bill."""
    folder = tmp_path_factory.mktemp("world")
    config = parse_config(
        source_config(folder, prometheus, batch=2, points_per_query=40), base=folder
    )
    handler = _Records()
    logging.getLogger("runcost").addHandler(handler)
    try:
        telemetry = read_sources(config, now=CLOCK)
    finally:
        logging.getLogger("runcost").removeHandler(handler)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    write_settings(con, config)
    set_clock(con, CLOCK)
    register_sources(con, write_cur(folder, bill()), telemetry)
    report = build(con, [*sql_models(), *pool_models(config)])
    assert report.check_failures == []
    yield con, telemetry, handler.messages
    con.close()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_idle_gpu_cost_per_attempt_equals_the_hand_worked_figures(built) -> None:
    con, _telemetry, _messages = built
    rows = records(
        con,
        "select attempt_id, allocation_model, method, held_gpu_hours, sampled_gpu_hours, "
        "coverage, busy_gpu_hours, idle_gpu_hours, idle_windows, accelerator_cost, idle_cost, "
        "unsampled_cost, active_cost from marts.gpu_utilisation order by all",
    )
    got = {(row["attempt_id"], row["allocation_model"]): row for row in rows}
    assert len(rows) == 8  # 4 attempts x 2 models
    # held GPU-hours: 4 GPUs x 2 h (a, b), 4 x 1 h on each of two nodes (c), 4 x 1 h (d)
    # sampled: a lost a1's 20 minutes (460 of 480 GPU-minutes); d has none
    # busy: a 0.8 x (90 + 100 + 120 + 120) min = 344 min; b 4 x 60 min x (0.02 + 1.0) = 244.8 min;
    #   c 0.6 x (45 + 3 x 60 + 3 x 60) min + 0.03 x 60 min = 244.8 min
    # idle: a0 30 min; b 4 x 60 min; c0 15 min + c4 60 min
    # cost: half of i-node1's $64 each for a and b (they hold it by GPU-seconds alike), c $6 + $6,
    #   d $6; idle_cost = cost x idle / held; unsampled_cost = cost x (held - sampled) / held
    expected = {
        "att-a": (8.0, 460 / 60, 460 / 480, 344 / 60, 0.5, 1, "32", "2", "1.3333333333"),
        "att-b": (8.0, 8.0, 1.0, 244.8 / 60, 4.0, 4, "32", "16", "0"),
        "att-c": (8.0, 8.0, 1.0, 244.8 / 60, 1.25, 2, "12", "1.875", "0"),
        "att-d": (4.0, 0.0, 0.0, 0.0, 0.0, 0, "6", "0", "6"),
    }
    for (attempt, model), row in got.items():
        held, sampled, coverage, busy, idle, windows, cost, idle_cost, unsampled = expected[attempt]
        assert row["method"] == "prometheus_pod"
        assert row["held_gpu_hours"] == pytest.approx(held, abs=1e-9), (attempt, model)
        assert row["sampled_gpu_hours"] == pytest.approx(sampled, abs=1e-9), (attempt, model)
        assert row["coverage"] == pytest.approx(coverage, abs=1e-9), (attempt, model)
        assert row["busy_gpu_hours"] == pytest.approx(busy, abs=1e-9), (attempt, model)
        assert row["idle_gpu_hours"] == pytest.approx(idle, abs=1e-9), (attempt, model)
        assert row["idle_windows"] == windows, (attempt, model)
        assert row["accelerator_cost"] == Decimal(cost), (attempt, model)
        assert row["idle_cost"] == Decimal(idle_cost), (attempt, model)
        assert row["unsampled_cost"] == Decimal(unsampled), (attempt, model)
        # to the cent, and the three parts sum exactly to the accelerator cost
        assert row["idle_cost"].quantize(Decimal("0.01")) == Decimal(idle_cost).quantize(
            Decimal("0.01")
        )
        total = row["idle_cost"] + row["unsampled_cost"] + row["active_cost"]
        assert total == row["accelerator_cost"]


def test_idle_windows_name_the_gpus_and_times(built) -> None:
    con, _telemetry, _messages = built
    rows = con.execute(
        "select attempt_id, resource_id, gpu, started_at, ended_at, sampled_gpu_seconds, "
        "samples from staging.gpu_usage where state = 'idle' order by all"
    ).fetchall()
    assert rows == [
        ("att-a", "i-node1", "GPU-a0", at(10, 30), at(11), 1800.0, 30),
        ("att-b", "i-node1", "GPU-b0", at(10), at(11), 3600.0, 60),
        ("att-b", "i-node1", "GPU-b1", at(10), at(11), 3600.0, 60),
        ("att-b", "i-node1", "GPU-b2", at(10), at(11), 3600.0, 60),
        ("att-b", "i-node1", "GPU-b3", at(10), at(11), 3600.0, 60),
        ("att-c", "i-node2", "GPU-c0", at(10), at(10, 15), 900.0, 15),
        ("att-c", "i-node3", "GPU-c4", at(11), at(12), 3600.0, 60),
    ]
    # the gap ends a1's busy window (no sample is not zero); the restart does not end a2's:
    # the queries' cuts are merged back, so one window spans the two hours
    busy = con.execute(
        "select gpu, started_at, ended_at, samples from staging.gpu_usage "
        "where gpu in ('GPU-a1', 'GPU-a2') and state = 'busy' order by all"
    ).fetchall()
    assert busy == [
        ("GPU-a1", at(10), at(11), 60),
        ("GPU-a1", at(11, 20), at(12), 40),
        ("GPU-a2", at(10), at(12), 120),
    ]


def test_an_attempt_without_samples_is_named_and_has_coverage_0(built) -> None:
    _con, telemetry, messages = built
    warning = [message for message in messages if "no DCGM_FI_DEV_GPU_UTIL sample" in message]
    assert warning == [
        f"{LABEL}: 1 attempt(s) have no DCGM_FI_DEV_GPU_UTIL sample in their held GPU intervals "
        "(coverage 0; Prometheus may have dropped data older than its retention, or the series "
        "lack the namespace and pod labels): att-d"
    ]
    unsampled = [row for row in telemetry["gpu_usage"].to_pylist() if row["state"] == "unsampled"]
    assert [(row["attempt_id"], row["resource_id"], row["gpu"]) for row in unsampled] == [
        ("att-d", "i-node4", None)
    ]


def test_by_host_shares_a_nodes_gpus_between_the_attempts_holding_it(
    prometheus: str, tmp_path: Path
) -> None:
    # the same series by Hostname through a node map: the host's 8 GPUs are not told apart by
    # attempt, so att-a and att-b (4 of 8 GPUs each) take half of every GPU's seconds
    node_map = tmp_path / "nodes.csv"
    node_map.write_text(
        "node,instance_id,valid_from,valid_to\n"
        "gpu-01,i-node1,2026-10-01T00:00:00Z,\n"
        "gpu-02,i-node2,2026-10-01T00:00:00Z,2026-10-01T11:00:00Z\n",
        encoding="utf-8",
    )
    config = source_config(tmp_path, prometheus)
    folder = Path(config["telemetry"]["path"])
    from pipeline.telemetry.files import load_telemetry

    tables = load_telemetry(folder, now=CLOCK)
    source = {"kind": "prometheus", "path": node_map, "options": {"url": prometheus, "by": "host"}}
    usage = read(source, LABEL, tables, CLOCK).to_pylist()
    totals: dict[str, list[float]] = {}
    for row in usage:
        total = totals.setdefault(row["attempt_id"], [0.0, 0.0])
        total[0] += row["sampled_gpu_seconds"]
        total[1] += row["sampled_gpu_seconds"] if row["state"] == "idle" else 0.0
    # i-node1: 460 + 480 sampled GPU-minutes, idle 30 + 240; half each
    assert totals["att-a"] == pytest.approx([470 * 60, 135 * 60])
    assert totals["att-b"] == pytest.approx([470 * 60, 135 * 60])
    # i-node2 is gpu-02 until 11:00 (c's first hour); gpu-03 is in no map: c4-c7 are not matched
    assert totals["att-c"] == pytest.approx([240 * 60, 15 * 60])
    assert totals["att-d"] == [0.0, 0.0]
    assert {row["method"] for row in usage} == {"host"}


class _HtmlServer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>Sign in</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def login_page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _HtmlServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _read_with(tmp_path: Path, url: str, **options: object) -> None:
    config = parse_config(source_config(tmp_path, url, **options), base=tmp_path)
    read_sources(config, now=CLOCK)


def test_an_unreachable_prometheus_is_one_error_naming_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipeline.telemetry.prometheus_api.RETRY_SECONDS", 0.01)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(InputError) as error:
        _read_with(tmp_path, url)
    assert str(error.value).startswith(f"{LABEL}: {url}: cannot reach Prometheus (")
    assert str(error.value).endswith(
        f") after 3 tries; check options.url and that {url}/-/ready answers"
    )


def test_a_page_that_is_not_json_is_one_error(tmp_path: Path, login_page: str) -> None:
    with pytest.raises(InputError) as error:
        _read_with(tmp_path, login_page)
    assert str(error.value) == (
        f"{LABEL}: {login_page}/api/v1/query_range did not answer JSON (it begins "
        "b'<html><body>Sign in</body></html>'); is options.url the Prometheus API's address, "
        "not a login page?"
    )


def test_a_query_prometheus_refuses_is_one_error(tmp_path: Path, prometheus: str) -> None:
    with pytest.raises(InputError) as error:
        _read_with(tmp_path, prometheus, pod_label="exported-pod")
    assert str(error.value).startswith(f"{LABEL}: {prometheus}: Prometheus refused the query (")
    assert str(error.value).endswith(
        "); check options.metric and the label options (pod_label, namespace_label, host_label)"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"by": "node"},
            'options.by = \'node\' is not "pod" or "host"; set by = "pod" (series labelled '
            'with the Kubernetes namespace and pod) or by = "host" (series labelled Hostname, '
            "with the node map as the source's path)",
        ),
        (
            {"token": "s3cret"},
            "options.token would put a secret in runcost.toml; remove it and set "
            'options.token_env = "NAME" with the secret exported as NAME where runcost runs',
        ),
        (
            {"step": 0},
            "options.step = 0 is not a number from 1 to 3600; remove it for the default 60",
        ),
        (
            {"token_env": "RUNCOST_TEST_UNSET_TOKEN"},
            "options.token_env names RUNCOST_TEST_UNSET_TOKEN, which is not set in the "
            "environment; export RUNCOST_TEST_UNSET_TOKEN=<token> where runcost runs",
        ),
    ],
)
def test_bad_options_are_one_error(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(InputError) as error:
        _read_with(tmp_path, "http://127.0.0.1:9", **options)
    assert str(error.value) == f"{LABEL}: {message}"
