"""[[pools]] in runcost.toml: the columns a condition may name, each pool checked with sqlglot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import expressions as exp

from pipeline.common.errors import ConfigError

# Columns of normalized.cost_lines a pool selector may name. tests/unit/test_config.py checks this
# list against the model's real output, so the two cannot drift apart.
COST_LINE_COLUMNS = frozenset(
    {
        "line_id",
        "source_format",
        "provider_name",
        "publisher_name",
        "invoice_issuer_name",
        "service_category",
        "charge_frequency",
        "pricing_category",
        "pricing_quantity",
        "consumed_unit",
        "list_unit_price",
        "contracted_unit_price",
        "contracted_cost",
        "commitment_discount_category",
        "commitment_discount_id",
        "commitment_discount_name",
        "commitment_discount_status",
        "commitment_discount_type",
        "region_name",
        "resource_name",
        "resource_type",
        "sku_price_id",
        "billing_account_type",
        "sub_account_type",
        "capacity_reservation_id",
        "capacity_reservation_status",
        "commitment_discount_quantity",
        "unused_commitment_quantity",
        "commitment_discount_unit",
        "pricing_currency",
        "pricing_currency_list_unit_price",
        "pricing_currency_contracted_unit_price",
        "pricing_currency_effective_cost",
        "service_subcategory",
        "sku_meter",
        "sku_price_details",
        "allocated_method_id",
        "allocated_method_details",
        "allocated_resource_id",
        "allocated_resource_name",
        "allocated_tags",
        "origin_resource_id",
        "service_provider_name",
        "host_provider_name",
        "contract_applied",
        "provider",
        "source_delivery",
        "source_file",
        "source_line",
        "billing_account_id",
        "billing_account_name",
        "sub_account_id",
        "sub_account_name",
        "billing_period",
        "billing_period_start",
        "billing_period_end",
        "charge_period_start",
        "charge_period_end",
        "charge_category",
        "charge_class",
        "charge_description",
        "provider_line_type",
        "service_name",
        "sku_id",
        "usage_type",
        "operation",
        "resource_id",
        "region_id",
        "availability_zone",
        "instance_type",
        "pricing_unit",
        "resource_class",
        "consumed_quantity",
        "usage_seconds",
        "billing_currency",
        "invoice_id",
        "billed_cost",
        "effective_cost",
        "list_cost",
        "net_cost",
        "credits_by_type",
        "tags",
        "attempt_tag",
        "experiment_tag",
    }
)

# Columns of telemetry attempts a pool's `attempts` filter may name.
ATTEMPT_COLUMNS = frozenset(
    {
        "attempt_id",
        "experiment_id",
        "parent_attempt_id",
        "model_version",
        "config_version",
        "dataset_snapshot",
        "provider",
        "account_id",
        "region",
        "cluster",
        "namespace",
        "instance_type",
        "gpu_type",
        "gpu_count",
        "node_count",
        "capacity_type",
        "submitted_at",
        "started_at",
        "ended_at",
        "status",
        "failure_reason",
        "metric_name",
        "metric_value",
        "artifact_uri",
        "tags",
    }
)

POOL_DRIVERS = ("gpu_seconds", "cpu_memory_requested", "attempt_count", "even", "cost_weighted")
POOL_SPREADS = ("charge_period", "billing_period")
COST_BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
# Inference and API spend is not training: these lines go to unallocated as excluded_inference
# in both models. Override with [allocation] exclude = "..." (a selector), or "" for none.
DEFAULT_EXCLUDE = (
    "service_name = 'AmazonBedrock'"
    " or (service_name = 'AmazonSageMaker' and usage_type like '%Host%')"
    " or (service_name in ('Vertex AI', 'Vertex AI API')"
    " and lower(coalesce(charge_description, '')) like '%prediction%')"
)


@dataclass(frozen=True)
class Pool:
    """A shared-cost pool: which cost lines it takes, and how it spreads them over attempts."""

    name: str
    selector: str
    driver: str = "gpu_seconds"
    spread: str = "charge_period"
    attempts: str = "true"
    basis: str = "effective_cost"  # the cost basis cost_weighted weighs attempts by


_POOL_KEYS = {"name", "selector", "driver", "spread", "attempts", "basis"}


def parse_allocation(section: Any, where: str) -> str:
    """[allocation]: the exclude selector (DEFAULT_EXCLUDE unless given; "" excludes nothing)."""
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [allocation] must be a table")
    for key in section:
        if key != "exclude":
            raise ConfigError(
                f"{where}: unknown key allocation.{key}; allowed in [allocation]: exclude"
            )
    exclude = section.get("exclude", DEFAULT_EXCLUDE)
    if not isinstance(exclude, str):
        raise ConfigError(
            f"{where}: allocation.exclude must be a SQL condition over normalized.cost_lines "
            '(a string), or "" to exclude nothing'
        )
    if exclude.strip():
        validate_condition(exclude, COST_LINE_COLUMNS, f"{where}: allocation.exclude")
    return exclude.strip()


def parse_pools(value: Any, where: str) -> tuple[Pool, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: pools must be written as [[pools]] tables")
    pools: list[Pool] = []
    seen: set[str] = set()
    for index, item in enumerate(value, start=1):
        label = f"{where}: pools[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{label} must be a table with name, selector and driver")
        for key in item:
            if key not in _POOL_KEYS:
                raise ConfigError(
                    f"{label}: unknown key {key}; allowed: {', '.join(sorted(_POOL_KEYS))}"
                )
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{label}: name is required (a non-empty string)")
        if name in seen:
            raise ConfigError(f"{label}: pool name {name!r} is used twice; names must be unique")
        seen.add(name)
        selector = item.get("selector")
        if not isinstance(selector, str) or not selector.strip():
            raise ConfigError(
                f"{label} ({name}): selector is required: a SQL condition over "
                "normalized.cost_lines, such as \"service_name = 'AmazonEKS'\""
            )
        validate_condition(selector, COST_LINE_COLUMNS, f"{label} ({name}).selector")
        attempts = item.get("attempts", "true")
        if not isinstance(attempts, str) or not attempts.strip():
            raise ConfigError(f"{label} ({name}).attempts must be a SQL condition string")
        validate_condition(attempts, ATTEMPT_COLUMNS, f"{label} ({name}).attempts")
        driver = item.get("driver", "gpu_seconds")
        if driver not in POOL_DRIVERS:
            raise ConfigError(
                f"{label} ({name}): driver {driver!r} is not supported; "
                f"allowed: {', '.join(POOL_DRIVERS)}"
            )
        spread = item.get("spread", "charge_period")
        if spread not in POOL_SPREADS:
            raise ConfigError(
                f"{label} ({name}): spread {spread!r} is not supported; "
                f"allowed: {', '.join(POOL_SPREADS)}"
            )
        basis = item.get("basis", "effective_cost")
        if basis not in COST_BASES:
            raise ConfigError(
                f"{label} ({name}): basis {basis!r} is not a cost basis; "
                f"allowed: {', '.join(COST_BASES)}"
            )
        if "basis" in item and driver != "cost_weighted":
            raise ConfigError(
                f"{label} ({name}): basis applies only to driver 'cost_weighted'; "
                f"remove it or set driver = 'cost_weighted'"
            )
        pools.append(
            Pool(
                name=name,
                selector=selector,
                driver=driver,
                spread=spread,
                attempts=attempts,
                basis=basis,
            )
        )
    return tuple(pools)


_BOOLEAN_FUNCTIONS = (exp.StartsWith, exp.Contains)
_FORBIDDEN = (exp.Select, exp.Subquery, exp.Union, exp.Command, exp.Insert, exp.Delete, exp.Drop)


def validate_condition(text: str, columns: frozenset[str], what: str) -> exp.Expression:
    """Parse one boolean SQL condition and check that it names only known columns."""
    try:
        parsed = sqlglot.parse(text, dialect="duckdb")
    except sqlglot.errors.ParseError as error:
        raise ConfigError(f"{what}: not a valid SQL condition: {error}") from error
    if len(parsed) != 1 or parsed[0] is None:
        raise ConfigError(f"{what}: must be exactly one SQL condition, without ';'")
    expression = parsed[0]
    for node in expression.walk():
        volatile = _volatile(node)
        if volatile:
            raise ConfigError(
                f"{what}: {volatile}() gives another answer on every run (every night would "
                "republish, and no number could be explained again); select lines by their "
                "columns and constants only"
            )
        if isinstance(node, _FORBIDDEN):
            raise ConfigError(
                f"{what}: only a condition over columns is allowed, not a query or statement"
            )
        if isinstance(node, exp.Column):
            if node.table:
                raise ConfigError(
                    f"{what}: write plain column names, not {node.sql()!r} with a table"
                )
            if node.name not in columns:
                raise ConfigError(
                    f"{what}: unknown column {node.name!r}; known columns: "
                    f"{', '.join(sorted(columns))}"
                )
    if not _is_boolean(expression):
        raise ConfigError(
            f"{what}: must be one condition that is true or false, such as "
            f"\"service_name = 'AmazonEKS'\"; {expression.sql(dialect='duckdb')!r} is a value"
        )
    return expression


# functions whose result changes between runs (or reads the session): never in a selector
_VOLATILE = frozenset(
    {
        "random", "rand", "setseed", "uuid", "gen_random_uuid", "uuidv4", "uuidv7", "getenv",
        "current_setting", "now", "today", "current_date", "current_time", "current_timestamp",
        "current_localtime", "current_localtimestamp", "get_current_time",
        "get_current_timestamp", "transaction_timestamp", "nextval", "currval",
    }
)  # fmt: skip
_VOLATILE_NODES = (exp.Rand, exp.CurrentDate, exp.CurrentTime, exp.CurrentTimestamp)


def _volatile(node: exp.Expression) -> str | None:
    if isinstance(node, _VOLATILE_NODES):
        return node.sql_name().lower()
    if isinstance(node, exp.Func):
        name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        return name if name in _VOLATILE else None
    return None


def _is_boolean(node: exp.Expression) -> bool:
    """A comparison, a test (like, in, is, between), true/false, or these joined by and/or/not."""
    if isinstance(node, exp.Paren):
        return _is_boolean(node.this)
    if isinstance(node, exp.Not):
        return _is_boolean(node.this)
    if isinstance(node, exp.Connector | exp.Xor):
        return _is_boolean(node.left) and _is_boolean(node.right)
    return isinstance(node, (exp.Predicate, exp.Boolean, *_BOOLEAN_FUNCTIONS))
