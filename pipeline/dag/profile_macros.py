"""The macros of a cost line's profile: its columns, what each source computes them from, and the
64-bit key that names a combination (expanded by pipeline.dag.macros, as every other rule)."""

from __future__ import annotations

from pipeline.common.macro import Macro, relation_columns
from pipeline.dag.service_categories import SERVICE_CATEGORY_MACROS
from pipeline.ingest.registry import PROVIDERS

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

# What each source's profile columns are computed from: the source columns (and the few per-line
# tests, such as a Google Cloud adjustment's sign) its staging.<source>_line_profiles view reads, as
# names or (name, expression over the line items' alias). A line's profile key hashes these, not the
# profile columns: a hash of dictionary-encoded source text per line, while the profile columns
# (CASE and LIKE rules) are computed once per profile instead of on every line, twice (about 4 CPU
# s less at 10M lines).
PROFILE_SOURCES = {
    provider.name: provider.profile_sources(PROFILE_COLUMNS) for provider in PROVIDERS
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


ACCELERATOR_MACROS = [
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
    # each provider's own rules its staging models call (pipeline/ingest/<provider>/)
    *(macro for provider in PROVIDERS for macro in provider.macros),
]
