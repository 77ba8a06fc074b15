"""The macros of a cost line's profile: its columns, what each source computes them from, and the
64-bit key that names a combination (expanded by pipeline.dag.macros, as every other rule)."""

from __future__ import annotations

from pipeline.dag.macro import Macro, relation_columns
from pipeline.dag.service_categories import SERVICE_CATEGORY_MACROS

# A cost line's profile: the text columns with few values in a bill (its provider, account and
# currency, category, service, usage type, account names, delivery, ...), which
# normalized.cost_line_profiles stores once per distinct combination and normalized.cost_line_facts
# names by a 64-bit key; the billing period (the published tables' folder), the resource, its name
# and the tags stay with the line. Three of the four ledger keys are the profile's (contract version
# 4): no per-line table stores them.
PROFILE_COLUMNS = (
    "provider",
    "billing_account_id",
    "billing_currency",
    "source_delivery",
    "source_file",
    "billing_account_name",
    "sub_account_id",
    "sub_account_name",
    "charge_category",
    "charge_class",
    "charge_description",
    "provider_line_type",
    "service_name",
    "sku_id",
    "usage_type",
    "operation",
    "region_id",
    "availability_zone",
    "instance_type",
    "pricing_unit",
    "resource_class",
    "invoice_id",
    "source_format",
    "provider_name",
    "publisher_name",
    "invoice_issuer_name",
    "service_category",
    "charge_frequency",
    "pricing_category",
    "consumed_unit",
    "commitment_discount_category",
    "commitment_discount_id",
    "commitment_discount_name",
    "commitment_discount_status",
    "commitment_discount_type",
    "region_name",
    "resource_type",
    "sku_price_id",
    "billing_account_type",
    "sub_account_type",
    "capacity_reservation_id",
    "capacity_reservation_status",
    "commitment_discount_unit",
    "pricing_currency",
    "service_subcategory",
    "sku_meter",
    "sku_price_details",
)

# runcost's classification of the line, kept on its profile only (normalized.cost_lines does not
# repeat it), which the economics marts read and nothing else
# (docs/economics.md#the-classification-of-a-cost-line): what it pays for, the kind of usage a
# waste finding reads, the accelerator and how many the bill says, and the commitment use of its
# effective cost
CLASSIFICATION_COLUMNS = ("cost_class", "usage_kind", "gpu_model", "gpu_count", "commitment_status")

# The profile columns of a relation, in PROFILE_COLUMNS order, for a select list.
LINE_PROFILE_COLUMNS = relation_columns(
    "line_profile_columns", PROFILE_COLUMNS + CLASSIFICATION_COLUMNS
)

# The profile columns staging.focus_line_profiles computes from a FOCUS file's own columns (the
# provider from provider_name); a FOCUS profile's other columns are the file's.
_FOCUS_COMPUTED = (
    "provider",
    "provider_line_type",
    "instance_type",
    "resource_class",
    "source_format",
)


def _system_label(key: str) -> str:
    """A Google Cloud row's system label ``key`` (NULL when absent), looked up in the row's
    key/value list: no map is made on every row for the two keys a profile reads."""
    return f"list_filter({{relation}}.system_label_entries, lambda e: e.key = '{key}')[1].value"


# What each source's profile columns are computed from: the source columns (and the few per-line
# tests, such as a Google Cloud adjustment's sign) its staging.<source>_line_profiles view reads, as
# names or (name, expression over the line items' alias). A line's profile key hashes these, not the
# profile columns: a hash of dictionary-encoded source text per line, while the profile columns
# (CASE and LIKE rules) are computed once per profile instead of on every line, twice (about 4 CPU
# s less at 10M lines).
PROFILE_SOURCES = {
    "aws": (
        "payer_account_id",
        "currency_code",
        "source_delivery",
        "source_file",
        "payer_account_name",
        "usage_account_id",
        "usage_account_name",
        "line_item_type",
        "line_item_description",
        "product_code",
        "sku_id",
        "usage_type",
        "operation",
        "region_code",
        "availability_zone",
        "instance_type",
        "pricing_unit",
        "invoice_id",
        "invoicing_entity",
        "billing_entity",
        "pricing_term",
        "savings_plan_arn",
        "reservation_arn",
        "region_name",
        "product_family",
        "legal_entity",
        "pricing_currency",
    ),
    "gcp": (
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
            f"coalesce({_system_label('compute.googleapis.com/is_unused_reservation')}, '') "
            "= 'true'",
        ),
        "usage_pricing_unit",
        "usage_unit",
        "seller_name",
        ("is_credit_like", "{relation}.cost <= 0"),
        ("has_committed_use_discount", "{relation}.credit_committed_usage_discount <> 0"),
    ),
    # a FOCUS file carries the profile's columns under their own names, but the five its view
    # computes (staging.focus_line_profiles; the provider from provider_name)
    "focus": tuple(column for column in PROFILE_COLUMNS if column not in _FOCUS_COMPUTED),
}


