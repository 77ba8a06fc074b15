"""A FOCUS world for the economics marts: what a FOCUS 1.2 file says about GPUs, spot capacity,
disks, stored checkpoints, egress, commitments, the cluster fee and support, in the FOCUS
sample's CSV layout.

AWS rows as its FOCUS export writes them (x_UsageType, SkuPriceDetails with InstanceType and
GpuCount) and a Google Cloud GPU row named only by its charge description. Every figure the tests
check is worked out by hand in the comments beside the rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from focus_world import row, write_mixed_csv

from pipeline.scenario.telemetry_writer import (
    Attempt,
    AttemptResource,
    Experiment,
    write_telemetry,
)

GPU_VM, SPOT_VM, IDLE_VM = "i-0gpu0001", "i-0spot0001", "i-0idle0001"
DATA_DISK, ORPHAN_DISK = "vol-0data0001", "vol-0orphan0001"
CHECKPOINTS = "ckpt-bucket-f1"  # the S3 bucket att-f1 wrote its checkpoints to
COMMITMENT = "arn:aws:savingsplans::123456789012:savingsplan/sp-econ-1"
F1 = {"user_attempt_id": "att-f1", "user_experiment_id": "exp-f"}
F2 = {"user_attempt_id": "att-f2", "user_experiment_id": "exp-f"}
F3 = {"user_attempt_id": "att-f3", "user_experiment_id": "exp-g"}
EXP_G = {"user_experiment_id": "exp-g"}
CONFIG = """\
[warehouse]
path = "warehouse"

[focus]
files = ["focus/economics"]

[telemetry]
path = "telemetry"

[attribution]
attempt_tag_keys = ["user_attempt_id"]
experiment_tag_keys = ["user_experiment_id"]

[[pools]]
name = "unused-commitments"
selector = "commitment_discount_status = 'Unused'"
driver = "gpu_seconds"
spread = "charge_period"

[[pools]]
name = "control-plane"
selector = "service_subcategory = 'Containers'"
driver = "gpu_seconds"
spread = "charge_period"

