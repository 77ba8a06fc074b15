"""A small multi-cloud world: AWS CUR 2.0, Google Cloud billing export and FOCUS files tagged with
one configured key (`attempt-id`) as each provider stores it, and GCP VMs that run part of an hour.

``write_world(folder, providers)`` writes the files of the providers asked for, the telemetry of
every attempt and a runcost.toml reading just those sources, so one world serves the per-provider
and the mixed end-to-end tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from focus_world import row as focus_row
from focus_world import write_mixed_csv

from pipeline.scenario.cur_writer import CurLine, write_cur_delivery
from pipeline.scenario.gcp_rows import GIB, N1_RAM, T4, GcpRow
from pipeline.scenario.gcp_scenario import write_export
from pipeline.scenario.telemetry_writer import Attempt, AttemptResource, Experiment, write_telemetry

D = Decimal
DAY = datetime(2026, 10, 12, tzinfo=UTC)
CONFIG_HEAD = """\
[warehouse]
path = "warehouse"

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["attempt-id"]
experiment_tag_keys = ["experiment-id"]
"""
SOURCES = {
    "aws": '[aws]\nexports = ["aws/exports/mixed-cur"]\n',
    "gcp": '[gcp]\nfiles = ["gcp/billing-*.json"]\n',
    "focus": '[focus]\nfiles = ["focus/mixed"]\n',
}


def at(hour: int, minute: int = 0) -> datetime:
    return DAY.replace(hour=hour, minute=minute)


def aws_lines() -> list[CurLine]:
    """A tagged GPU hour (CUR writes `attempt-id` as user_attempt_id), an experiment-tagged volume,
    and a line tagged with the key as configured (CUR never writes that: not placed by tag)."""
    return [
        CurLine(usage_start=at(9), usage_end=at(10), resource_id="i-0aws", usage_amount=D(1),
                unblended_rate=D("10.5"), unblended_cost=D("10.5"),
                public_on_demand_rate=D("10.5"), public_on_demand_cost=D("10.5"),
                resource_tags={"user_attempt_id": "att-aws", "user_experiment_id": "exp-x"}),
        CurLine(usage_start=at(9), usage_end=at(10), resource_id="vol-0aws", usage_amount=D("2.5"),
                pricing_unit="GB-Mo", unblended_rate=D("0.1"), unblended_cost=D("0.25"),
                public_on_demand_rate=D("0.1"), public_on_demand_cost=D("0.25"),
                resource_tags={"user_experiment_id": "exp-x"}),
        CurLine(usage_start=at(9), usage_end=at(10), resource_id="i-0other", usage_amount=D(1),
                unblended_rate=D("1.75"), unblended_cost=D("1.75"),
                public_on_demand_rate=D("1.75"), public_on_demand_cost=D("1.75"),
                resource_tags={"attempt-id": "att-aws"}),
    ]  # fmt: skip


def gcp_hour(start: datetime, cost: str, seconds: int, **values) -> GcpRow:
    """A T4 GPU row of the hour from ``start`` that ran ``seconds`` of it (usage.amount)."""
    usage = (D(seconds), "seconds", "hour")
    end = start + timedelta(hours=1)
    return GcpRow(T4, start, end, D(cost), "202610", end + timedelta(hours=5), usage, **values)


def gcp_rows() -> list[GcpRow]:
    """A VM labelled `attempt-id`, a GKE pod labelled `attempt-id` (k8s-label/attempt-id), a VM
    labelled with the CUR spelling (not placed by tag), and the partial-hour VMs of GCP_PARTIAL."""
    ram = (D(4 * GIB * 3600), "byte-seconds", "gibibyte hour")
    return [
        gcp_hour(at(9), "4.2", 3600, resource_name="vm-labelled",
                 labels={"attempt-id": "att-gcp", "experiment-id": "exp-x"}),
        gcp_hour(at(9), "3.3", 3600, resource_name="gke-node-1",
                 labels={"k8s-namespace": "ml", "k8s-label/attempt-id": "att-gke"}),
        gcp_hour(at(9), "0.8", 3600, resource_name="vm-cur-spelling",
                 labels={"user_attempt_id": "att-gcp"}),
        # vm-short ran 10:00-10:20 (1,200 s of usage) and att-short held it all that time
        gcp_hour(at(10), "0.12", 1200, resource_name="vm-short"),
        # vm-shared ran 10:00-10:45 (2,700 s): att-first held it 10:00-10:15, att-second 10:15-10:45
        gcp_hour(at(10), "0.27", 2700, resource_name="vm-shared"),
        # vm-left ran 10:00-10:45 (2,700 s) but att-left held it only 10:00-10:15
        gcp_hour(at(10), "0.27", 2700, resource_name="vm-left"),
        # RAM is billed in byte-seconds, not time: the row spans its whole window
        GcpRow(N1_RAM, at(10), at(11), D("0.06"), "202610", at(16), ram, resource_name="vm-ram"),
    ]  # fmt: skip


def focus_rows() -> list[dict[str, str]]:
    """FOCUS rows tagged `attempt-id` (an Azure VM and an AWS FOCUS row: FOCUS keeps keys as
    written whoever the provider) and one tagged with the CUR spelling (not placed by tag)."""
    window = {"ChargePeriodStart": "2026-10-12 09:00:00", "ChargePeriodEnd": "2026-10-12 10:00:00"}
    money = {"BilledCost": "7.0", "EffectiveCost": "7.0", "ListCost": "7.0"}
    return [
        focus_row("Microsoft", 10, ResourceId="/subscriptions/s1/vm/vm-focus",
                  Tags={"attempt-id": "att-focus", "experiment-id": "exp-x"}, **window, **money),
        focus_row("AWS", 10, ResourceId="i-0focus", Tags={"attempt-id": "att-aws"}, **window,
                  BilledCost="6.0", EffectiveCost="6.0", ListCost="6.0"),
        focus_row("Microsoft", 10, ResourceId="/subscriptions/s1/vm/vm-cur",
                  Tags={"user_attempt_id": "att-focus"}, **window,
                  BilledCost="1.0", EffectiveCost="1.0", ListCost="1.0"),
    ]  # fmt: skip


def _attempt(attempt_id: str, provider: str, start: datetime, end: datetime) -> Attempt:
    return Attempt(
        attempt_id, "exp-x", None, "m1", "c1", "d1", provider, "acct", "region", "cluster", "ns",
        "gpu.large", "T4", 1, 1, "on_demand", start, start, end, "succeeded", None, None, None,
        None,
    )  # fmt: skip


ATTEMPTS = [
    _attempt("att-aws", "aws", at(8), at(12)),
    _attempt("att-gcp", "gcp", at(8), at(12)),
    _attempt("att-gke", "gcp", at(8), at(12)),
    _attempt("att-focus", "azure", at(8), at(12)),
    _attempt("att-short", "gcp", at(10), at(10, 20)),
    _attempt("att-first", "gcp", at(10), at(10, 15)),
    _attempt("att-second", "gcp", at(10, 15), at(10, 45)),
    _attempt("att-left", "gcp", at(10), at(10, 15)),
    _attempt("att-ram", "gcp", at(10), at(10, 20)),
]
RESOURCES = [
    AttemptResource("att-short", "vm-short", "instance", None, None, 1),
    AttemptResource("att-first", "vm-shared", "instance", None, None, 1),
    AttemptResource("att-second", "vm-shared", "instance", None, None, 1),
    AttemptResource("att-left", "vm-left", "instance", None, None, 1),
    AttemptResource("att-ram", "vm-ram", "instance", None, None, 1),
]


def write_world(folder: Path, providers: tuple[str, ...] = ("aws", "gcp", "focus")) -> Path:
    """Write the providers' files, the telemetry and runcost.toml; return the config path."""
    if "aws" in providers:
        root = folder / "aws" / "exports" / "mixed-cur"
        write_cur_delivery(
            root, "mixed-cur", "2026-10", aws_lines(), "0b9c9d1e-0000-4000-8000-000000000001"
        )
    if "gcp" in providers:
        write_export(folder / "gcp", gcp_rows(), "ndjson")
    if "focus" in providers:
        write_mixed_csv(folder / "focus" / "mixed" / "focus_2026.csv", focus_rows())
    experiments = [Experiment("exp-x", "vision", "accuracy", 0.9, True)]
    write_telemetry(folder / "telemetry", ATTEMPTS, RESOURCES, experiments)
    config = folder / "runcost.toml"
    config.write_text(CONFIG_HEAD + "".join(SOURCES[name] for name in providers), "utf-8")
    return config
