"""The cost columns of a FOCUS charge split into its line's allocation slices, written once
(marts.focus_allocated and its check; expanded by pipeline.dag.macros)."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.common.macro import Macro
from pipeline.common.money import MONEY_SQL
from pipeline.dag.basis_macros import BASES
from pipeline.dag.key_macros import ALLOCATION_MODEL_NAMES

# Each FOCUS cost column normalized.focus publishes, the name its slice amount takes, and the order
# in which runcost's bases are tried for it: a FOCUS amount is one of its line's four bases (or 0)
# on almost every row, and the line's slices in that basis sum to it exactly (checks.
# slices_sum_to_line), so each slice takes its own amount in that basis. Where two bases are
# equal on the line the first named wins (BilledCost is the billed cost before the net cost).
FOCUS_COSTS = (
    ("BilledCost", "billed", ("billed", "net", "effective", "list")),
    ("EffectiveCost", "effective", ("effective", "net", "billed", "list")),
    ("ListCost", "list", ("list", "billed", "effective", "net")),
    ("ContractedCost", "contracted", ("billed", "net", "list", "effective")),
    ("PricingCurrencyEffectiveCost", "pricing_effective", ("effective", "net", "billed", "list")),
)
assert all(sorted(order) == sorted(BASES) for _, _, order in FOCUS_COSTS)


def _each(column: Callable[[str, str, tuple[str, ...]], str]) -> str:
    return ", ".join(column(focus, name, order) for focus, name, order in FOCUS_COSTS)


def _source(focus: str, name: str, order: tuple[str, ...]) -> str:
    matches = " ".join(
        f"when {{relation}}.{focus} = {{relation}}.line_{basis}_cost then '{basis}'"
        for basis in order
    )
    return (
        f"case when {{relation}}.{focus} is null then 'null' "
        f"when {{relation}}.{focus} = 0 then 'zero' {matches} else 'other' end as {name}_from"
    )


# Where each FOCUS cost column of an origin row comes from: 'null', 'zero', the basis of its line
# (line_<basis>_cost, as line_bases names them) it equals, or 'other' (a delivered ContractedCost,
# a price in another currency), named <name>_from.
FOCUS_COST_SOURCES = Macro(
    "focus_cost_sources", ("relation",), _each(_source), relations=("relation",)
)

# An origin row has a cost column no basis of its line equals: its slices take it by their ratio of
# the line, and one slice takes the rounding remainder.
FOCUS_COSTS_UNMATCHED = Macro(
    "focus_costs_unmatched",
    ("relation",),
    "(" + " or ".join(f"{{relation}}.{name}_from = 'other'" for _, name, _ in FOCUS_COSTS) + ")",
    relations=("relation",),
)

# The FOCUS cost columns normalized.focus maps to one of the line's bases or 0 on every row, by
# construction: BilledCost is billed_cost (net_cost on Google Cloud, 0 on a commitment's Unused
# row), EffectiveCost effective_cost (net_cost on Google Cloud, 0 on a commitment Purchase) and
# ListCost list_cost (the billed amount where nothing lists a price). The others may be no basis:
# a delivered or CUR net-rate ContractedCost, a PricingCurrencyEffectiveCost in another currency.
FOCUS_COSTS_OF_A_BASIS = ("BilledCost", "EffectiveCost", "ListCost")
assert set(FOCUS_COSTS_OF_A_BASIS) < {focus for focus, _, _ in FOCUS_COSTS}


def _maybe_unmatched(focus: str) -> str:
    differs = " and ".join(
        f"{{relation}}.{focus} is distinct from {{relation}}.{basis_column}"
        for basis_column in FOCUS_COSTS_OF_A_BASIS
    )
    return f"({{relation}}.{focus} <> 0 and {differs})"


# An origin row of normalized.focus (no line bases needed) may have a cost column no basis of its
# line equals: one of the other columns is neither NULL, 0 nor equal to a column of a basis. A
# superset of the rows focus_costs_unmatched finds (a column equal to BilledCost equals the basis
# BilledCost is), read without joining the line's bases: checks.focus_allocated_sums_to_origin
# checks only these origins, the rest being split in a basis checks.slices_sum_to_line sums.
FOCUS_COSTS_MAYBE_UNMATCHED = Macro(
    "focus_costs_maybe_unmatched",
    ("relation",),
    "("
    + " or ".join(
        _maybe_unmatched(focus)
        for focus, _, _ in FOCUS_COSTS
        if focus not in FOCUS_COSTS_OF_A_BASIS
    )
    + ")",
    relations=("relation",),
)


def _slice(focus: str, name: str, order: tuple[str, ...]) -> str:
    bases = " ".join(f"when '{basis}' then {{relation}}.{basis}_cost" for basis in BASES)
    return (
        f"case {{relation}}.{name}_from when 'null' then cast(null as {MONEY_SQL}) "
        f"when 'zero' then cast(0 as {MONEY_SQL}) {bases} "
        f"else cast({{relation}}.{focus} * {{relation}}.line_ratio as {MONEY_SQL}) end "
        f"as sliced_{name}"
    )


# Each slice's amount of each FOCUS cost column of its origin row: its own amount in the basis the
# column equals, else the column times the slice's ratio of its line (line_ratio), rounded: the
# part before the rounding remainder is placed. Named sliced_<name>.
FOCUS_SLICE_COSTS = Macro(
    "focus_slice_costs", ("relation",), _each(_slice), relations=("relation",)
)

# The FOCUS cost columns that may be no basis of their line (a delivered ContractedCost, a price in
# another currency): split by ratio with a rounding remainder, for the candidate origin rows only
# (focus_costs_maybe_unmatched), in allocation.focus_ratio_splits.
FOCUS_RATIO_COSTS = tuple(cost for cost in FOCUS_COSTS if cost[0] not in FOCUS_COSTS_OF_A_BASIS)


def _from_splits(focus: str, name: str, _: tuple[str, ...]) -> str:
    if focus in FOCUS_COSTS_OF_A_BASIS:
        return f"{{relation}}.sliced_{name} as allocated_{name}"
    return f"coalesce({{splits}}.{focus}, {{relation}}.sliced_{name}) as allocated_{name}"


# The slices' amounts: a slice of a candidate origin row takes its ratio-split columns from
# <splits> (allocation.focus_ratio_splits, rounding remainders placed; NULL there only where the
# origin's column is NULL, and so the sliced amount), every other amount as sliced. Named
# allocated_<name>.
FOCUS_COSTS_FROM_SPLITS = Macro(
    "focus_costs_from_splits",
    ("relation", "splits"),
    _each(_from_splits),
    relations=("relation", "splits"),
)

# The whole of each ratio-split column of a candidate origin row that no basis of its line equals
# (<name>_from 'other', focus_cost_sources), named whole_<name>: what its slices split by ratio
# with a rounding remainder. NULL where the column is NULL, 0 or a basis: its slices take it as
# sliced.
FOCUS_RATIO_WHOLES = Macro(
    "focus_ratio_wholes",
    ("relation",),
    ", ".join(
        f"case when {{relation}}.{name}_from = 'other' then {{relation}}.{focus} end "
        f"as whole_{name}"
        for focus, name, _ in FOCUS_RATIO_COSTS
    ),
    relations=("relation",),
)

# The slices of one candidate origin row, each stored once for the models it belongs to
# (allocation.cost_slices), in the order that puts the slice taking a model's rounding remainders
# after the model's other slices: the slice of the largest billed amount, then effective amount,
# takes them, ties going to the first by kind, method, attempt, experiment and reason (a model's
# slice keys: the order is total among one model's slices; a slice of one model only may tie with
# one of the other's, and the two never meet in a model's sums). Last, so that a running sum (the
# default frame) is the model's whole sum there.
_LAST_TAKES_REST = (
    "partition by {relation}.x_LineId, {relation}.x_ProviderLineType "
    "order by abs({relation}.billed_cost) asc nulls first, "
    "abs({relation}.effective_cost) asc nulls first, {relation}.allocation_kind desc nulls first, "
    "{relation}.attribution_method desc nulls last, {relation}.attempt_id desc nulls last, "
    "{relation}.experiment_id desc nulls last, {relation}.unallocated_reason desc nulls last"
)


def _ratio_sums(model: str) -> str:
    member = f"in_allocation_model({{relation}}.allocation_models, '{model}')"
    slices = f"count(case when {member} then 1 end) over ({_LAST_TAKES_REST}"
    whole = " rows between unbounded preceding and unbounded following)"
    return ", ".join(
        (
            f"{slices}) = {slices}{whole} as takes_rest_{model}",
            *(
                f"sum(case when {member} then {{relation}}.sliced_{name} end) "
                f"over ({_LAST_TAKES_REST}) as sliced_{name}_sum_{model}"
                for _, name, _ in FOCUS_RATIO_COSTS
            ),
        )
    )


# Over the stored slices of each candidate origin row, in one window (one sort of each slice, not
# of its copy under each model), for each allocation model: takes_rest_<model> on the model's
# slice that takes its rounding remainders (the last of its slices: as many up to it as in the
# row), and each ratio-split column's sliced amounts of the model's slices summed up to the slice
# (sliced_<name>_sum_<model>: the model's whole sum on the slice that takes the rest).
FOCUS_RATIO_SUMS = Macro(
    "focus_ratio_sums",
    ("relation",),
    ", ".join(_ratio_sums(model) for model in ALLOCATION_MODEL_NAMES),
    relations=("relation",),
)


def _of_model(column: str) -> str:
    cases = " ".join(
        f"when '{model}' then {{relation}}.{column}_{model}" for model in ALLOCATION_MODEL_NAMES
    )
    return f"case {{model}} {cases} end"


# The ratio-split columns of a candidate origin row's slices under <model> (<relation> with
# focus_ratio_wholes and focus_ratio_sums): a column no basis equals has its rounding remainder
# placed on the model's slice that takes it (first_slice_takes_rest); a column of a basis stays as
# sliced. Named as the FOCUS column.
FOCUS_COSTS_WITH_REST = Macro(
    "focus_costs_with_rest",
    ("relation", "model"),
    ", ".join(
        f"case when {{relation}}.whole_{name} is null then {{relation}}.sliced_{name} "
        f"else first_slice_takes_rest({_of_model('takes_rest')}, {{relation}}.whole_{name}, "
        f"{_of_model(f'sliced_{name}_sum')}, {{relation}}.sliced_{name}) end as {focus}"
        for focus, name, _ in FOCUS_RATIO_COSTS
    ),
    relations=("relation",),
)

# The ratio-split FOCUS cost columns of a relation, each weighted by its origin row (1 to 1021
# from the row's line and line type) and summed, named <name>_checksum: the same sums over the
# candidate rows of normalized.focus and allocation.focus_ratio_splits per model and period
# (checks.focus_allocated_sums_to_origin).
_ORIGIN_WEIGHT = (
    "cast(1 + abs(hash({relation}.x_LineId, {relation}.x_ProviderLineType) % 1021) as integer)"
)
FOCUS_CHECKSUMS = Macro(
    "focus_checksums",
    ("relation",),
    ", ".join(
        f"sum({{relation}}.{focus} * {_ORIGIN_WEIGHT}) as {name}_checksum"
        for focus, name, _ in FOCUS_RATIO_COSTS
    ),
    relations=("relation",),
)

# Two relations' FOCUS checksums differ in any ratio-split column (a NULL against a value differs).
FOCUS_CHECKSUMS_DIFFER = Macro(
    "focus_checksums_differ",
    ("left", "right"),
    "("
    + " or ".join(
        f"{{left}}.{name}_checksum is distinct from {{right}}.{name}_checksum"
        for _, name, _ in FOCUS_RATIO_COSTS
    )
    + ")",
    relations=("left", "right"),
)

# A slice's ratio of its line, in the first basis the line has (not 0), else the slice's share:
# what an amount no basis equals is split by. <slice> holds the slice's bases (<basis>_cost),
# <line> the line's (line_<basis>_cost).
SLICE_RATIO_OF_LINE = Macro(
    "slice_ratio_of_line",
    ("slice", "line"),
    "coalesce("
    + ", ".join(
        f"{{slice}}.{basis}_cost / nullif({{line}}.line_{basis}_cost, 0)" for basis in BASES
    )
    + ", {slice}.share, 0)",
    relations=("slice", "line"),
)

FOCUS_MACROS = (
    SLICE_RATIO_OF_LINE,
    FOCUS_COST_SOURCES,
    FOCUS_COSTS_UNMATCHED,
    FOCUS_COSTS_MAYBE_UNMATCHED,
    FOCUS_SLICE_COSTS,
    FOCUS_COSTS_FROM_SPLITS,
    FOCUS_RATIO_WHOLES,
    FOCUS_RATIO_SUMS,
    FOCUS_COSTS_WITH_REST,
    FOCUS_CHECKSUMS,
    FOCUS_CHECKSUMS_DIFFER,
)