[[pools]]
name = "support"
selector = "service_subcategory = 'Support'"
driver = "gpu_seconds"
spread = "charge_period"
"""


def _hour(day: int, hour: int, hours: int = 1) -> dict[str, str]:
    end = datetime(2026, 10, day, hour, tzinfo=UTC).timestamp() + hours * 3600
    stop = datetime.fromtimestamp(end, UTC)
    return {
        "ChargePeriodStart": f"2026-10-{day:02d} {hour:02d}:00:00",
        "ChargePeriodEnd": stop.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _money(amount: str) -> dict[str, str]:
    return {"BilledCost": amount, "EffectiveCost": amount, "ListCost": amount}


def _aws(**values: object) -> dict[str, str]:
    extra = {"ServiceSubcategory": "NULL", "SkuPriceDetails": "NULL", "x_UsageType": "NULL"}
    return row("AWS", 10, **{**extra, **values})


def economics_rows() -> list[dict[str, str]]:
    """The rows; each is one line of the bill."""
    ec2 = {"ServiceName": "Amazon Elastic Compute Cloud", "ServiceSubcategory": "Virtual Machines",
           "ConsumedUnit": "Hours", "PricingUnit": "Hours", "ConsumedQuantity": "1"}  # fmt: skip
    p4d = {**ec2, "ResourceId": GPU_VM, "Tags": F1, "x_UsageType": "USE1-BoxUsage:p4d.24xlarge",
           "SkuPriceDetails": '{"InstanceType": "p4d.24xlarge", "GpuCount": 8}'}  # fmt: skip
    spot = {**ec2, "ResourceId": SPOT_VM, "Tags": F2, "PricingCategory": "Dynamic",
            "x_UsageType": "USE1-SpotUsage:g5.xlarge"}  # fmt: skip
    idle = {**ec2, "ResourceId": IDLE_VM, "x_UsageType": "USE1-BoxUsage:m5.xlarge"}
    ebs = {"ServiceName": "Amazon Elastic Compute Cloud", "ServiceCategory": "Storage",
           "ServiceSubcategory": "Block Storage", "ConsumedUnit": "GB-Months",
           "PricingUnit": "GB-Months", "x_UsageType": "USE1-EBS:VolumeUsage.gp3"}  # fmt: skip
    s3 = {"ServiceName": "Amazon Simple Storage Service", "ServiceCategory": "Storage",
          "ServiceSubcategory": "Object Storage", "ConsumedUnit": "GB-Months",
          "PricingUnit": "GB-Months", "x_UsageType": "USE1-TimedStorage-ByteHrs"}  # fmt: skip
    rows = [
        # exp-f's GPUs: two p4d hours (accelerator, A100 x 8) and two g5 Spot hours (A10G)
        *(_aws(**p4d, **_hour(2, hour), **_money("32.7726000000")) for hour in (10, 11)),
        *(_aws(**spot, **_hour(2, hour), **_money("0.4000000000")) for hour in (10, 11)),
        # the p4d's data disk (storage 0.25) and its egress (networking 0.90)
        _aws(**ebs, ResourceId=DATA_DISK, Tags=F1, **_hour(2, 10, 2), **_money("0.2500000000")),
        _aws(ServiceName="AWS Data Transfer", ServiceCategory="Networking", ConsumedUnit="GB",
             PricingUnit="GB", Tags=F1, **_hour(2, 10), **_money("0.9000000000")),
        # a volume no attempt held, billed 30 hours: an unattached disk, medium confidence
        _aws(**ebs, ResourceId=ORPHAN_DISK, **_hour(5, 0, 30), **_money("0.3000000000")),
        # an instance no attempt held, three hours at 0.192: an idle instance, low confidence
        *(_aws(**idle, **_hour(6, hour), **_money("0.1920000000")) for hour in (1, 2, 3)),
        # checkpoints kept past the 7 stale days after the last attempt ended: a day of S3 tagged
        # to exp-g (att-f3 ended October 3, 10:00), 0.05, high confidence; a day of the bucket
        # att-f1 held (it ended October 2, 12:00), untagged, 0.08, medium confidence
        _aws(**s3, Tags=EXP_G, **_hour(15, 0, 24), **_money("0.0500000000")),
        _aws(**s3, ResourceId=CHECKPOINTS, **_hour(20, 0, 24), **_money("0.0800000000")),
        # the Savings Plan: its fee a Purchase of effective cost 0, its unused hour idle capacity
        _aws(ChargeCategory="Purchase", ChargeFrequency="Recurring", **_hour(2, 10),
             CommitmentDiscountId=COMMITMENT, CommitmentDiscountCategory="Spend",
             CommitmentDiscountType="Compute Savings Plans", BilledCost="2.0000000000",
             EffectiveCost="0.0000000000", ListCost="0.0000000000"),
        _aws(CommitmentDiscountId=COMMITMENT, CommitmentDiscountStatus="Unused",
             CommitmentDiscountCategory="Spend", **_hour(2, 10), **_money("1.5000000000")),
        # the EKS cluster fee for two hours, and a day of Business support
        *(_aws(ServiceName="Amazon Elastic Kubernetes Service", ServiceSubcategory="Containers",
               ConsumedUnit="Hours", PricingUnit="Hours", **_hour(2, hour),
               **_money("0.1000000000")) for hour in (10, 11)),
        _aws(ServiceName="AWS Support (Business)", ServiceCategory="Management and Governance",
             ServiceSubcategory="Support", **_hour(2, 0, 24), **_money("5.0000000000")),
    ]  # fmt: skip
    google = row(
        "AWS", 10, ProviderName="Google Cloud", PublisherName="Google Cloud",
        InvoiceIssuerName="Google Cloud", ChargeDescription="Nvidia Tesla T4 GPU running in "
        "Americas", ConsumedUnit="Hours", PricingUnit="Hours", ConsumedQuantity="1", Tags=F3,
        ServiceName="Compute Engine", ServiceSubcategory="Virtual Machines",
        SkuPriceDetails="NULL", x_UsageType="NULL", **_hour(3, 9), **_money("0.3500000000"),
    )  # fmt: skip
    return [*rows, google]


def write_focus_economics_world(folder: Path) -> Path:
    """Write the FOCUS file, the telemetry and runcost.toml under ``folder``; return the config."""
    write_mixed_csv(folder / "focus" / "economics" / "focus_2026_10.csv", economics_rows())

    def attempt(attempt_id: str, experiment: str, gpus: int, capacity: str, start: datetime,
                hours: int) -> Attempt:  # fmt: skip
        end = datetime.fromtimestamp(start.timestamp() + hours * 3600, UTC)
        return Attempt(
            attempt_id, experiment, None, "m1", "c1", "d1", "aws", "acct", "us-east-1",
            "cluster", "ns", "gpu", "A100", gpus, 1, capacity, start, start, end, "succeeded",
            None, None, None, None,
        )  # fmt: skip

    attempts = [
        attempt("att-f1", "exp-f", 8, "on_demand", datetime(2026, 10, 2, 10, tzinfo=UTC), 2),
        attempt("att-f2", "exp-f", 1, "spot", datetime(2026, 10, 2, 10, tzinfo=UTC), 2),
        attempt("att-f3", "exp-g", 1, "on_demand", datetime(2026, 10, 3, 9, tzinfo=UTC), 1),
    ]
    held = [
        AttemptResource("att-f1", GPU_VM, "instance", None, None, 8),
        AttemptResource("att-f1", CHECKPOINTS, "s3_bucket", None, None, 0),
    ]
    experiments = [
        Experiment("exp-f", "vision", "accuracy", 0.9, True),
        Experiment("exp-g", "speech", "accuracy", 0.9, True),
    ]
    write_telemetry(folder / "telemetry", attempts, held, experiments)
    config = folder / "runcost.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return config
