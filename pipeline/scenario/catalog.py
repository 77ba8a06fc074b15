"""Public us-east-1 prices and instance specs the scenario bills with (Linux, USD, 2026 list)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

REGION = "us-east-1"
LOCATION = "US East (N. Virginia)"


@dataclass(frozen=True)
class InstanceSpec:
    """An EC2 instance type as the price list describes it."""

    family: str
    vcpu: int
    memory: str
    gpu: int
    gpu_type: str
    gpu_memory: str
    processor: str
    normalization_factor: Decimal
    on_demand_rate: Decimal  # USD per instance-hour
    spot_rate: Decimal  # a typical spot price; the world jitters it per hour


INSTANCES: dict[str, InstanceSpec] = {
    "p4d.24xlarge": InstanceSpec(
        "p4d", 96, "1152 GiB", 8, "A100", "320 GiB", "Intel Xeon Platinum 8275CL",
        Decimal(192), Decimal("32.7726"), Decimal("11.5700"),
    ),
    "g5.12xlarge": InstanceSpec(
        "g5", 48, "192 GiB", 4, "A10G", "96 GiB", "AMD EPYC 7R32",
        Decimal(96), Decimal("5.6720"), Decimal("2.0460"),
    ),
    "g5.xlarge": InstanceSpec(
        "g5", 4, "16 GiB", 1, "A10G", "24 GiB", "AMD EPYC 7R32",
        Decimal(8), Decimal("1.0060"), Decimal("0.4024"),
    ),
    "m5.xlarge": InstanceSpec(
        "m5", 4, "16 GiB", 0, "", "", "Intel Xeon Platinum 8175",
        Decimal(8), Decimal("0.1920"), Decimal("0.0768"),
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Meter:
    """A metered charge as CUR names it: product, usage type, operation, unit and public rate."""

    product_code: str
    usage_type: str
    operation: str
    unit: str
    rate: Decimal
    family: str
    description: str


EBS_GP3 = Meter(
    product_code="AmazonEC2",
    usage_type="EBS:VolumeUsage.gp3",
    operation="CreateVolume-Gp3",
    unit="GB-Mo",
    rate=Decimal("0.08"),
    family="Storage",
    description="$0.08 per GB-month of General Purpose (gp3) provisioned storage - US East "
    "(Northern Virginia)",
)
INTER_AZ = Meter(
    product_code="AmazonEC2",
    usage_type="DataTransfer-Regional-Bytes",
    operation="InterZone-Out",
    unit="GB",
    rate=Decimal("0.01"),
    family="Data Transfer",
    description="$0.010 per GB - regional data transfer - in/out/between EC2 AZs or using "
    "elastic IPs or ELB",
)
S3_STORAGE = Meter(
    product_code="AmazonS3",
    usage_type="TimedStorage-ByteHrs",
    operation="StandardStorage",
    unit="GB-Mo",
    rate=Decimal("0.023"),
    family="Storage",
    description="$0.023 per GB - first 50 TB / month of storage used",
)
S3_PUT = Meter(
    product_code="AmazonS3",
    usage_type="Requests-Tier1",
    operation="PutObject",
    unit="Requests",
    rate=Decimal("0.000005"),
    family="API Request",
    description="$0.005 per 1,000 PUT, COPY, POST, or LIST requests",
)
S3_GET = Meter(
    product_code="AmazonS3",
    usage_type="Requests-Tier2",
    operation="GetObject",
    unit="Requests",
    rate=Decimal("0.0000004"),
    family="API Request",
    description="$0.0004 per 1,000 GET and all other requests",
)
EKS_CLUSTER = Meter(
    product_code="AmazonEKS",
    usage_type="USE1-AmazonEKS-Hours:perCluster",
    operation="CreateOperation",
    unit="Hrs",
    rate=Decimal("0.10"),
    family="Compute",
    description="Amazon EKS cluster usage in US East (N. Virginia)",
)
BEDROCK_INPUT = Meter(
    product_code="AmazonBedrock",
    usage_type="USE1-Claude3Haiku-input-tokens",
    operation="InvokeModelInference",
    unit="1K tokens",
    rate=Decimal("0.00025"),
    family="Amazon Bedrock",
    description="$0.00025 per 1K input tokens for Claude 3 Haiku in US East (N. Virginia)",
)
SAGEMAKER_HOSTING = Meter(
    product_code="AmazonSageMaker",
    usage_type="USE1-Hosting:ml.g5.xlarge",
    operation="RunInstance",
    unit="Hrs",
    rate=Decimal("1.408"),
    family="ML Instance",
    description="$1.408 per Hosting ml.g5.xlarge hour in US East (N. Virginia)",
)
SALES_TAX_RATE = Decimal("0.06")
S3_PRIVATE_RATE_DISCOUNT = Decimal("0.10")  # a negotiated private rate on S3, as a discount line

SERVICE_NAMES: dict[str, str] = {
    "AmazonEC2": "Amazon Elastic Compute Cloud",
    "AmazonS3": "Amazon Simple Storage Service",
    "AmazonEKS": "Amazon Elastic Container Service for Kubernetes",
    "ComputeSavingsPlans": "Savings Plans for AWS Compute usage",
    "AmazonBedrock": "Amazon Bedrock",
    "AmazonSageMaker": "Amazon SageMaker",
}


def product_attributes(product_code: str, instance_type: str, region: str) -> dict[str, str]:
    """The `product` map of a line: the attributes AWS puts there for this product."""
    attributes = {
        "product_name": SERVICE_NAMES.get(product_code, product_code),
        "region": region,
    }
    spec = INSTANCES.get(instance_type)
    if spec is not None:
        attributes.update(
            {
                "instance_type_family": spec.family,
                "vcpu": str(spec.vcpu),
                "memory": spec.memory,
                "operating_system": "Linux",
                "tenancy": "Shared",
                "physical_processor": spec.processor,
                "current_generation": "Yes",
            }
        )
        if spec.gpu:
            attributes.update({"gpu": str(spec.gpu), "gpu_memory": spec.gpu_memory})
    return attributes
