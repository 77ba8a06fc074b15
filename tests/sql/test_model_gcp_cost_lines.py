"""staging.gcp_* and the gcp branch of cost_lines: credits, bases, names, labels, months."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from builders import build_models, line_id, records
from gcp_rows import DAY, credit, gcp_row, write_gcp

from pipeline.common.errors import InputError
from schemas import gcp_billing

D = Decimal
GPU_BY_ID = {"id": "88B8-C3ED-03F0", "description": "Accelerator running in Americas"}
A100 = {"id": "9D1B-7C2E-4A13", "description": "Nvidia Tesla A100 GPU running in Americas"}
ROWS = {
    "two-credits": gcp_row(
        cost=10.0,
        cost_at_list=12.0,
        credits=[credit("SUSTAINED_USAGE_DISCOUNT", -2.0), credit("PROMOTION", -1.5)],
    ),
    "no-credits-no-list": gcp_row(cost=3.125, credits=None),
    "cud-covered": gcp_row(
        cost=0.379332,
        cost_at_list=0.379332,
        credits=[credit("COMMITTED_USAGE_DISCOUNT", -0.379332), credit("DISCOUNT", -0.01)],
    ),
    "path-name": gcp_row(resource="projects/ml-prod/zones/us-central1-a/instances/vm-1"),
    "short-name": gcp_row(resource="vm-2"),
    "k8s-label": gcp_row(labels={"k8s-namespace": "nlp", "k8s-label/user_attempt_id": "att-1"}),
    "plain-label-wins": gcp_row(
        labels={"user_attempt_id": "att-plain", "k8s-label/user_attempt_id": "att-pod"}
    ),
    "late": gcp_row(cost=0.35, invoice={"month": "202611"}),
    "gpu-by-id": gcp_row(sku=GPU_BY_ID),
    "gpu-by-description": gcp_row(sku=A100),
    "commitment": gcp_row(
        sku={"id": "3C1E", "description": "Commitment v1: A2 Cpu in Americas for 1 Year"}
    ),
    "unused-reservation": gcp_row(
        sku=A100, system_labels={"compute.googleapis.com/is_unused_reservation": "true"}
    ),
    "disk": gcp_row(sku={"id": "D973", "description": "Balanced PD Capacity"}),
    "egress": gcp_row(
        sku={"id": "DFA5", "description": "Network Internet Egress from Americas to EMEA"}
    ),
    "tax": gcp_row(cost=1.0, cost_type="tax"),
    "rounding": gcp_row(cost=-0.003, cost_type="rounding_error"),
    "goodwill": gcp_row(cost=-5.0, cost_type="adjustment", adjustment_info={"type": "GOODWILL"}),
    "correction": gcp_row(
        sku=A100,
        cost=-0.07,
        cost_type="adjustment",
        invoice={"month": "202611"},
        adjustment_info={"id": "adj-1", "type": "USAGE_CORRECTION", "mode": "PARTIAL_CORRECTION"},
    ),
    "float-money": gcp_row(cost=0.1 + 0.2, cost_at_list=1e-10),
    # time-unit usage: the seconds the resource ran in the hour, bounded by the window
    "ran-20-minutes": gcp_row(usage={"amount": 1200.0, "unit": "seconds"}),
    "ran-15-minutes-in-hours": gcp_row(usage={"amount": 0.25, "unit": "hour"}),
    "two-gpus-whole-hour": gcp_row(usage={"amount": 7200.0, "unit": "seconds"}),
    "ram-byte-seconds": gcp_row(usage={"amount": 3.0e13, "unit": "byte-seconds"}),
    # shaped like koku's detailed sample: a zero-cost egress row of "instance-1"
    "koku-egress": gcp_row(
        sku={
            "id": "6B8F-E63D-832B",
            "description": "Network Internet Egress from Americas to APAC",
        },
        usage={"amount": 14871.0, "unit": "bytes", "amount_in_pricing_units": 1.385e-05},
        invoice={"month": "202208"},
        resource={"name": "instance-1", "global_name": "//example"},
    ),
}
NAMES = list(ROWS)


@pytest.fixture(scope="module")
def lines(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("gcp")
    delivery = write_gcp(folder / "raw", list(ROWS.values()))
    con, report = build_models(folder, [], deliveries=[delivery])
    assert not report.check_failures
    rows = records(con, "select * from normalized.cost_lines where provider = 'gcp' order by 1")
    staged = records(con, "select * from staging.gcp_billing_line_items order by line_id")
    return {
        name: {**row, "staged": item} for name, row, item in zip(NAMES, rows, staged, strict=True)
    }


def bases(line: dict) -> tuple:
    return tuple(line[name] for name in ("billed_cost", "effective_cost", "list_cost", "net_cost"))


def test_credits_are_summed_per_row_never_multiplying_cost(lines) -> None:
    line = lines["two-credits"]
    assert bases(line) == (D("10"), D("8"), D("12"), D("6.5"))
    assert line["credits_by_type"] == {"SUSTAINED_USAGE_DISCOUNT": D("-2"), "PROMOTION": D("-1.5")}
    assert line["staged"]["credits_total"] == D("-3.5")
    assert line["staged"]["credit_promotion"] == D("-1.5")


def test_no_credits_and_no_list_cost(lines) -> None:
    assert bases(lines["no-credits-no-list"]) == (D("3.125"),) * 4
    assert lines["no-credits-no-list"]["credits_by_type"] == {}


def test_committed_use_credit_is_effective_and_a_discount_only_net(lines) -> None:
    line = lines["cud-covered"]
    assert bases(line) == (D("0.379332"), D("0"), D("0.379332"), D("-0.01"))


def test_one_line_per_row_and_line_ids_above_two_to_the_56(lines) -> None:
    ids = [line["line_id"] for line in lines.values()]
    assert ids == [line_id(index, DAY, source_range=1) for index in range(len(ROWS))]
    assert all(2**56 <= line < 2 * 2**56 for line in ids)


def test_resource_id_is_the_short_name(lines) -> None:
    assert lines["path-name"]["resource_id"] == "vm-1"
    assert lines["path-name"]["staged"]["resource_name"] == (
        "projects/ml-prod/zones/us-central1-a/instances/vm-1"
    )
    assert lines["path-name"]["staged"]["resource_global_name"].startswith("//compute/")
    assert lines["short-name"]["resource_id"] == "vm-2"
    assert lines["tax"]["resource_id"] is None


def test_gke_pod_labels_are_readable_without_their_prefix(lines) -> None:
    line = lines["k8s-label"]
    assert line["tags"]["user_attempt_id"] == "att-1"
    assert line["tags"]["k8s-label/user_attempt_id"] == "att-1"
    assert line["attempt_tag"] == "att-1"


def test_a_plain_label_wins_over_a_pod_label(lines) -> None:
    assert lines["plain-label-wins"]["attempt_tag"] == "att-plain"
    assert lines["plain-label-wins"]["tags"]["k8s-label/user_attempt_id"] == "att-pod"


def test_billing_period_is_the_invoice_month_in_pacific_time(lines) -> None:
    late, regular = lines["late"], lines["two-credits"]
    assert (late["billing_period"], regular["billing_period"]) == ("2026-11", "2026-10")
    assert late["charge_period_start"] == datetime(2026, 10, 12, 10, tzinfo=UTC)
    assert regular["billing_period_start"] == datetime(2026, 10, 1, 7, tzinfo=UTC)
    assert late["billing_period_start"] == datetime(2026, 11, 1, 7, tzinfo=UTC)  # still PDT
    assert late["billing_period_end"] == datetime(2026, 12, 1, 8, tzinfo=UTC)  # PST


@pytest.mark.parametrize(
    ("name", "resource_class", "charge_category", "charge_class"),
    [
        ("two-credits", "compute", "Usage", None),
        ("gpu-by-id", "gpu", "Usage", None),
        ("gpu-by-description", "gpu", "Usage", None),
        ("commitment", "commitment", "Purchase", None),
        ("unused-reservation", "unused_reservation", "Usage", None),
        ("disk", "storage", "Usage", None),
        ("egress", "data_transfer", "Usage", None),
        ("tax", "tax", "Tax", None),
        ("rounding", "other", "Adjustment", None),
        ("goodwill", "credit", "Adjustment", "Correction"),
        ("correction", "gpu", "Adjustment", "Correction"),
    ],
)
def test_classes(lines, name, resource_class, charge_category, charge_class) -> None:
    line = lines[name]
    assert (line["resource_class"], line["charge_category"], line["charge_class"]) == (
        resource_class,
        charge_category,
        charge_class,
    )


def test_float_money_is_read_through_its_shortest_text(lines) -> None:
    assert lines["float-money"]["billed_cost"] == D("0.3")  # 0.30000000000000004 as a double
    assert lines["float-money"]["list_cost"] == D("1E-10")


def test_numeric_money_and_a_standard_table(tmp_path) -> None:
    """NUMERIC (decimal128(38, 9)) money is exact; a standard export has no resource column."""
    fields = [
        pa.field(name, pa.decimal128(38, 9) if name == "cost" else kind)
        for name, kind in gcp_billing.STANDARD
    ]
    standard = write_gcp(
        tmp_path / "standard",
        [gcp_row(cost=D("1234567.123456789"), labels={"user_attempt_id": "att-1"})],
        schema=pa.schema(fields),
    )
    detailed = write_gcp(tmp_path / "detailed", [gcp_row(cost=2.5)], day="2026-10-13")
    con, _report = build_models(tmp_path, [], deliveries=[standard, detailed])
    rows = con.execute(
        "select billed_cost, resource_id, attempt_tag from normalized.cost_lines order by 1"
    ).fetchall()
    assert rows == [(D("2.5"), None, None), (D("1234567.123456789"), None, "att-1")]


def test_no_gcp_data_still_builds_typed_columns(tmp_path) -> None:
    con, _report = build_models(tmp_path, [])
    assert con.execute("select count(*) from raw.gcp_billing").fetchone() == (0,)
    kinds = dict(
        row[:2] for row in con.execute("describe staging.gcp_billing_line_items").fetchall()
    )
    assert (kinds["cost"], kinds["credit_promotion"]) == ("DECIMAL(38,10)", "DECIMAL(38,10)")
    assert kinds["labels"] == "MAP(VARCHAR, VARCHAR)"
    assert con.execute("select count(*) from normalized.cost_lines").fetchone() == (0,)


def test_a_currency_change_inside_an_invoice_month_is_refused(tmp_path) -> None:
    usd = write_gcp(tmp_path / "a", [gcp_row(cost=1.0)])
    eur = write_gcp(tmp_path / "b", [gcp_row(cost=1.0, currency="EUR")], day="2026-10-13")
    with pytest.raises(InputError) as caught:
        build_models(tmp_path, [], deliveries=[usd, eur])
    assert str(caught.value).startswith(
        "GCP export billing: invoice month 202610 is billed in several currencies (EUR, USD)"
    )


def test_a_koku_shaped_egress_row(lines) -> None:
    line = lines["koku-egress"]
    assert (line["resource_class"], line["resource_id"], line["billing_period"]) == (
        "data_transfer",
        "instance-1",
        "2022-08",
    )
    assert line["consumed_quantity"] == D("14871")
    assert bases(line) == (D("0"),) * 4


def test_a_file_whose_labels_are_text_is_refused_by_name(tmp_path) -> None:
    fields = [
        pa.field(name, pa.string() if name == "labels" else kind)
        for name, kind in gcp_billing.DETAILED
    ]
    delivery = write_gcp(tmp_path / "flat", [gcp_row(labels="[]")], schema=pa.schema(fields))
    with pytest.raises(InputError) as caught:
        build_models(tmp_path, [], deliveries=[delivery])
    assert str(caught.value) == (
        f"{delivery.files[0]}: column labels is string, not a REPEATED field (list)"
    )


def test_usage_seconds_from_time_usage_bounded_by_the_window(lines) -> None:
    assert lines["ran-20-minutes"]["usage_seconds"] == 1200
    assert lines["ran-15-minutes-in-hours"]["usage_seconds"] == 900
    assert lines["two-gpus-whole-hour"]["usage_seconds"] == 3600
    assert lines["ram-byte-seconds"]["usage_seconds"] == 3600
    assert lines["koku-egress"]["usage_seconds"] == 3600  # bytes: the window


def expected_tags(labels: dict[str, str] | None) -> dict[str, str]:
    """A row's tags: its labels, and each k8s-label/<key> also as <key> unless <key> is a label."""
    found = dict(labels or {})
    for key, value in (labels or {}).items():
        if key.startswith("k8s-label/") and key[len("k8s-label/") :] not in found:
            found[key[len("k8s-label/") :]] = value
    return found