def _sources(source: str) -> list[tuple[str, str]]:
    return [
        (item, f"{{relation}}.{item}") if isinstance(item, str) else item
        for item in PROFILE_SOURCES[source]
    ]


def _profile_macros(source: str) -> tuple[Macro, Macro, Macro, Macro]:
    """`<source>_profile_key(relation)`: a line's profile key, a 64-bit hash of its profile sources
    (63 bits, a BIGINT on both engines; Spark's is xxhash64, so the values are the engine's own),
    led by the source's name so no two sources share a key; `<source>_profile_sources(relation)`:
    the same sources under their names, for the select list of the profiles view;
    `<source>_sources_profile_key(relation)`: the same key over a relation of those named sources
    (the profiles view's distinct combinations), equal to the key of every line that has them; and
    `<source>_keyed_profile_sources(relation)`: the distinct combinations of a relation of lines,
    each with its key, as a subquery. Each combination is keyed once: hashing the sources of every
    line cost 0.4 CPU s more at 10M lines."""
    items = _sources(source)
    hashed = ", ".join(expression for _, expression in items)
    listed = ", ".join(
        expression if expression == f"{{relation}}.{name}" else f"{expression} as {name}"
        for name, expression in items
    )
    named = ", ".join(f"{{relation}}.{name}" for name, _ in items)
    return (
        Macro(
            f"{source}_profile_key",
            ("relation",),
            f"cast(hash('{source}', {hashed}) >> 1 as bigint)",
            relations=("relation",),
        ),
        Macro(f"{source}_profile_sources", ("relation",), listed, relations=("relation",)),
        Macro(
            f"{source}_sources_profile_key",
            ("relation",),
            f"cast(hash('{source}', {named}) >> 1 as bigint)",
            relations=("relation",),
        ),
        Macro(
            f"{source}_keyed_profile_sources",
            ("relation",),
            f"(select {source}_sources_profile_key(distinct_sources) as profile_key, "
            f"distinct_sources.* from (select distinct {source}_profile_sources({{relation}}) "
            "from {relation}) as distinct_sources)",
            relations=("relation",),
        ),
    )


# The accelerator of an AWS instance family (CUR's, and a FOCUS row's that names an AWS instance
# type): the family is the instance type's first part (p4d of p4d.24xlarge, SageMaker's ml.
# prefix dropped).
AWS_ACCELERATORS = {
    "dl1": "Gaudi",
    "g4ad": "Radeon Pro V520",
    "g4dn": "T4",
    "g5": "A10G",
    "g5g": "T4G",
    "g6": "L4",
    "g6e": "L40S",
    "inf1": "Inferentia",
    "inf2": "Inferentia2",
    "p3": "V100",
    "p3dn": "V100",
    "p4d": "A100",
    "p4de": "A100 80GB",
    "p5": "H100",
    "p5e": "H200",
    "p5en": "H200",
    "trn1": "Trainium",
    "trn1n": "Trainium",
    "trn2": "Trainium2",
}


def _aws_gpu_model() -> str:
    family = r"regexp_extract(coalesce({instance_type}, ''), '^(ml\.)?([a-z0-9]+)\.', 2)"
    whens = " ".join(f"when '{name}' then '{model}'" for name, model in AWS_ACCELERATORS.items())
    return f"case {family} {whens} end"


ACCELERATOR_MACROS = [
    # `aws_accelerator_instance(instance_type)`: an AWS instance type of an accelerator family
    # (p, g, trn, inf, dl; SageMaker's ml. included)
    Macro(
        "aws_accelerator_instance",
        ("instance_type",),
        r"regexp_matches(coalesce({instance_type}, ''), '^(ml\.)?(p[0-9]|g[0-9]|trn|inf|dl)')",
    ),
    # `aws_gpu_model(instance_type)`: its accelerator (AWS_ACCELERATORS), NULL for another family
    Macro("aws_gpu_model", ("instance_type",), _aws_gpu_model()),
    # `named_gpu_model(text)`: the GPU a SKU's text names ("Nvidia Tesla T4 GPU running in
    # Americas": T4; "Nvidia H100 80GB GPU ...": H100 80GB), NULL when it names none
    Macro(
        "named_gpu_model",
        ("text",),
        "upper(nullif(regexp_extract(lower(coalesce({text}, '')), "
        "'nvidia (tesla )?([a-z0-9]+( [0-9]+gb)?) gpu', 2), ''))",
    ),
]

PROFILE_MACROS = [
    *(macro for source in PROFILE_SOURCES for macro in _profile_macros(source)),
    *SERVICE_CATEGORY_MACROS,
    *ACCELERATOR_MACROS,
]

# A FOCUS row's unit in lower case, its consumed unit before its pricing unit: usage seconds read
# hours from it (staging.focus_cost_lines), the resource class its kind (focus_line_profiles).
FOCUS_UNIT = Macro(
    "focus_unit",
    ("relation",),
    "lower(coalesce({relation}.consumed_unit, {relation}.pricing_unit, ''))",
    relations=("relation",),
)
