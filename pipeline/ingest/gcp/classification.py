"""How Google Cloud billing export rows are classified: each service's FOCUS ServiceSubcategory,
the source columns a row's profile is computed from, and its credits of a type (the rules its
staging models call, expanded by pipeline.dag.macros as every rule)."""

from __future__ import annotations

from pipeline.common.macro import Macro

# Google Cloud billing export service.description -> FOCUS ServiceSubcategory.
SERVICE_SUBCATEGORIES = {
    "Vertex AI": "Machine Learning",
    "Cloud Natural Language API": "Natural Language Processing",
    "BigQuery": "Data Warehouses",
    "Cloud Dataflow": "Data Processing",
    "Cloud Dataproc": "Data Processing",
    "Cloud Pub/Sub": "Messaging",
    "Compute Engine": "Virtual Machines",
    "Kubernetes Engine": "Containers",
    "Artifact Registry": "Containers",
    "Cloud Run": "Serverless Compute",
    "Cloud Functions": "Serverless Compute",
    "Memorystore for Redis": "Caching",
    "Cloud SQL": "Relational Databases",
    "Cloud Spanner": "Relational Databases",
    "Cloud Bigtable": "NoSQL Databases",
    "Cloud Firestore": "NoSQL Databases",
    "Cloud Build": "Continuous Integration and Deployment",
    "Cloud Monitoring": "Observability",
    "Cloud Logging": "Observability",
    "Support": "Support",
    "Networking": "Network Infrastructure",
    "Cloud Load Balancing": "Application Networking",
    "Cloud CDN": "Content Delivery",
    "Cloud DNS": "Network Routing",
    "Cloud Key Management Service (KMS)": "Secret Management",
    "Secret Manager": "Secret Management",
    "Cloud Storage": "Object Storage",
    "Filestore": "File Storage",
}


def _system_label(key: str) -> str:
    """A Google Cloud row's system label ``key`` (NULL when absent), looked up in the row's
    key/value list: no map is made on every row for the two keys a profile reads."""
    return f"list_filter({{relation}}.system_label_entries, lambda e: e.key = '{key}')[1].value"


# What the profile columns of a row are computed from (staging.gcp_line_profiles): the export's
# columns, and the few per-row tests (an adjustment's sign) its profile key hashes.
PROFILE_SOURCES = (
    "billing_account_id",
    "currency",
    "source_delivery",
    "source_file",
    "project_id",
    "project_name",
    "cost_type",
    "adjustment_id",
    "adjustment_type",
    "sku_description",
    "service_description",
    "sku_id",
    "location_region",
    "location_zone",
    ("machine_spec", _system_label("compute.googleapis.com/machine_spec")),
    (
        "is_unused_reservation",
        f"coalesce({_system_label('compute.googleapis.com/is_unused_reservation')}, '') = 'true'",
    ),
    "usage_pricing_unit",
    "usage_unit",
    "seller_name",
    ("is_credit_like", "{relation}.cost <= 0"),
    ("has_committed_use_discount", "{relation}.credit_committed_usage_discount <> 0"),
)

# The sum of a Google Cloud row's credits of one type (0 when it has none), over the row's own
# credits list: a join or unnest would repeat the row's cost once per credit. A row without
# credits (most rows of a bill) skips the list work.
GCP_CREDITS_OF_TYPE = Macro(
    "gcp_credits_of_type",
    ("credit_entries", "credit_type"),
    "case when array_length({credit_entries}) > 0 then coalesce(list_sum(list_transform("
    "list_filter({credit_entries}, lambda credit: credit.type = {credit_type}), "
    "lambda credit: credit.amount)), 0) else money(0) end",
)
# The sum of all of a row's credits, likewise.
GCP_CREDITS_TOTAL = Macro(
    "gcp_credits_total",
    ("credit_entries",),
    "case when array_length({credit_entries}) > 0 then coalesce(list_sum(list_transform("
    "{credit_entries}, lambda credit: credit.amount)), 0) else money(0) end",
)

MACROS = (GCP_CREDITS_OF_TYPE, GCP_CREDITS_TOTAL)
