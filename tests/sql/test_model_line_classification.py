"""The provider-neutral classification on the line profiles: each Google Cloud rule on its own row
(GPU SKUs, accelerator-optimized machine types, Spot SKUs, disks, egress, the GKE fee, support,
commitments), as normalized.cost_lines carries it."""

from __future__ import annotations

import pytest
from builders import build_models, records
from gcp_rows import gcp_row, write_gcp

COLUMNS = ("cost_class", "usage_kind", "gpu_model", "gpu_count", "commitment_status")
SPEC = "compute.googleapis.com/machine_spec"


def sku(description: str, sku_id: str = "0000-0000-0001") -> dict[str, str]:
    return {"id": sku_id, "description": description}


def machine(spec: str) -> dict[str, str]:
    return {SPEC: spec}


GKE = {"id": "CCD8-9BF1-090E", "description": "Kubernetes Engine"}
SUPPORT = {"id": "2062-016F-44A2", "description": "Support"}
STORAGE = {"id": "95FF-2EF5-5EA1", "description": "Cloud Storage"}
ROWS = {
    # (row, expected cost_class, usage_kind, gpu_model, gpu_count, commitment_status,
    # pricing_category)
    "n1-core": (gcp_row(system_labels=machine("n1-standard-8")),
                ("compute", "instance", None, None, None, "Standard")),
    "t4-by-id": (gcp_row(sku=sku("Accelerator running in Americas", "88B8-C3ED-03F0")),
                 ("accelerator", "instance", None, None, None, "Standard")),
    "t4": (gcp_row(sku=sku("Nvidia Tesla T4 GPU running in Americas")),
           ("accelerator", "instance", "T4", None, None, "Standard")),
    "h100-80gb": (gcp_row(sku=sku("Nvidia H100 80GB GPU running in Americas")),
                  ("accelerator", "instance", "H100 80GB", None, None, "Standard")),
    "a2-core-2g": (gcp_row(sku=sku("A2 Instance Core running in Americas"),
                           system_labels=machine("a2-highgpu-2g")),
                   ("accelerator", "instance", "A100", 2, None, "Standard")),
    "a2-ultragpu-ram": (gcp_row(sku=sku("A2 Instance Ram running in Americas"),
                                system_labels=machine("a2-ultragpu-8g")),
                        ("accelerator", "instance", "A100 80GB", 8, None, "Standard")),
    "a3-core": (gcp_row(sku=sku("A3 Instance Core running in Americas"),
                        system_labels=machine("a3-highgpu-8g")),
                ("accelerator", "instance", "H100", 8, None, "Standard")),
    "g2-core-48": (gcp_row(sku=sku("G2 Instance Core running in Americas"),
                           system_labels=machine("g2-standard-48")),
                   ("accelerator", "instance", "L4", 4, None, "Standard")),
    "g2-core-8": (gcp_row(sku=sku("G2 Instance Core running in Americas"),
                          system_labels=machine("g2-standard-8")),
                  ("accelerator", "instance", "L4", 1, None, "Standard")),
    "spot-core": (gcp_row(sku=sku("Spot Preemptible N1 Predefined Instance Core running in "
                                  "Americas")),
                  ("compute", "instance", None, None, None, "Dynamic")),
    "spot-t4": (gcp_row(sku=sku("Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running "
                                "in Americas")),
                ("accelerator", "instance", "T4", None, None, "Dynamic")),
    "cud-covered": (gcp_row(credits=[{"name": "CUD", "amount": -1.0, "full_name": None,
                                      "id": "CUD", "type": "COMMITTED_USAGE_DISCOUNT"}]),
                    ("compute", "instance", None, None, "Used", "Committed")),
    "a2-commitment": (gcp_row(sku=sku("Commitment v1: A2 Cpu in Americas for 1 Year")),
                      ("accelerator", None, "A100", None, None, "Standard")),
    "n1-commitment": (gcp_row(sku=sku("Commitment v1: Cpu in Americas for 1 Year")),
                      ("compute", None, None, None, None, "Standard")),
    "unused-reservation": (gcp_row(sku=sku("Nvidia Tesla A100 GPU running in Americas"),
                                   system_labels={"compute.googleapis.com/"
                                                  "is_unused_reservation": "true"}),
                           ("accelerator", "instance", "A100", None, "Unused", "Standard")),
    "balanced-pd": (gcp_row(sku=sku("Balanced PD Capacity")),
                    ("storage", "disk", None, None, None, "Standard")),
    "hyperdisk": (gcp_row(sku=sku("Hyperdisk Balanced Capacity in Americas")),
                  ("storage", "disk", None, None, None, "Standard")),
    "local-ssd": (gcp_row(sku=sku("SSD backed Local Storage (Local SSD) in Americas"),
                          usage={"amount": 1.0, "unit": "byte-seconds",
                                 "amount_in_pricing_units": 1.0,
                                 "pricing_unit": "gibibyte month"}),
                  ("storage", None, None, None, None, "Standard")),
    "snapshot": (gcp_row(sku=sku("Storage PD Snapshot in Americas")),
                 ("storage", "stored_data", None, None, None, "Standard")),
    "bucket": (gcp_row(service=STORAGE, sku=sku("Standard Storage US Multi-region"),
                       usage={"amount": 1.0, "unit": "byte-seconds",
                              "amount_in_pricing_units": 1.0,
                              "pricing_unit": "gibibyte month"}),
               ("storage", "stored_data", None, None, None, "Standard")),
    "bucket-operations": (gcp_row(service=STORAGE, sku=sku("Class A Operations")),
                          ("storage", None, None, None, None, "Standard")),
    "egress": (gcp_row(sku=sku("Network Internet Egress from Americas to EMEA")),
               ("network", None, None, None, None, "Standard")),
    "gke-fee": (gcp_row(service=GKE, sku=sku("Zonal Kubernetes Clusters")),
                ("control_plane", None, None, None, None, "Standard")),
    "support": (gcp_row(service=SUPPORT, sku=sku("Enhanced Support")),
                ("support", None, None, None, None, "Standard")),
    "tax": (gcp_row(cost=1.0, cost_type="tax"), ("other", None, None, None, None, None)),
}  # fmt: skip
NAMES = list(ROWS)


@pytest.fixture(scope="module")
def lines(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("classes")
    delivery = write_gcp(folder / "raw", [item[0] for item in ROWS.values()])
    con, report = build_models(folder, [], deliveries=[delivery])
    assert not report.check_failures
    rows = records(
        con,
        "select lines.*, profiles.cost_class, profiles.usage_kind, profiles.gpu_model, "
        "profiles.gpu_count, profiles.commitment_status from normalized.cost_lines as lines "
        "inner join normalized.cost_line_facts as facts on lines.line_id = facts.line_id "
        "inner join normalized.cost_line_profiles as profiles "
        "on facts.profile_key = profiles.profile_key order by lines.line_id",
    )
    return dict(zip(NAMES, rows, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_each_google_cloud_rule(lines, name) -> None:
    line = lines[name]
    got = (*(line[column] for column in COLUMNS), line["pricing_category"])
    assert got == ROWS[name][1]
