"""The demo world: five experiments, their attempts and resources, and the month billing them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from pipeline.scenario import catalog, shared_costs
from pipeline.scenario.billing import Bill, SavingsPlan, hours, utc
from pipeline.scenario.cur_writer import CurLine, period_bounds
from pipeline.scenario.eks import Pod, pod_rows
from pipeline.scenario.oracle import cost_bases
from pipeline.scenario.telemetry_writer import Attempt, AttemptEvent, AttemptResource, Experiment

BILLING_PERIOD = "2026-10"
INVOICE_ID = "2641876350"
ACCOUNT = "222222222222"
CLUSTER = "runcost-demo"
CLUSTER_ARN = f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/{CLUSTER}"
PLAN = SavingsPlan(
    arn=f"arn:aws:savingsplans::{ACCOUNT}:savingsplan/5f0c2e7a-3b9d-4c61-9a8e-0d2f4b6a8c10",
    instance_family="p4d",
    rate=Decimal("24.00"),
    commitment=Decimal("3.00"),
)
CHECKPOINTS = "runcost-demo-checkpoints"
DATASETS = "runcost-demo-datasets-vision"
WINDOW = (utc(5, 0), utc(9, 0))  # the days the demo covers hour by hour
TAXED_PRODUCTS = ("AmazonEC2", "AmazonS3")

# instance and volume ids
LLM_1, LLM_2 = "i-0a1f5c2e9d3b70001", "i-0a1f5c2e9d3b70002"
VIS_1, VIS_2 = "i-0b7e4d1c2a9f80011", "i-0b7e4d1c2a9f80012"
RL = "i-0c3d9e8f7a6b50021"
NLP, NLP_VOLUME = "i-0d4a2b6c8e1f30031", "vol-0d4a2b6c8e1f30032"
DEV_BOX = "i-0e5f7a9b1c3d40041"
SMOKE = "i-0f6e8d0c2b4a60051"
EKS_NODE = "i-0a2b4c6d8e0f10061"  # an EKS p4d node shared by pods of two attempts
EKS_POD_2 = (
    f"arn:aws:eks:{catalog.REGION}:{ACCOUNT}:pod/{CLUSTER}/foundation-models/"
    "trainer-0/3b8d4f12-9e6a-4c2b-8d17-5a4e3c2b1f02"
)


@dataclass(frozen=True)
class World:
    """Everything the scenario writes: the bill's lines and the telemetry that explains them."""

    billing_period: str
    lines: list[CurLine]
    attempts: list[Attempt]
    resources: list[AttemptResource]
    experiments: list[Experiment]
    events: list[AttemptEvent] = field(default_factory=list)


EXPERIMENTS = [
    Experiment("exp-llm-7b", "foundation-models", "val_loss", 2.1, False),
    Experiment("exp-vision-sweep", "perception", "top1_accuracy", 0.8, True),
    Experiment("exp-rl-agent", "agents", "mean_reward", 200.0, True),
    Experiment("exp-nlp-distill", "language", "eval_f1", 0.9, True),
    Experiment("exp-eks-finetune", "foundation-models", "eval_loss", 1.5, False),
]


def _attempt(
    attempt_id: str,
    experiment_id: str,
    instance_type: str,
    capacity_type: str,
    times: tuple[datetime, datetime | None, datetime | None],
    status: str,
    *,
    parent: str | None = None,
    config: str = "cfg-base",
    failure: str | None = None,
    metric: tuple[str, float] | None = None,
) -> Attempt:
    spec = catalog.INSTANCES[instance_type]
    experiment = next(item for item in EXPERIMENTS if item.experiment_id == experiment_id)
    submitted, started, ended = times
    return Attempt(
        attempt_id=attempt_id,
        experiment_id=experiment_id,
        parent_attempt_id=parent,
        model_version=f"{experiment_id.removeprefix('exp-')}-v3",
        config_version=config,
        dataset_snapshot="snap-2026-09-30",
        provider="aws",
        account_id=ACCOUNT,
        region=catalog.REGION,
        cluster=CLUSTER,
        namespace=experiment.team,
        instance_type=instance_type,
        gpu_type=spec.gpu_type,
        gpu_count=spec.gpu,
        node_count=1,
        capacity_type=capacity_type,
        submitted_at=submitted,
        started_at=started,
        ended_at=ended,
        status=status,
        failure_reason=failure,
        metric_name=metric[0] if metric else None,
        metric_value=metric[1] if metric else None,
        artifact_uri=f"s3://{CHECKPOINTS}/{experiment_id}/{attempt_id}/" if started else None,
    )


