"""The GCP demo world: GPU VMs (N1 with T4s, A2, a Spot VM), disks, egress, stale checkpoints in
Cloud Storage, GKE pods and its cluster fee, commitments, credits, tax and late rows, with
telemetry."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pipeline.scenario.billing import hours, utc
from pipeline.scenario.gcp_rows import (
    A2_CORE,
    A2_RAM,
    A100,
    CUD_CPU,
    CUD_RAM,
    EGRESS,
    GCS,
    GIB,
    GKE,
    GKE_FEE,
    HOUR,
    INVOICE,
    LATE_MONTH,
    N1_CORE,
    N1_RAM,
    PD,
    PROJECT,
    REGION,
    SPOT_CORE,
    SPOT_RAM,
    SPOT_T4,
    STANDARD_STORAGE,
    T4,
    ZONE,
    Credit,
    GcpRow,
)
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment


@dataclass(frozen=True)
class GcpWorld:
    """The export rows and the telemetry that explains them."""

    rows: list[GcpRow]
    attempts: list[Attempt]
    resources: list[AttemptResource]
    experiments: list[Experiment]


EXPERIMENTS = [
    Experiment("exp-gcp-bert", "language", "eval_f1", 0.9, True),
    Experiment("exp-gcp-llm", "foundation-models", "val_loss", 2.0, False),
    Experiment("exp-gcp-gke", "perception", "top1_accuracy", 0.8, True),
    Experiment("exp-gcp-spot", "language", "eval_f1", 0.9, True),
]


def _attempt(
    attempt_id: str,
    experiment_id: str,
    machine: str,
    gpu: tuple[str, int],
    times: tuple[datetime, datetime],
    status: str = "succeeded",
    parent: str | None = None,
    cluster: str = "",
    capacity: str = "on_demand",
) -> Attempt:
    team = next(item.team for item in EXPERIMENTS if item.experiment_id == experiment_id)
    started, ended = times
    return Attempt(
        attempt_id=attempt_id, experiment_id=experiment_id, parent_attempt_id=parent,
        model_version=f"{experiment_id.removeprefix('exp-')}-v1", config_version="cfg-base",
        dataset_snapshot="snap-2026-10-01", provider="gcp", account_id=PROJECT, region=REGION,
        cluster=cluster, namespace=team, instance_type=machine, gpu_type=gpu[0],
        gpu_count=gpu[1], node_count=1, capacity_type=capacity,
        submitted_at=started - timedelta(minutes=5), started_at=started, ended_at=ended,
        status=status, failure_reason=None if status == "succeeded" else "CUDA error",
        metric_name=None, metric_value=None, artifact_uri=None,
    )  # fmt: skip


BERT_VM, BERT_VM_2, BERT_DISK = "bert-n1-t4-0", "bert-n1-t4-1", "bert-n1-t4-0-data"
SPOT_VM, ORPHAN_DISK = "bert-n1-t4-spot-0", "scratch-pd-orphan"
CHECKPOINTS = "llm-a2-checkpoints"  # a Cloud Storage bucket att-a2-02 wrote its checkpoints to
A2_VM = "llm-a2-highgpu-1g-0"
A2_PATH = f"projects/{PROJECT}/zones/{ZONE}/instances/{A2_VM}"
GKE_NODE = "gke-ml-gke-gpu-pool-5f2c9a1e-k7xq"
ATTEMPTS = [
    _attempt("att-gn1-01", "exp-gcp-bert", "n1-standard-8", ("nvidia-tesla-t4", 1),
             (utc(12, 10), utc(12, 14))),
    _attempt("att-gn1-02", "exp-gcp-bert", "n1-standard-8", ("nvidia-tesla-t4", 1),
             (utc(31, 20), utc(31, 23)), parent="att-gn1-01"),
    _attempt("att-a2-01", "exp-gcp-llm", "a2-highgpu-1g", ("nvidia-tesla-a100", 1),
             (utc(14, 8), utc(14, 10)), status="failed"),
    _attempt("att-a2-02", "exp-gcp-llm", "a2-highgpu-1g", ("nvidia-tesla-a100", 1),
             (utc(14, 10), utc(14, 12)), parent="att-a2-01"),
    _attempt("att-gke-01", "exp-gcp-gke", "n1-standard-16", ("nvidia-tesla-t4", 1),
             (utc(16, 2), utc(16, 5)), cluster="ml-gke"),
    _attempt("att-gke-02", "exp-gcp-gke", "n1-standard-16", ("nvidia-tesla-t4", 1),
             (utc(16, 2), utc(16, 4)), cluster="ml-gke"),
    _attempt("att-spot-01", "exp-gcp-spot", "n1-standard-4", ("nvidia-tesla-t4", 1),
             (utc(20, 6), utc(20, 8)), capacity="spot"),
]  # fmt: skip
BY_ID = {attempt.attempt_id: attempt for attempt in ATTEMPTS}


def _resources() -> list[AttemptResource]:
    def held(attempt_id: str, resource_id: str, kind: str) -> AttemptResource:
        attempt = BY_ID[attempt_id]
        return AttemptResource(
            attempt_id, resource_id, kind, attempt.started_at, attempt.ended_at, 1
        )

    return [
        held("att-gn1-01", BERT_VM, "gce_instance"),
        held("att-gn1-01", BERT_DISK, "gce_disk"),  # billed for a day, held for four hours
        held("att-gn1-02", BERT_VM_2, "gce_instance"),
        held("att-a2-01", A2_VM, "gce_instance"),  # untagged: placed by resource and time
        held("att-a2-02", A2_VM, "gce_instance"),
        held("att-a2-02", CHECKPOINTS, "gcs_bucket"),
    ]


def _tags(attempt_id: str) -> dict[str, str]:
    return {"user_attempt_id": attempt_id, "user_experiment_id": BY_ID[attempt_id].experiment_id}


def _money(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.000001"))


class _Bill:
    """Collects rows; regular rows are exported five hours after their window ends."""

    def __init__(self) -> None:
        self.rows: list[GcpRow] = []

    def add(
        self,
        sku: tuple[str, str, Decimal],
        start: datetime,
        quantity: Decimal,
        usage: tuple[Decimal, str, str],
        **extra: object,
    ) -> GcpRow:
        cost = _money(sku[2] * quantity)
        values: dict = {"cost_at_list": cost, "invoice_month": "202610"}
        values["export_time"] = start + HOUR + timedelta(hours=5)
        values.update(extra)
        if "credit_rates" in values:
            rates = values.pop("credit_rates")
            values["credits"] = tuple(
                Credit(kind, name, -_money(cost * rate)) for kind, name, rate in rates
            )
        row = GcpRow(sku, start, start + HOUR, cost, usage=usage, **values)
        self.rows.append(row)
        return row

    def vm_hour(self, start: datetime, machine: tuple, name: str, labels: dict, **extra) -> None:
        """Core, RAM and GPU rows of one VM-hour (GCP bills each SKU as its own row)."""
        system = {"compute.googleapis.com/machine_spec": extra.pop("spec")}
        short = name.rsplit("/", 1)[-1]
        common = {
            "labels": labels,
            "system_labels": system,
            "resource_name": name,
            "global_name": f"//compute.googleapis.com/projects/{PROJECT}/zones/{ZONE}/"
            f"instances/{short}",
        }
        credits = extra.pop("credits", {})
        parts = zip(machine, UNITS, ("core", "ram", "gpu"), strict=True)
        for (sku, quantity), unit, part in parts:
            usage = usage_of(quantity, unit)
            self.add(
                sku, start, Decimal(quantity), usage, **common, **credits.get(part, {}), **extra
            )


def usage_of(quantity: int, unit: str) -> tuple[Decimal, str, str]:
    """usage.amount, unit and pricing unit of an hour of ``quantity`` cores, GPUs or GiB."""
    if unit == "byte-seconds":
        return Decimal(quantity * GIB * 3600), unit, "gibibyte hour"
    return Decimal(quantity * 3600), unit, "hour"


SUD = ("SUSTAINED_USAGE_DISCOUNT", "Sustained Usage Discount", Decimal("0.2"))
CUD = ("COMMITTED_USAGE_DISCOUNT", "Committed Usage Discount: CPU", Decimal(1))
PROMO = ("PROMOTION", "FreeTrial:Credit-01A2B3-C4D5E6-F7A8B9", Decimal("0.5"))
N1_MACHINE = ((N1_CORE, 8), (N1_RAM, 30), (T4, 1))
UNITS = ("seconds", "byte-seconds", "seconds")  # usage units of a machine's core, RAM, GPU rows
GKE_LABELS = {
    "goog-k8s-cluster-name": "ml-gke",
    "k8s-workload-type": "job",
    "k8s-label/app": "trainer",
}
A2_MACHINE = ((A2_CORE, 12), (A2_RAM, 85), (A100, 1))


def build_gcp_world(seed: int = 7) -> GcpWorld:
    """Build the world; the seed only moves egress volumes."""
    rng = random.Random(seed)
    bill = _Bill()
    bert_credits = {
        # two credits on one row: summing them per row must not repeat the row's cost
        "core": {"credit_rates": (SUD, ("PROMOTION", PROMO[1], Decimal("0.1")))},
        "ram": {"credit_rates": (SUD,)},
        "gpu": {"credit_rates": (PROMO,)},
    }
    for start, _ in hours(utc(12, 10), utc(12, 14)):
        tags = _tags("att-gn1-01")
        bill.vm_hour(start, N1_MACHINE, BERT_VM, tags, spec="n1-standard-8", credits=bert_credits)
        gib = Decimal(rng.randint(100, 900)) / 100
        usage = (gib * GIB, "bytes", "gibibyte")
        bill.add(EGRESS, start, gib, usage, labels=tags, resource_name=BERT_VM)
    # the data disk bills while the VM is stopped, a day in all
    for start, _ in hours(utc(12, 10), utc(13, 10)):
        usage = (Decimal(500 * GIB * 3600), "byte-seconds", "gibibyte month")
        bill.add(PD, start, Decimal(500), usage, resource_name=BERT_DISK)
    # the retry's last hour is reported late and rolls over to November's invoice (its GPU row)
    for start, _ in hours(utc(31, 20), utc(31, 23)):
        bill.vm_hour(start, N1_MACHINE, BERT_VM_2, _tags("att-gn1-02"), spec="n1-standard-8")
    late = next(row for row in bill.rows if row.sku == T4 and row.usage_start == utc(31, 22))
    bill.rows[bill.rows.index(late)] = _replace(
        late, invoice_month=LATE_MONTH, export_time=datetime(2026, 11, 2, 4, tzinfo=UTC)
    )
    _a2(bill)
    _gke(bill)
    _spot_and_orphan(bill)
    _stale_checkpoints(bill)
    # a usage correction on November's invoice for an October hour of att-gn1-01's GPU
    original = next(row for row in bill.rows if row.sku == T4 and row.usage_start == utc(12, 11))
    adjustment = {
        "id": "adj-7d1e2f",
        "description": "Usage correction: GPU hours",
        "type": "USAGE_CORRECTION",
        "mode": "PARTIAL_CORRECTION",
    }
    correction = _replace(
        original,
        cost=Decimal("-0.07"),
        cost_at_list=Decimal("-0.07"),
        credits=(),
        cost_type="adjustment",
        invoice_month=LATE_MONTH,
        export_time=datetime(2026, 11, 3, 6, tzinfo=UTC),
        adjustment=adjustment,
    )
    bill.rows.append(correction)
    _invoice_rows(bill)
    rows = sorted(bill.rows, key=lambda row: (row.export_time, row.usage_start, row.sku[0]))
    return GcpWorld(rows, list(ATTEMPTS), _resources(), list(EXPERIMENTS))


def _replace(row: GcpRow, **changes: object) -> GcpRow:
    values = {name: getattr(row, name) for name in row.__dataclass_fields__}
    values.update(changes)
    return GcpRow(**values)


def _a2(bill: _Bill) -> None:
    """An untagged A2 VM (its A100 fixed by the machine type) under a committed use discount:
    CUD fees every hour, and a reserved second A2 nobody used."""
    cud = {"credit_rates": (CUD,)}
    reserved = {
        "compute.googleapis.com/is_unused_reservation": "true",
        "compute.googleapis.com/reservation_name": "a2-reservation",
    }
    for start, _ in hours(utc(14, 8), utc(14, 12)):
        credits = {"core": cud, "ram": cud}
        bill.vm_hour(start, A2_MACHINE, A2_PATH, {}, spec="a2-highgpu-1g", credits=credits)
        for sku, quantity in ((CUD_CPU, 12), (CUD_RAM, 85)):
            usage = usage_of(quantity, "seconds")
            bill.add(sku, start, Decimal(quantity), usage, subscription="a2-commitment-1y")
        for (sku, quantity), unit in zip(A2_MACHINE, UNITS, strict=True):
            usage = usage_of(quantity, unit)
            bill.add(sku, start, Decimal(quantity), usage, system_labels=reserved)


def _gke(bill: _Bill) -> None:
    """A GKE GPU node split by cost allocation into pod rows by request, plus its idle rest."""
    node = ((N1_CORE, 16), (N1_RAM, 60), (T4, 2))
    pods = {"att-gke-01": (6, 24, 1), "att-gke-02": (6, 24, 1)}
    for start, _ in hours(utc(16, 2), utc(16, 5)):
        running = [a for a in pods if BY_ID[a].ended_at > start]
        for index, ((sku, total), unit) in enumerate(zip(node, UNITS, strict=True)):
            used = 0
            for attempt_id in running:
                share = pods[attempt_id][index]
                used += share
                pod_labels = {f"k8s-label/{k}": v for k, v in _tags(attempt_id).items()}
                labels = {**GKE_LABELS, "k8s-namespace": "perception", **pod_labels}
                usage = usage_of(share, unit)
                bill.add(sku, start, Decimal(share), usage, labels=labels, resource_name=GKE_NODE)
            idle = {"goog-k8s-cluster-name": "ml-gke", "k8s-namespace": "kube:unallocated"}
            usage = usage_of(total - used, unit)
            bill.add(sku, start, Decimal(total - used), usage, labels=idle, resource_name=GKE_NODE)
        # the cluster management fee, an hour of the cluster's control plane
        cluster = {"goog-k8s-cluster-name": "ml-gke"}
        bill.add(GKE_FEE, start, Decimal(1), usage_of(1, "seconds"), labels=cluster, service=GKE)


def _spot_and_orphan(bill: _Bill) -> None:
    """A Spot N1 VM with a T4 (Dynamic pricing), and a persistent disk no attempt ever held,
    billed for 30 hours: an unattached disk."""
    machine = ((SPOT_CORE, 4), (SPOT_RAM, 15), (SPOT_T4, 1))
    for start, _ in hours(utc(20, 6), utc(20, 8)):
        bill.vm_hour(start, machine, SPOT_VM, _tags("att-spot-01"), spec="n1-standard-4")
    for start, _ in hours(utc(20, 0), utc(21, 6)):
        usage = (Decimal(200 * GIB * 3600), "byte-seconds", "gibibyte month")
        bill.add(PD, start, Decimal(200), usage, resource_name=ORPHAN_DISK)


def _stale_checkpoints(bill: _Bill) -> None:
    """Checkpoints kept after exp-gcp-llm's last attempt ended (October 14, 12:00), past the
    7 days of economics.stale_checkpoint_days: 1,000 GiB labelled with the experiment only, 6
    hours on October 24, and att-a2-02's bucket, 2,000 GiB for 4 hours on October 25."""
    for start, _ in hours(utc(24, 0), utc(24, 6)):
        usage = (Decimal(1000 * GIB * 3600), "byte-seconds", "gibibyte month")
        labels = {"user_experiment_id": "exp-gcp-llm"}
        bill.add(STANDARD_STORAGE, start, Decimal(1000), usage, labels=labels, service=GCS)
    for start, _ in hours(utc(25, 0), utc(25, 4)):
        usage = (Decimal(2000 * GIB * 3600), "byte-seconds", "gibibyte month")
        bill.add(
            STANDARD_STORAGE, start, Decimal(2000), usage, resource_name=CHECKPOINTS, service=GCS
        )


def _invoice_rows(bill: _Bill) -> None:
    """October's tax (6.25% of the month's cost less credits) and a rounding_error row."""
    october = [row for row in bill.rows if row.invoice_month == "202610"]
    credits = sum((c.amount for row in october for c in row.credits), Decimal(0))
    net = sum((row.cost for row in october), credits)
    start, end = datetime(2026, 10, 1, 7, tzinfo=UTC), datetime(2026, 11, 1, 7, tzinfo=UTC)
    for kind, sku, cost in (
        ("tax", ("TAX-US-SALES", "Tax: US sales tax", Decimal(0)), _money(net * Decimal("0.0625"))),
        ("rounding_error", ("ROUNDING", "Rounding error", Decimal(0)), Decimal("-0.003")),
    ):
        exported = datetime(2026, 11, 2, 9, tzinfo=UTC)
        usage = (Decimal(0), "", "")
        row = GcpRow(
            sku, start, end, cost, "202610", exported, usage, cost_type=kind, service=INVOICE
        )
        bill.rows.append(row)
