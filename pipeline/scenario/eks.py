"""EKS split cost allocation rows as AWS writes them: vCPU, GB and Accelerator rows per pod-hour."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from pipeline.scenario import catalog
from pipeline.scenario.cur_writer import CurLine, money

SPLIT_OPERATIONS = ("EKSPod-EC2", "ECSTask-EC2")
# AWS's relative unit weights: GPU : (CPU + memory) = 9 : 1 and, within that, CPU : memory = 9 : 1.
# Instances without accelerators keep the plain CPU : memory = 9 : 1.
GPU_WEIGHTS = {"Accelerator": Fraction(9), "vCPU": Fraction(9, 10), "GB": Fraction(1, 10)}
CPU_WEIGHTS = {"Accelerator": Fraction(0), "vCPU": Fraction(9), "GB": Fraction(1)}
RESOURCES = ("vCPU", "GB", "Accelerator")
USAGE_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class Pod:
    """A pod's requests (reserved) and measured use in one hour; GPUs have no measured use."""

    arn: str
    labels: dict[str, str]
    reserved: dict[str, Decimal]
    actual: dict[str, Decimal] = field(default_factory=dict)

    def split_usage(self, resource: str) -> Decimal:
        """max(reserved, actual): what AWS allocates to the pod."""
        return max(self.reserved.get(resource, Decimal(0)), self.actual.get(resource, Decimal(0)))


def capacity(instance_type: str) -> dict[str, Decimal]:
    """vCPU, GB of memory and accelerators of an instance type."""
    spec = catalog.INSTANCES[instance_type]
    gigabytes = Decimal(spec.memory.removesuffix(" GiB"))
    return {"vCPU": Decimal(spec.vcpu), "GB": gigabytes, "Accelerator": Decimal(spec.gpu)}


def split_costs(
    instance_type: str, hourly_cost: Decimal, pods: list[Pod]
) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    """(pod arn, resource) -> (split cost, unused cost), each to 6 places, for one hour.

    unit = cost / (9 GPUs + 0.9 vCPU + 0.1 GB) on accelerated instances (9 vCPU + 1 GB
    otherwise); a pod's split cost is its split usage times the resource's rate, and each
    resource's unused capacity cost is spread over the pods using it by split usage. The
    rounding remainder goes to the largest unused row, so the rows sum exactly to the cost.
    """
    caps = capacity(instance_type)
    weights = GPU_WEIGHTS if caps["Accelerator"] else CPU_WEIGHTS
    units = sum((weights[name] * Fraction(caps[name]) for name in RESOURCES), Fraction(0))
    unit = Fraction(hourly_cost) / units
    exact: dict[tuple[str, str], tuple[Fraction, Fraction]] = {}
    for resource in RESOURCES:
        rate = weights[resource] * unit
        used = sum((Fraction(pod.split_usage(resource)) for pod in pods), Fraction(0))
        if not used or not rate:
            continue
        if used > Fraction(caps[resource]):
            raise ValueError(f"pods use more {resource} than {instance_type} has")
        unused = (Fraction(caps[resource]) - used) * rate
        for pod in pods:
            usage = Fraction(pod.split_usage(resource))
            if usage:
                exact[pod.arn, resource] = (usage * rate, unused * usage / used)
    rows = {
        key: (money(_decimal(split)), money(_decimal(unused)))
        for key, (split, unused) in exact.items()
    }
    total = sum((split + unused for split, unused in rows.values()), Decimal(0))
    largest = max(rows, key=lambda key: (rows[key][1], rows[key][0], key))
    split, unused = rows[largest]
    rows[largest] = (split, unused + money(hourly_cost) - total)
    return rows


def _decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


def pod_rows(
    node: str,
    instance_type: str,
    hour: datetime,
    end: datetime,
    pods: list[Pod],
    effective: Decimal,
    public: Decimal,
) -> list[CurLine]:
    """The split rows of one node-hour; net equals effective here (no EDP on EC2)."""
    caps = capacity(instance_type)
    amortized = split_costs(instance_type, effective, pods)
    listed = split_costs(instance_type, public, pods)
    lines = []
    for pod in pods:
        for resource in RESOURCES:
            if (pod.arn, resource) not in amortized:
                continue
            split, unused = amortized[pod.arn, resource]
            public_split, public_unused = listed[pod.arn, resource]
            usage = pod.split_usage(resource)
            actual = pod.actual.get(resource)
            lines.append(
                CurLine(
                    usage_start=hour,
                    usage_end=end,
                    usage_type=f"USE1-EKS-EC2-{resource}-Hours",
                    operation="EKSPod-EC2",
                    resource_id=pod.arn,
                    usage_amount=usage,
                    pricing_unit=f"{resource}-Hours",
                    unblended_cost=Decimal(0),
                    resource_tags=dict(pod.labels),
                    description=f"EKS pod {resource} split of {node}",
                    columns={
                        "split_line_item_parent_resource_id": node,
                        "split_line_item_reserved_usage": float(pod.reserved.get(resource, 0)),
                        "split_line_item_actual_usage": None if actual is None else float(actual),
                        "split_line_item_split_usage": float(usage),
                        "split_line_item_split_usage_ratio": float(
                            (usage / caps[resource]).quantize(Decimal("0.000001"))
                        ),
                        "split_line_item_split_cost": float(split),
                        "split_line_item_unused_cost": float(unused),
                        "split_line_item_net_split_cost": float(split),
                        "split_line_item_net_unused_cost": float(unused),
                        "split_line_item_public_on_demand_split_cost": float(public_split),
                        "split_line_item_public_on_demand_unused_cost": float(public_unused),
                    },
                )
            )
    return lines