ATTEMPTS = [
    _attempt("att-llm-01", "exp-llm-7b", "p4d.24xlarge", "on_demand",
             (utc(5, 7, 52), utc(5, 8), utc(5, 14)), "timeout",
             failure="wall-clock limit of 6h reached", metric=("val_loss", 2.31)),
    _attempt("att-llm-02", "exp-llm-7b", "p4d.24xlarge", "on_demand",
             (utc(5, 23, 40), utc(6, 0), utc(6, 4, 30)), "succeeded",
             parent="att-llm-01", metric=("val_loss", 2.04)),
    _attempt("att-vis-01", "exp-vision-sweep", "g5.12xlarge", "spot",
             (utc(5, 8, 55), utc(5, 9), utc(5, 12)), "succeeded",
             config="cfg-lr1e-3", metric=("top1_accuracy", 0.812)),
    _attempt("att-vis-02", "exp-vision-sweep", "g5.12xlarge", "spot",
             (utc(5, 8, 55), utc(5, 9), utc(5, 11, 30)), "interrupted",
             config="cfg-lr3e-3", failure="spot instance reclaimed (2-minute notice)"),
    _attempt("att-vis-03", "exp-vision-sweep", "g5.12xlarge", "spot",
             (utc(5, 8, 55), None, None), "cancelled",
             config="cfg-lr1e-2", failure="cancelled in queue: sweep stopped early"),
    _attempt("att-rl-01", "exp-rl-agent", "g5.12xlarge", "on_demand",
             (utc(6, 9, 58), utc(6, 10), utc(6, 10, 20)), "failed",
             failure="CUDA error: out of memory"),
    _attempt("att-rl-02", "exp-rl-agent", "g5.12xlarge", "on_demand",
             (utc(6, 10, 22), utc(6, 10, 25), utc(6, 14)), "succeeded",
             parent="att-rl-01", config="cfg-small-batch", metric=("mean_reward", 212.5)),
    _attempt("att-nlp-01", "exp-nlp-distill", "g5.xlarge", "on_demand",
             (utc(7, 12, 50), utc(7, 13), utc(7, 17, 15)), "succeeded",
             metric=("eval_f1", 0.884)),
    _attempt("att-eks-01", "exp-eks-finetune", "p4d.24xlarge", "on_demand",
             (utc(8, 1, 55), utc(8, 2), utc(8, 5)), "succeeded", metric=("eval_loss", 1.41)),
    _attempt("att-eks-02", "exp-eks-finetune", "p4d.24xlarge", "on_demand",
             (utc(8, 1, 55), utc(8, 2), utc(8, 4)), "failed", config="cfg-lr3e-4",
             failure="NCCL timeout"),
]  # fmt: skip


ATTEMPTS_BY_ID = {attempt.attempt_id: attempt for attempt in ATTEMPTS}


def _saves(attempt_id: str, day: int, hours_: range, seconds: float, steps: range) -> list:
    """checkpoint_saved events on the hour, each blocking for `seconds`."""
    return [
        AttemptEvent(attempt_id, utc(day, hour), "checkpoint_saved", step, seconds)
        for hour, step in zip(hours_, steps, strict=True)
    ]