def test_each_rows_tags_and_machine_are_its_own(tmp_path) -> None:
    """Tags are made once per distinct label list and joined back to the rows, and the machine is
    looked up in each row's system labels: every row gets its own, whichever rows share a list."""
    pools = [
        None,
        {},
        {"team": "nlp"},
        {"team": "vision"},
        {"team": "nlp", "user_attempt_id": "att-1"},
        {"user_attempt_id": "att-1", "team": "nlp"},  # the same labels in another order
        {"team": "nlp", "user_attempt_id": "att-2"},  # the same first label, another second
        {"k8s-label/user_attempt_id": "att-2", "k8s-namespace": "nlp"},
        {"k8s-label/user_attempt_id": "att-3", "user_attempt_id": "att-plain"},
        {"k8s-label/team": "", "team": "x"},
        {"goog-k8s-cluster-name": "c1", "k8s-label/app": "train", "k8s-label/tier": "gpu"},
    ]
    machines = [None, "a2-highgpu-1g", "a2-highgpu-2g"]
    rows, wanted = [], []
    for index in range(60):
        labels = pools[(index * 7) % len(pools)]
        machine = machines[index % len(machines)]
        system = {"compute.googleapis.com/machine_spec": machine} if machine else {}
        if index % 4 == 0:
            system["compute.googleapis.com/cores"] = "12"
        rows.append(gcp_row(cost=float(index), labels=labels, system_labels=system))
        wanted.append((expected_tags(labels), machine))
    delivery = write_gcp(tmp_path / "raw", rows)
    con, report = build_models(tmp_path, [], deliveries=[delivery])
    assert not report.check_failures
    found = con.execute(
        "select tags, instance_type from normalized.cost_lines where provider = 'gcp' "
        "order by line_id"
    ).fetchall()
    assert [(dict(tags), machine) for tags, machine in found] == wanted
