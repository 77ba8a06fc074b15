"""Hourly CUR 2.0 lines for each kind of charge the scenario bills (EC2, SP, EBS, S3, EKS, tax)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from pipeline.scenario import catalog
from pipeline.scenario.cur_writer import CurLine, money, period_bounds

HOUR = timedelta(hours=1)
USAGE_PLACES = Decimal("0.0000000001")
LOCATION_COLUMNS = {
    "product_from_location": catalog.LOCATION,
    "product_from_location_type": "AWS Region",
    "product_from_region_code": catalog.REGION,
    "product_to_location": catalog.LOCATION,
    "product_to_location_type": "AWS Region",
    "product_to_region_code": catalog.REGION,
}


def hours(start: datetime, end: datetime) -> Iterator[tuple[datetime, Decimal]]:
    """Each UTC hour that [start, end) touches, with the hours of it inside (0 < h <= 1)."""
    hour = start.replace(minute=0, second=0, microsecond=0)
    while hour < end:
        inside = min(end, hour + HOUR) - max(start, hour)
        yield hour, Decimal(int(inside.total_seconds())) / 3600
        hour += HOUR


@dataclass(frozen=True)
class SavingsPlan:
    """A No Upfront EC2 Instance Savings Plan: an hourly commitment spent at a plan rate."""

    arn: str
    instance_family: str
    rate: Decimal  # USD per covered instance-hour
    commitment: Decimal  # USD per hour

    def columns(self) -> dict[str, str]:
        return {
            "savings_plan_offering_type": "EC2InstanceSavingsPlans",
            "savings_plan_payment_option": "No Upfront",
            "savings_plan_purchase_term": "1yr",
            "savings_plan_instance_type_family": self.instance_family,
            "savings_plan_region": catalog.LOCATION,
            "savings_plan_start_time": "2026-09-01T00:00:00.000Z",
            "savings_plan_end_time": "2027-08-31T23:59:59.000Z",
        }


@dataclass
class Bill:
    """The lines of one billing period, built charge by charge."""

    billing_period: str
    invoice_id: str
    plan: SavingsPlan
    private_rates: dict[str, Decimal] = field(default_factory=dict)  # product -> discount
    lines: list[CurLine] = field(default_factory=list)
    plan_used: dict[datetime, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    def add(self, **values: object) -> None:
        """Append a line; usage of a product with a private rate gets its discount line too."""
        line = CurLine(billing_period=self.billing_period, invoice_id=self.invoice_id, **values)  # type: ignore[arg-type]
        self.lines.append(line)
        discount = self.private_rates.get(line.product_code)
        if discount is None or line.line_item_type != "Usage":
            return
        gross = money(line.unblended_cost)
        line.net_unblended_cost = money(gross * (1 - discount))
        self.lines.append(
            replace(
                line,
                line_item_type="PrivateRateDiscount",
                usage_amount=Decimal(0),
                pricing_term="",
                unblended_rate=None,
                unblended_cost=line.net_unblended_cost - gross,
                net_unblended_cost=None,
                public_on_demand_rate=None,
                public_on_demand_cost=None,
                description=f"Private rate discount of {discount:%} for {line.product_code}",
            )
        )

    def instance(
        self,
        resource_id: str,
        instance_type: str,
        start: datetime,
        end: datetime,
        zone: str,
        tags: dict[str, str] | None = None,
        spot_rates: list[Decimal] | None = None,
    ) -> None:
        """Instance-hours from start to end; on-demand hours of the plan's family use it first."""
        spec = catalog.INSTANCES[instance_type]
        common = {
            "resource_id": resource_id,
            "instance_type": instance_type,
            "availability_zone": zone,
            "product_family": "Compute Instance",
            "resource_tags": dict(tags or {}),
            "public_on_demand_rate": spec.on_demand_rate,
        }
        for number, (hour, runtime) in enumerate(hours(start, end)):
            window = {"usage_start": hour, "usage_end": hour + HOUR}
            if spot_rates is not None:
                rate = spot_rates[number]
                self.add(
                    **common,
                    **window,
                    usage_type=f"SpotUsage:{instance_type}",
                    operation="RunInstances:SV001",
                    usage_amount=runtime,
                    pricing_term="Spot",
                    unblended_rate=rate,
                    unblended_cost=money(runtime * rate),
                    public_on_demand_cost=money(runtime * spec.on_demand_rate),
                    description=f"${rate} per Linux/UNIX (Amazon VPC), {instance_type} "
                    "Spot Instance-hour",
                )
                continue
            on_demand = runtime
            if spec.family == self.plan.instance_family:
                covered = min(runtime, self.plan.commitment / self.plan.rate)
                on_demand = runtime - covered
                self._covered(common, window, instance_type, covered)
                self.plan_used[hour] += covered * self.plan.rate
            if on_demand > 0:
                self.add(
                    **common,
                    **window,
                    usage_type=f"BoxUsage:{instance_type}",
                    operation="RunInstances",
                    usage_amount=on_demand,
                    unblended_rate=spec.on_demand_rate,
                    unblended_cost=money(on_demand * spec.on_demand_rate),
                    public_on_demand_cost=money(on_demand * spec.on_demand_rate),
                    description=f"${spec.on_demand_rate} per On Demand Linux {instance_type} "
                    "Instance Hour",
                )

    def _covered(self, common: dict, window: dict, instance_type: str, covered: Decimal) -> None:
        spec = catalog.INSTANCES[instance_type]
        cost = money(covered * spec.on_demand_rate)
        plan = {"savings_plan_arn": self.plan.arn, "columns": self.plan.columns()}
        usage = {"usage_type": f"BoxUsage:{instance_type}", "operation": "RunInstances"}
        self.add(
            **common,
            **window,
            **plan,
            **usage,
            line_item_type="SavingsPlanCoveredUsage",
            usage_amount=covered,
            unblended_rate=spec.on_demand_rate,
            unblended_cost=cost,
            public_on_demand_cost=cost,
            savings_plan_rate=self.plan.rate,
            savings_plan_effective_cost=money(covered * self.plan.rate),
            description=f"{self.plan.rate} USD per hour for Linux/UNIX usage of {instance_type} "
            "under the Savings Plan",
        )
        self.add(
            **common,
            **window,
            **plan,
            **usage,
            line_item_type="SavingsPlanNegation",
            usage_amount=covered,
            unblended_rate=-spec.on_demand_rate,
            unblended_cost=-cost,
            public_on_demand_cost=cost,
            description="SavingsPlanNegation used by AccountId : 222222222222",
        )

    def recurring_fees(self) -> None:
        """The plan's hourly fee for every hour of the period; used = what covered usage spent."""
        start, end = period_bounds(self.billing_period)
        for hour, _ in hours(start, end):
            self.add(
                line_item_type="SavingsPlanRecurringFee",
                usage_start=hour,
                usage_end=hour + HOUR,
                product_code="ComputeSavingsPlans",
                usage_type=f"EC2InstanceSP:{self.plan.instance_family}.1yrNoUpfront",
                resource_id=self.plan.arn,
                usage_amount=Decimal(1),
                pricing_term="",
                unblended_rate=self.plan.commitment,
                unblended_cost=self.plan.commitment,
                savings_plan_arn=self.plan.arn,
                savings_plan_rate=self.plan.rate,
                savings_plan_total_commitment_to_date=self.plan.commitment,
                savings_plan_used_commitment=money(self.plan_used.get(hour, Decimal(0))),
                savings_plan_recurring_commitment=self.plan.commitment,
                columns=self.plan.columns(),
                description="1 year No Upfront EC2 Instance Savings Plan",
            )

    def storage(
        self,
        meter: catalog.Meter,
        resource_id: str,
        gigabytes: list[tuple[datetime, int]],
        zone: str = "",
        tags: dict[str, str] | None = None,
    ) -> None:
        """GB-month storage billed hourly: each hour bills gigabytes / hours-in-month GB-Mo."""
        start, end = period_bounds(self.billing_period)
        month_hours = int((end - start) / HOUR)
        for hour, size in gigabytes:
            usage = Decimal(size) / month_hours
            self.metered(meter, hour, resource_id, usage, zone=zone, tags=tags)

    def metered(
        self,
        meter: catalog.Meter,
        hour: datetime,
        resource_id: str,
        amount: Decimal,
        zone: str = "",
        tags: dict[str, str] | None = None,
    ) -> None:
        """One hour of a metered charge (GB-months, requests, GB transferred, cluster-hours)."""
        cost = money(amount * meter.rate)
        self.add(
            usage_start=hour,
            usage_end=hour + HOUR,
            product_code=meter.product_code,
            usage_type=meter.usage_type,
            operation=meter.operation,
            resource_id=resource_id,
            usage_amount=amount.quantize(USAGE_PLACES),
            pricing_unit=meter.unit,
            unblended_rate=meter.rate,
            unblended_cost=cost,
            public_on_demand_rate=meter.rate,
            public_on_demand_cost=cost,
            availability_zone=zone,
            product_family=meter.family,
            resource_tags=dict(tags or {}),
            columns=dict(LOCATION_COLUMNS) if meter.family == "Data Transfer" else {},
            description=meter.description,
        )

    def taxes(self, products: tuple[str, ...]) -> None:
        """One sales-tax line per product for the whole period, as on a closed invoice."""
        start, end = period_bounds(self.billing_period)
        for product in products:
            base = sum(
                (money(line.unblended_cost) for line in self.lines if line.product_code == product),
                Decimal(0),
            )
            self.add(
                line_item_type="Tax",
                usage_start=start,
                usage_end=end,
                product_code=product,
                usage_amount=Decimal(1),
                pricing_unit="",
                pricing_term="",
                unblended_cost=(base * catalog.SALES_TAX_RATE).quantize(Decimal("0.01")),
                public_on_demand_cost=Decimal(0),
                tax_type="USSalesTax",
                description=f"Tax for product code {product}",
            )


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment in October 2026, UTC."""
    return datetime(2026, 10, day, hour, minute, tzinfo=UTC)