# Checkpoint events (they move no cost): att-llm-01 times out an hour after its last save,
# att-llm-02 restores that save, att-vis-02 is reclaimed half an hour after its last save.
EVENTS = [
    AttemptEvent("att-llm-01", utc(5, 8, 10), "first_step", 0),
    *_saves("att-llm-01", 5, range(9, 14), 60.0, range(1000, 6000, 1000)),
    AttemptEvent("att-llm-02", utc(6, 0, 4), "checkpoint_loaded", 5000, 120.0),
    AttemptEvent("att-llm-02", utc(6, 0, 6), "first_step", 5000),
    *_saves("att-llm-02", 6, range(1, 5), 60.0, range(6000, 10000, 1000)),
    AttemptEvent("att-vis-01", utc(5, 9, 3), "first_step", 0),
    *_saves("att-vis-01", 5, range(10, 12), 30.0, range(500, 1500, 500)),
    AttemptEvent("att-vis-02", utc(5, 9, 3), "first_step", 0),
    *_saves("att-vis-02", 5, range(10, 12), 30.0, range(500, 1500, 500)),
    AttemptEvent("att-vis-02", utc(5, 11, 28), "interrupted", None, None, "spot reclaimed"),
]


def _size(instance_type: str) -> tuple[float, float]:
    """(vCPUs, GiB of memory) of an instance type: what an attempt on all of it requests."""
    spec = catalog.INSTANCES[instance_type]
    return float(spec.vcpu), float(spec.memory.split()[0])


def _resources() -> list[AttemptResource]:
    def held(attempt_id: str, resource_id: str, kind: str, gpus: int = 0) -> AttemptResource:
        attempt = ATTEMPTS_BY_ID[attempt_id]
        vcpus, memory = _size(attempt.instance_type) if kind == "ec2_instance" else (None, None)
        return AttemptResource(
            attempt_id,
            resource_id,
            kind,
            attempt.started_at,
            attempt.ended_at,
            gpus,
            vcpus,
            memory,
        )

    return [
        held("att-llm-01", LLM_1, "ec2_instance", 8),
        held("att-llm-01", CHECKPOINTS, "s3_bucket"),
        held("att-llm-02", LLM_2, "ec2_instance", 8),
        held("att-llm-02", CHECKPOINTS, "s3_bucket"),
        held("att-vis-01", VIS_1, "ec2_instance", 4),
        held("att-vis-02", VIS_2, "ec2_instance", 4),
        held("att-rl-01", RL, "ec2_instance", 4),
        held("att-rl-02", RL, "ec2_instance", 4),
        # no times: the join falls back to the attempt's own started_at / ended_at
        AttemptResource("att-nlp-01", NLP, "ec2_instance", None, None, 1, *_size("g5.xlarge")),
        held("att-nlp-01", NLP_VOLUME, "ebs_volume"),
        # the node is shared: its pods' split rows place it, before resource and time would
        # the trainer pods' requests on the node (40 vCPU / 480 GiB and 20 vCPU / 240 GiB)
        AttemptResource("att-eks-01", EKS_NODE, "ec2_instance", utc(8, 2), utc(8, 5), 4, 40, 480),
        AttemptResource("att-eks-02", EKS_POD_2, "eks_pod", utc(8, 2), utc(8, 4), 2, 20, 240),
    ]


