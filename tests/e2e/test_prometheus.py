"""GPU utilisation from a real Prometheus (DCGM samples backfilled with promtool) beside the bill:
idle windows, coverage and the idle share of each attempt's accelerator cost, worked by hand.

The scenario is tests/prometheus_world.py's. Its bill is AWS (i-node1 a p4d.24xlarge at $32 an
hour, the others g5.12xlarge at $6), Google Cloud (i-node1's A100 GPU SKU at $32 an hour
beside its N1 cores at $5, which are compute, not accelerator; the others G2 machines at $6,
their GPUs in the machine price) or a FOCUS 1.2 file (i-node1's GPUs at $32 an hour named by
SkuPriceDetails' GpuCount beside its cores at $5, which name no GPU; the others AWS rows whose
x_UsageType is BoxUsage:g5.12xlarge): the accelerator cost is read from the line profiles'
provider-neutral classification, so all three give the same figures.
"""

from __future__ import annotations

import http.server
import json
import logging
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from builders import at, cur_line, ingest_with, records, sql_models, write_cur
from focus_world import row as focus_row
from focus_world import write_mixed_csv
from prometheus_server import free_port, prometheus_server
from prometheus_world import CLOCK, EXPECTED, METRIC, scenario_samples, source_config
from sql.gcp_rows import gcp_row, write_gcp

from pipeline.common.errors import InputError
from pipeline.config.loader import parse_config
from pipeline.dag.build import build
from pipeline.dag.pools import pool_models
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.run.history import set_clock
from pipeline.run.settings import write_settings
from pipeline.run.sources import register_sources
from pipeline.telemetry.adapters import read_sources
from pipeline.telemetry.prometheus import read
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery

LABEL = "telemetry.sources[1] (prometheus)"


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


def gcp_bill(folder: Path) -> list[Delivery]:
    def hour(instance: str, sku: str, start: int, cost: float, spec: str) -> dict:
        return gcp_row(
            sku={"id": "0000-0000-0001", "description": sku},
            resource=instance,
            system_labels={"compute.googleapis.com/machine_spec": spec},
            usage_start_time=at(start),
            usage_end_time=at(start + 1),
            usage={"amount": 3600.0, "unit": "seconds", "amount_in_pricing_units": 1.0,
                   "pricing_unit": "hour"},
            invoice={"month": "202610"},
            cost=cost,
        )  # fmt: skip

    a100 = "Nvidia Tesla A100 GPU running in Americas"
    n1_core = "N1 Predefined Instance Core running in Americas"
    g2_core = "G2 Instance Core running in Americas"
    rows = [
        *(hour("i-node1", a100, start, 32.0, "n1-standard-96") for start in (10, 11)),
        *(hour("i-node1", n1_core, start, 5.0, "n1-standard-96") for start in (10, 11)),
        hour("i-node2", g2_core, 10, 6.0, "g2-standard-48"),
        hour("i-node3", g2_core, 11, 6.0, "g2-standard-48"),
        hour("i-node4", g2_core, 10, 6.0, "g2-standard-48"),
    ]
    return [write_gcp(folder / "gcp", rows, day="2026-10-01")]


def focus_bill(folder: Path) -> list[Delivery]:
    """The bill as one FOCUS 1.2 CSV in the FOCUS sample's layout, ingested as runcost ingests
    a configured FOCUS file set."""

    def hour(instance: str, start: int, cost: str, **values: str) -> dict[str, str]:
        line = {
            "ResourceId": instance, "ChargePeriodStart": f"2026-10-01 {start}:00:00",
            "ChargePeriodEnd": f"2026-10-01 {start + 1}:00:00", "ConsumedQuantity": "1",
            "ConsumedUnit": "Hours", "PricingQuantity": "1", "PricingUnit": "Hours",
            "ServiceSubcategory": "Virtual Machines", "BilledCost": cost, "EffectiveCost": cost,
            "ListCost": cost, "InvoiceId": "INV-2026-10", "SkuPriceDetails": "NULL",
            "x_UsageType": "NULL",
        }  # fmt: skip
        return focus_row("AWS", 10, **{**line, **values})

    google = {"ProviderName": "Google Cloud", "PublisherName": "Google Cloud",
              "InvoiceIssuerName": "Google Cloud", "BillingAccountId": "01A2B3-C4D5E6-F7A8B9",
              "BillingAccountName": "Google billing", "ServiceName": "Compute Engine",
              "InvoiceId": "GCP-2026-10"}  # fmt: skip
    # i-node1 (Google Cloud rows in the same file): its eight GPUs priced apart from its cores.
    # Only SkuPriceDetails' GpuCount marks the GPU rows (their description names no GPU); the
    # core rows name none, so they are compute and must stay out of the accelerator cost
    gpus = {**google, "SkuPriceDetails": '{"GpuCount": 8}', "ChargeDescription": "A100 80GB"}
    cores = {**google, "SkuPriceDetails": '{"CoreCount": 96}',
             "ChargeDescription": "N1 Predefined Instance Core running in Americas"}  # fmt: skip
    # the others: AWS rows whose usage type alone names a GPU instance (g5)
    g5 = {"ServiceName": "Amazon Elastic Compute Cloud", "x_UsageType": "USE1-BoxUsage:g5.12xlarge"}
    rows = [
        *(hour("i-node1", start, "32.0000000000", **gpus) for start in (10, 11)),
        *(hour("i-node1", start, "5.0000000000", **cores) for start in (10, 11)),
        hour("i-node2", 10, "6.0000000000", **g5),
        hour("i-node3", 11, "6.0000000000", **g5),
        hour("i-node4", 10, "6.0000000000", **g5),
    ]
    write_mixed_csv(folder / "focus" / "focus_2026_10.csv", rows)
    deliveries = ingest_with(
        ingest_focus_files, parse_config({"focus": {"files": ["focus"]}}, base=folder)
    )
    versions = [
        json.loads((item.folder / DELIVERY_FILE).read_text(encoding="utf-8"))["focus_versions"]
        for item in deliveries
    ]
    assert versions == [["1.2"]]
    return deliveries


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with prometheus_server(
        tmp_path_factory.mktemp("prometheus"), METRIC, scenario_samples()
    ) as url:
        yield url


