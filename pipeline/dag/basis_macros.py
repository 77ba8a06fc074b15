"""The four cost bases and the money type, written once: the macros a model calls to select, sum,
add, unpivot or compare billed, effective, list and net cost (expanded by pipeline.dag.macros)."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.common.macro import Macro
from pipeline.common.money import MONEY_SQL

# The bases a cost line carries side by side, in the order every model lists them (DESIGN.md
# section 6): no comparison mixes them, so each rule below is written once for all four.
BASES = ("billed", "effective", "list", "net")


def _each(column: Callable[[str], str], separator: str = ", ") -> str:
    """``column(basis)`` for the four bases, joined."""
    return separator.join(column(basis) for basis in BASES)


def _over_relation(name: str, column: Callable[[str], str]) -> Macro:
    """A macro of one table alias, ``relation``, listing ``column(basis)`` for the four bases."""
    return Macro(name, ("relation",), _each(column), relations=("relation",))


# An amount as the money type: every published amount is DECIMAL(38, 10), and DuckDB turns a
# decimal divided by an integer, or multiplied by a DOUBLE share, into DOUBLE (DESIGN.md section 6).
MONEY = Macro("money", ("value",), f"cast({{value}} as {MONEY_SQL})")

# The four cost columns of a relation, for a select list.
BASES_OF = _over_relation("bases", lambda basis: f"{{relation}}.{basis}_cost")

# The four cost columns of a relation renamed <prefix>_<basis>_cost: a slice's row carrying the
# amount it is a part of (its line's, or the rest of the line it shares) beside its own.
BASES_NAMED = Macro(
    "bases_named",
    ("relation", "prefix"),
    _each(lambda basis: f"{{relation}}.{basis}_cost as {{prefix}}_{basis}_cost"),
    relations=("relation",),
    words=("prefix",),
)

# The same, for the whole line: line_<basis>_cost.
LINE_BASES = Macro(
    "line_bases", ("relation",), "bases_named({relation}, 'line')", relations=("relation",)
)

# A slice's row's whole-line amounts (named line_<basis>_cost by line_bases), for a select list.
LINE_COSTS = _over_relation("line_costs", lambda basis: f"{{relation}}.line_{basis}_cost")

# The four cost columns, each summed under its own name.
SUM_BASES = _over_relation(
    "sum_bases", lambda basis: f"sum({{relation}}.{basis}_cost) as {basis}_cost"
)

# The four cost columns as the money type, under their names: a mart's published columns.
MONEY_BASES = _over_relation(
    "money_bases", lambda basis: f"cast({{relation}}.{basis}_cost as {MONEY_SQL}) as {basis}_cost"
)

# The four cost columns summed and cast to the money type, under their names.
MONEY_SUM_BASES = _over_relation(
    "money_sum_bases",
    lambda basis: f"cast(sum({{relation}}.{basis}_cost) as {MONEY_SQL}) as {basis}_cost",
)

# The four cost columns of two relations added, a missing side (an outer join's NULL) counting as
# 0, as the money type under their names: a total of parts kept apart until they are added.
ADDED_BASES = Macro(
    "added_bases",
    ("left", "right"),
    _each(
        lambda basis: (
            f"cast(coalesce({{left}}.{basis}_cost, 0) + coalesce({{right}}.{basis}_cost, 0) "
            f"as {MONEY_SQL}) as {basis}_cost"
        )
    ),
    relations=("left", "right"),
)

# A line's cost times a share in each basis, as the money type, named <basis>_part: the slice of
# the line before the rounding remainder is placed (first_slice_takes_rest).
SHARED_PARTS = Macro(
    "shared_parts",
    ("relation", "share"),
    _each(
        lambda basis: f"cast({{relation}}.{basis}_cost * {{share}} as {MONEY_SQL}) as {basis}_part"
    ),
    relations=("relation",),
)

# A line's rest in each basis once another relation's amounts are taken from it (a missing side
# takes nothing), as the money type under the bases' names.
SUBTRACTED_BASES = Macro(
    "subtracted_bases",
    ("left", "right"),
    _each(
        lambda basis: (
            f"cast({{left}}.{basis}_cost - coalesce({{right}}.{basis}_cost, 0) "
            f"as {MONEY_SQL}) as {basis}_cost"
        )
    ),
    relations=("left", "right"),
)

# The rounded parts of a slice (shared_parts), for a select list.
PARTS = _over_relation("parts", lambda basis: f"{{relation}}.{basis}_part")

# What a line's rounded parts add up to, in each basis (<basis>_parts), for a select list.
PARTS_TOTALS = _over_relation("parts_totals", lambda basis: f"{{relation}}.{basis}_parts")

# A line's rounded parts summed, per group (the model groups by the line).
SUM_PARTS = _over_relation(
    "sum_parts", lambda basis: f"sum({{relation}}.{basis}_part) as {basis}_parts"
)

# A line's rounded parts summed over its slices, beside each slice: a window on line_id.
SUM_PARTS_BY_LINE = _over_relation(
    "sum_parts_by_line",
    lambda basis: (
        f"sum({{relation}}.{basis}_part) over (partition by {{relation}}.line_id) as {basis}_parts"
    ),
)

# Each basis of a slice with the rounding remainder placed (first_slice_takes_rest): the whole is
# the relation's <whole>_<basis>_cost (the line, or the rest of it the slices share), the parts'
# total its <basis>_parts and the slice's part its <basis>_part; named <basis>_cost.
SLICES_TAKING_REST = Macro(
    "slices_taking_rest",
    ("takes_rest", "relation", "whole"),
    _each(
        lambda basis: (
            f"first_slice_takes_rest({{takes_rest}}, {{relation}}.{{whole}}_{basis}_cost, "
            f"{{relation}}.{basis}_parts, {{relation}}.{basis}_part) as {basis}_cost"
        )
    ),
    relations=("relation",),
    words=("whole",),
)

# The four cost columns unpivoted: one row per basis, as a struct `basis_amount` of `cost_basis`
# (the column's name, as the marts publish it) and `amount`. A model unpivots after grouping, so
# the bill is read once, not four times.
BASIS_AMOUNTS = Macro(
    "basis_amounts",
    ("relation",),
    "unnest(["
    + _each(
        lambda basis: f"{{{{ 'cost_basis': '{basis}_cost', 'amount': {{relation}}.{basis}_cost }}}}"
    )
    + "]) as basis_amount",
    relations=("relation",),
)

# The four line-weighted checksums (line_checksums), each summed under its own name.
SUM_CHECKSUMS = _over_relation(
    "sum_checksums", lambda basis: f"sum({{relation}}.{basis}_checksum) as {basis}_checksum"
)

# Two relations' checksums differ in any basis (a NULL against a value differs).
CHECKSUMS_DIFFER = Macro(
    "checksums_differ",
    ("left", "right"),
    "("
    + _each(
        lambda basis: f"{{left}}.{basis}_checksum is distinct from {{right}}.{basis}_checksum",
        " or ",
    )
    + ")",
    relations=("left", "right"),
)

BASIS_MACROS = (
    MONEY,
    BASES_OF,
    BASES_NAMED,
    LINE_BASES,
    LINE_COSTS,
    SUM_BASES,
    MONEY_BASES,
    MONEY_SUM_BASES,
    ADDED_BASES,
    SHARED_PARTS,
    SUBTRACTED_BASES,
    PARTS,
    PARTS_TOTALS,
    SUM_PARTS,
    SUM_PARTS_BY_LINE,
    SLICES_TAKING_REST,
    BASIS_AMOUNTS,
    SUM_CHECKSUMS,
    CHECKSUMS_DIFFER,
)