def build_world(seed: int = 7) -> World:
    """Build the world; the seed only moves spot prices, request counts and transfer volumes."""
    rng = random.Random(seed)
    bill = Bill(BILLING_PERIOD, INVOICE_ID, PLAN, {"AmazonS3": catalog.S3_PRIVATE_RATE_DISCOUNT})

    def spot(instance_type: str, count: int) -> list[Decimal]:
        base = catalog.INSTANCES[instance_type].spot_rate
        return [base + Decimal(rng.randint(-60, 90)) / 10000 for _ in range(count)]

    # exp-llm-7b: tagged on-demand p4d, partly covered by the Savings Plan.
    for attempt_id, instance in (("att-llm-01", LLM_1), ("att-llm-02", LLM_2)):
        attempt = ATTEMPTS_BY_ID[attempt_id]
        bill.instance(instance, "p4d.24xlarge", *_ran(attempt), "us-east-1a", _tags(attempt))
    # exp-vision-sweep: tagged spot g5 (one reclaimed at 11:30).
    for attempt_id, instance, zone in (
        ("att-vis-01", VIS_1, "us-east-1b"),
        ("att-vis-02", VIS_2, "us-east-1c"),
    ):
        attempt = ATTEMPTS_BY_ID[attempt_id]
        rates = spot("g5.12xlarge", 3)
        bill.instance(instance, "g5.12xlarge", *_ran(attempt), zone, _tags(attempt), rates)
    # exp-rl-agent: one untagged node runs the failed attempt and, 5 minutes later, its retry.
    bill.instance(RL, "g5.12xlarge", utc(6, 10), utc(6, 14), "us-east-1a")
    # exp-nlp-distill: an untagged instance ending at 17:15 and a volume kept a day longer.
    bill.instance(NLP, "g5.xlarge", utc(7, 13), utc(7, 17, 15), "us-east-1d")
    volume_hours = [(hour, 500) for hour, _ in hours(utc(7, 13), utc(8, 13))]
    bill.storage(catalog.EBS_GP3, NLP_VOLUME, volume_hours, zone="us-east-1d")
    # Not training: an untagged dev box and a smoke test tagged with an attempt nobody logged.
    bill.instance(DEV_BOX, "m5.xlarge", *WINDOW, "us-east-1a")
    smoke_tags = {"user_attempt_id": "att-manual-smoke"}
    rates = spot("g5.xlarge", 2)
    bill.instance(SMOKE, "g5.xlarge", utc(6, 15), utc(6, 17), "us-east-1b", smoke_tags, rates)
    _eks_node(bill)
    _llm_traffic(bill, rng)
    _vision_dataset(bill, rng)
    for hour, _ in hours(*period_bounds(BILLING_PERIOD)):
        bill.metered(catalog.EKS_CLUSTER, hour, CLUSTER_ARN, Decimal(1))
    shared_costs.monitoring_node(bill, WINDOW)
    shared_costs.kept_volume(bill)
    shared_costs.checkpoint_restore(bill, CHECKPOINTS, rng)
    shared_costs.inference(bill)
    bill.recurring_fees()
    bill.taxes(TAXED_PRODUCTS)
    shared_costs.account_credit(bill)
    lines = sorted(bill.lines, key=lambda line: (line.usage_start, line.usage_end))
    return World(
        BILLING_PERIOD, lines, list(ATTEMPTS), _resources(), list(EXPERIMENTS), list(EVENTS)
    )


def _ran(attempt: Attempt) -> tuple[datetime, datetime]:
    if attempt.started_at is None or attempt.ended_at is None:
        raise ValueError(f"{attempt.attempt_id} never ran, so nothing billed it")
    return attempt.started_at, attempt.ended_at


def _tags(attempt: Attempt) -> dict[str, str]:
    return {"user_attempt_id": attempt.attempt_id, "user_experiment_id": attempt.experiment_id}


def _pod(attempt_id: str, name: str, gpus: int, cpus: str, memory: int) -> Pod:
    attempt = ATTEMPTS_BY_ID[attempt_id]
    labels = {
        **_tags(attempt),
        "aws_eks_cluster_name": CLUSTER,
        "aws_eks_namespace": attempt.namespace,
        "aws_eks_workload_type": "job",
    }
    arn = f"arn:aws:eks:{catalog.REGION}:{ACCOUNT}:pod/{CLUSTER}/{attempt.namespace}/{name}"
    reserved = {"Accelerator": Decimal(gpus), "vCPU": Decimal(cpus), "GB": Decimal(memory)}
    return Pod(arn, labels, reserved)


