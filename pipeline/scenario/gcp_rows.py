"""A Google Cloud detailed export's rows as the GCP demo world writes them: the account, the SKUs
and their prices, a row and its credits."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

ACCOUNT = "01A2B3-C4D5E6-F7A8B9"
PROJECT = "ml-research-prod"
REGION, ZONE = "us-central1", "us-central1-a"
COMPUTE = ("6F81-5844-456A", "Compute Engine")
INVOICE = ("2B6C-1A8E-7F20", "Invoice")
GKE = ("CCD8-9BF1-090E", "Kubernetes Engine")
GCS = ("95FF-2EF5-5EA1", "Cloud Storage")
HOUR = timedelta(hours=1)
GIB = 2**30
LATE_MONTH = "202611"

# (sku id, description, unit price per pricing unit); the T4 id is in the SQL's GPU SKU list, the
# A100's is not, so it is classified by its description
N1_CORE = ("2E27-4F75-95CD", "N1 Predefined Instance Core running in Americas", Decimal("0.031611"))
N1_RAM = ("6C71-E0DB-4C4A", "N1 Predefined Instance Ram running in Americas", Decimal("0.004237"))
T4 = ("88B8-C3ED-03F0", "Nvidia Tesla T4 GPU running in Americas", Decimal("0.35"))
A2_CORE = ("9D1B-7C2E-4A11", "A2 Instance Core running in Americas", Decimal("0.031611"))
A2_RAM = ("9D1B-7C2E-4A12", "A2 Instance Ram running in Americas", Decimal("0.004237"))
A100 = ("9D1B-7C2E-4A13", "Nvidia Tesla A100 GPU running in Americas", Decimal("2.933908"))
PD = ("D973-5D65-BAB2", "Balanced PD Capacity", Decimal("0.000136986"))  # per GiB-hour
EGRESS = ("DFA5-B5C6-36D6", "Network Internet Egress from Americas to EMEA", Decimal("0.12"))
CUD_CPU = ("3C1E-44A2-0F11", "Commitment v1: A2 Cpu in Americas for 1 Year", Decimal("0.019915"))
CUD_RAM = ("3C1E-44A2-0F12", "Commitment v1: A2 Ram in Americas for 1 Year", Decimal("0.002669"))
SPOT_CORE = ("9A2B-1C3D-5E01", "Spot Preemptible N1 Predefined Instance Core running in Americas",
             Decimal("0.006655"))  # fmt: skip
SPOT_RAM = ("9A2B-1C3D-5E02", "Spot Preemptible N1 Predefined Instance Ram running in Americas",
            Decimal("0.000892"))  # fmt: skip
SPOT_T4 = ("9A2B-1C3D-5E03", "Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in "
           "Americas", Decimal("0.14"))  # fmt: skip
GKE_FEE = ("B561-BFBD-1264", "Zonal Kubernetes Clusters", Decimal("0.10"))  # per cluster-hour
# per GiB-hour: 0.026 a GiB-month of 730 hours
STANDARD_STORAGE = ("E5F0-6A5D-7BAD", "Standard Storage US Multi-region", Decimal("0.000035616"))


@dataclass(frozen=True)
class Credit:
    """One entry of a row's credits array (amounts are negative)."""

    type: str
    name: str
    amount: Decimal


@dataclass(frozen=True)
class GcpRow:
    """One row of the billing export, as the oracle and the writer see it."""

    sku: tuple[str, str, Decimal]
    usage_start: datetime
    usage_end: datetime
    cost: Decimal
    invoice_month: str
    export_time: datetime
    usage: tuple[Decimal, str, str] = (Decimal(0), "seconds", "hour")  # amount, unit, pricing
    cost_at_list: Decimal | None = None
    credits: tuple[Credit, ...] = ()
    cost_type: str = "regular"
    labels: dict[str, str] = field(default_factory=dict)
    system_labels: dict[str, str] = field(default_factory=dict)
    resource_name: str | None = None
    global_name: str | None = None
    service: tuple[str, str] = COMPUTE
    subscription: str | None = None
    adjustment: dict[str, str] | None = None

    @property
    def billing_period(self) -> str:
        return f"{self.invoice_month[:4]}-{self.invoice_month[4:]}"

    @property
    def resource_id(self) -> str | None:
        return self.resource_name.rsplit("/", 1)[-1] if self.resource_name else None

    @property
    def resource_tags(self) -> dict[str, str]:
        """labels, with each GKE pod label k8s-label/<key> also as <key> (a plain label wins)."""
        tags = dict(self.labels)
        for key, value in self.labels.items():
            if key.startswith("k8s-label/"):
                tags.setdefault(key.removeprefix("k8s-label/"), value)
        return tags

    @property
    def pricing_unit(self) -> str:
        """The oracle's resource-time rule: time-unit usage runs `usage_amount` hours of the
        window ("Hrs", as for AWS); any other unit spans the whole window."""
        return "Hrs" if self.usage[1] in ("seconds", "hour") else self.usage[2]

    @property
    def usage_amount(self) -> Decimal:
        amount, unit, _pricing = self.usage
        return amount / 3600 if unit == "seconds" else amount