@pytest.fixture(scope="module", params=["aws", "gcp", "focus"])
def built(
    request: pytest.FixtureRequest, prometheus: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, pa.Table], list[str]]]:
    """The scenario's telemetry read with the Prometheus source (in queries of 2 pods and 40
    steps, so the hours are cut into several queries), and every model built over its bill,
    AWS, Google Cloud or FOCUS."""
    folder = tmp_path_factory.mktemp("world")
    kind = {"aws": "ec2_instance", "gcp": "gce_instance", "focus": "instance"}[request.param]
    config = parse_config(
        source_config(folder, prometheus, kind, batch=2, points_per_query=40), base=folder
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
    if request.param == "aws":
        deliveries = write_cur(folder, bill())
    elif request.param == "gcp":
        deliveries = gcp_bill(folder)
    else:
        deliveries = focus_bill(folder)
    register_sources(con, deliveries, telemetry)
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
    for (attempt, model), row in got.items():
        held, sampled, coverage, busy, idle, windows, cost, idle_cost, unsampled = EXPECTED[attempt]
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


def test_gpu_idle_findings_state_the_idle_windows_cost_and_confidence(built) -> None:
    con, _telemetry, _messages = built
    rows = con.execute(
        "select subject_id, experiment_id, effective_cost, idle_hours, confidence, "
        "evidence_windows, len(evidence_line_ids) from marts.waste_findings "
        "where finding_type = 'gpu_idle' order by subject_id"
    ).fetchall()
    # the marginal idle_cost of each attempt that idled (att-d has no sample): high confidence,
    # matched by pod with coverage 460/480 (a) and 1 (b, c)
    window = {"i-node1": (at(10), at(11)), "i-node2": (at(10), at(10, 15))}
    assert rows == [
        ("att-a", "exp-1", Decimal("2"), 0.5, "high",
         [{"started_at": at(10, 30), "ended_at": at(11), "resource_id": "i-node1", "gpus": 1}], 2),
        ("att-b", "exp-2", Decimal("16"), 4.0, "high",
         [{"started_at": window["i-node1"][0], "ended_at": window["i-node1"][1],
           "resource_id": "i-node1", "gpus": 4}], 2),
        ("att-c", "exp-1", Decimal("1.875"), 1.25, "high",
         [{"started_at": at(10), "ended_at": at(10, 15), "resource_id": "i-node2", "gpus": 1},
          {"started_at": at(11), "ended_at": at(12), "resource_id": "i-node3", "gpus": 1}], 2),
    ]  # fmt: skip


def test_goodput_and_tco_show_measured_utilisation(built) -> None:
    con, _telemetry, _messages = built
    goodput = con.execute(
        "select attempt_id, mean_utilisation, busy_gpu_hours, idle_gpu_hours, "
        "utilisation_coverage from marts.attempt_goodput where allocation_model = 'marginal' "
        "order by attempt_id"
    ).fetchall()
    expected = {  # busy / sampled GPU-minutes (prometheus_world.EXPECTED)
        "att-a": (344 / 460, 344 / 60, 0.5, 460 / 480),
        "att-b": (244.8 / 480, 244.8 / 60, 4.0, 1.0),
        "att-c": (244.8 / 480, 244.8 / 60, 1.25, 1.0),
    }
    for attempt, *measured in goodput:
        if attempt == "att-d":  # held GPUs without a sample: no utilisation, coverage 0
            assert measured == [None, 0.0, 0.0, 0.0]
            continue
        assert measured == pytest.approx(list(expected[attempt]), abs=1e-9), attempt
    tco = con.execute(
        "select experiment_id, cost_category, mean_utilisation, busy_gpu_hours, idle_gpu_hours, "
        "utilisation_coverage from marts.tco_breakdown where allocation_model = 'marginal' "
        "and (cost_category = 'goodput_loss' or mean_utilisation is not null) order by all"
    ).fetchall()
    # exp-1 is att-a and att-c: (344 + 244.8) busy of (460 + 480) sampled of 960 held minutes
    assert [row[:2] for row in tco] == [("exp-1", "goodput_loss"), ("exp-2", "goodput_loss")]
    assert list(tco[0][2:]) == pytest.approx([588.8 / 940, 588.8 / 60, 1.75, 940 / 960], abs=1e-9)
    # exp-2 is att-b and att-d: 244.8 busy of 480 sampled of 720 held minutes
    assert list(tco[1][2:]) == pytest.approx([244.8 / 480, 244.8 / 60, 4.0, 480 / 720], abs=1e-9)


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
    monkeypatch.setattr("pipeline.common.http.RETRY_SECONDS", 0.01)
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