def _eks_node(bill: Bill) -> None:
    """An untagged EKS p4d node, Oct 8 02:00-05:00: pods of att-eks-01 (4 GPUs) and att-eks-02
    (2 GPUs, until 04:00) and an unlabelled kube-system pod, with AWS's split rows per pod-hour."""
    start, end = utc(8, 2), utc(8, 5)
    bill.instance(EKS_NODE, "p4d.24xlarge", start, end, "us-east-1a")
    node_lines = [line for line in bill.lines if line.resource_id == EKS_NODE]
    first = _pod("att-eks-01", "trainer-0/7c1e2a90-5b1d-4e0f-9a51-0e6f7d8c1a01", 4, "40", 480)
    second = _pod("att-eks-02", "trainer-0/3b8d4f12-9e6a-4c2b-8d17-5a4e3c2b1f02", 2, "20", 240)
    system_arn = (
        f"arn:aws:eks:{catalog.REGION}:{ACCOUNT}:pod/{CLUSTER}/kube-system/"
        "aws-node-x7k2p/0d9e8f7a-6b5c-4d3e-2f1a-0b9c8d7e6f03"
    )
    system_labels = {"aws_eks_cluster_name": CLUSTER, "aws_eks_namespace": "kube-system"}
    for number, (hour, _) in enumerate(hours(start, end)):
        # measured use: the first trainer bursts above its CPU request, the second above its
        # memory request, the system pod above both; GPUs are charged by request only
        pods = [
            Pod(first.arn, first.labels, first.reserved, _used(46.5 - number, 410)),
            Pod(system_arn, system_labels, _used(0.5, 1), _used(0.75, 0.8)),
        ]
        if hour < utc(8, 4):
            pods.append(Pod(second.arn, second.labels, second.reserved, _used(12.25, 251.5)))
        hour_lines = [line for line in node_lines if line.usage_start == hour]
        effective = sum((cost_bases(line)["effective_cost"] for line in hour_lines), Decimal(0))
        public = sum((cost_bases(line)["list_cost"] for line in hour_lines), Decimal(0))
        window_end = hour_lines[0].usage_end
        for line in pod_rows(EKS_NODE, "p4d.24xlarge", hour, window_end, pods, effective, public):
            bill.add(**_fields(line))


def _used(cpus: float, gigabytes: float) -> dict[str, Decimal]:
    return {"vCPU": Decimal(str(cpus)), "GB": Decimal(str(gigabytes))}


def _fields(line: CurLine) -> dict[str, object]:
    """A CurLine's fields other than those Bill.add sets itself."""
    values = {name: getattr(line, name) for name in line.__dataclass_fields__}
    del values["billing_period"], values["invoice_id"]
    return values


def _llm_traffic(bill: Bill, rng: random.Random) -> None:
    """Checkpoint PUTs, checkpoint storage and inter-AZ traffic of the two exp-llm-7b attempts."""
    llm = [ATTEMPTS_BY_ID["att-llm-01"], ATTEMPTS_BY_ID["att-llm-02"]]
    busy = {hour for attempt in llm for hour, _ in hours(*_ran(attempt))}
    stored, sizes = 0, []
    for hour, _ in hours(utc(5, 8), WINDOW[1]):
        stored += 180 if hour in busy else 0  # one 180 GB checkpoint per training hour
        sizes.append((hour, stored))
    bill.storage(catalog.S3_STORAGE, CHECKPOINTS, sizes)
    for attempt, instance in zip(llm, (LLM_1, LLM_2), strict=True):
        for hour, _ in hours(*_ran(attempt)):
            puts = Decimal(rng.randint(800, 2400))
            bill.metered(catalog.S3_PUT, hour, CHECKPOINTS, puts)
            gigabytes = Decimal(rng.randint(2000, 9000)) / 100
            bill.metered(catalog.INTER_AZ, hour, instance, gigabytes, "us-east-1a", _tags(attempt))


def _vision_dataset(bill: Bill, rng: random.Random) -> None:
    """The sweep's dataset bucket: tagged with the experiment, never with an attempt."""
    tags = {"user_experiment_id": "exp-vision-sweep"}
    bill.storage(
        catalog.S3_STORAGE, DATASETS, [(hour, 2400) for hour, _ in hours(*WINDOW)], tags=tags
    )
    for hour, _ in hours(utc(5, 9), utc(5, 12)):
        gets = Decimal(rng.randint(2000, 6000) * 10)
        bill.metered(catalog.S3_GET, hour, DATASETS, gets, tags=tags)
