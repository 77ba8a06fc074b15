"""One pass over a FOCUS file: type each column, flag any value a check may refuse, and write
each billing period's Parquet part directly (no scratch copy of the typed rows)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.common.duck import identifier, literal, optimizer_disabled
from pipeline.ingest import value_rules
from schemas import focus

SOURCE = "focus_source"
_LINE = "runcost_line"
_FLAGGED = "runcost: the typed pass flags a value"
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")
_TIMESTAMPS = ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP")
# a typed amount this close below a limit is flagged too: the rule compares the amount as a
# DOUBLE, which may round it up to the limit; the exact rule then decides
_NEAR = 0.999999999
_WIDEST = 1e20  # DECIMAL(38, 18) holds 20 integer digits


class Flagged(Exception):
    """A row of the file holds a value some check may refuse: the exact checks name it."""


@dataclass(frozen=True)
class Plan:
    """How one file is typed: (FOCUS name, SQL) per written column, in FOCUS order; the SQL
    conditions flagging a value (each over one typed name or helper text); the helper texts;
    the money columns whose values may carry more than 10 decimal places; the columns a NULL
    in is flagged."""

    typed: tuple[tuple[str, str], ...]
    flags: tuple[str, ...]
    texts: tuple[tuple[str, str], ...]
    may_round: tuple[str, ...]
    period: str
    required: tuple[str, ...]


def text_of(column: str, kind: str) -> str:
    """SQL reading a column of DuckDB type ``kind`` as text, as the checks see it."""
    if kind.startswith(("MAP", "STRUCT")) or kind.endswith("]"):
        return f"to_json({identifier(column)})::varchar"
    return f"cast({identifier(column)} as varchar)"


def plan(
    mapping: dict[str, str],
    kinds: dict[str, str],
    provider_name: str | None,
    parse: Callable[[str, str], str],
    money_wanted: str,
) -> Plan:
    """The typed pass of a file whose columns ``kinds`` (DuckDB types) map to FOCUS names by
    ``mapping``. A Parquet column already of its FOCUS type (a DECIMAL of at most 18 places, a
    timestamp) is cast, not read as text: its text parses back to the same value, so only its
    range is flagged (and a DECIMAL too wide for DECIMAL(38, 18)). Any other column is read as
    text and flagged by the conditions the exact checks apply (focus/read.py _check_values)."""
    typed: list[tuple[str, str]] = []
    flags: list[str] = []
    texts: list[tuple[str, str]] = []
    may_round: list[str] = []
    required: list[str] = []
    period = ""
    for name, kind in focus.KINDS.items():
        if name == "ProviderName" and provider_name:
            typed.append((name, literal(provider_name)))
            continue
        if name not in mapping:
            continue
        column = mapping[name]
        native = kinds[column]
        limit = value_rules.MAX_QUANTITY if name.endswith("Quantity") else value_rules.MAX_AMOUNT
        decimal = _DECIMAL.fullmatch(native)
        if kind == "decimal" and decimal and int(decimal[2]) <= 18:
            expression = f"try_cast({identifier(column)} as {focus.DUCKDB_TYPES[kind]})"
            if limit < _WIDEST:  # DECIMAL(38, 18) holds none at a larger limit
                flags.append(f"abs({name}) >= {limit * _NEAR:.0f}")
            if int(decimal[1]) - int(decimal[2]) > 20:  # may not fit 20 integer digits
                helper = f"runcost_text_{len(texts)}"
                texts.append((helper, identifier(column)))
                flags.append(f"({helper} is not null and {name} is null)")
            if int(decimal[2]) > 10:
                may_round.append(name)
        elif kind == "datetime" and native in _TIMESTAMPS:
            expression = f"cast({identifier(column)} as {focus.DUCKDB_TYPES[kind]})"
            flags.append(f"{name} < '{value_rules.EARLIEST}' or {name} >= '{value_rules.LATEST}'")
        elif kind == "string" and native == "VARCHAR":
            expression = identifier(column)
        else:
            text = text_of(column, native)
            expression = parse(text, kind)
            helper = f"runcost_text_{len(texts)}"
            if kind != "string":
                texts.append((helper, text))
                flags.append(f"({helper} is not null and {name} is null)")
            if kind == "decimal":
                rule = (
                    value_rules.quantity(column, f"trim({helper})")
                    if name.endswith("Quantity")
                    else value_rules.money(column, f"trim({helper})", money_wanted)
                )
                flags.append(f"({rule.bad})")
                may_round.append(name)
        if name in focus.NOT_NULL:
            required.append(name)
        typed.append((name, expression))
        if name == "BillingPeriodStart":
            period = expression
    return Plan(tuple(typed), tuple(flags), tuple(texts), tuple(may_round), period, tuple(required))


def periods(con: duckdb.DuckDBPyConnection, plan: Plan) -> tuple[str, ...]:
    """The billing periods (YYYY-MM of BillingPeriodStart, UTC) the file's rows name, sorted;
    a row whose BillingPeriodStart does not read is left to the typed pass to flag."""
    found = con.execute(
        f"select distinct strftime({plan.period}, '%Y-%m') as period from {SOURCE} "
        "where period is not null order by 1"
    ).fetchall()
    return tuple(row[0] for row in found)


def write(
    con: duckdb.DuckDBPyConnection,
    select: list[str],
    plan: Plan,
    periods: tuple[str, ...],
    scratch: Path,
    part: Callable[[str], Path],
    *,
    guarded: bool,
) -> int:
    """Write the typed rows as ``part(period)`` per period; the number of rows. ``guarded``: a
    flagged row stops the pass (Flagged)."""
    helpers = [f"{text} as {helper}" for helper, text in plan.texts]
    inner = f"select {', '.join([*select, *helpers])} from {SOURCE}"
    kept = f" exclude ({', '.join(helper for helper, _text in plan.texts)})" if plan.texts else ""
    flags = [*plan.flags, *(f"{name} is null" for name in plan.required)]
    flagged = " or ".join(f"({flag})" for flag in flags)
    where = (
        f" where case when {flagged} then error({literal(_FLAGGED)}) else true end"
        if guarded and flagged
        else ""
    )
    query = f"select *{kept} from ({inner}){where}"
    # one period (an export's usual file): its part is written directly; several: the typed
    # rows go to ``scratch`` once, then each period's rows to its part (file order kept,
    # which a partitioned write does not)
    target = part(periods[0]) if len(periods) == 1 else scratch
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # footer statistics leave NaN out: never let them fold a NaN test to false
        with optimizer_disabled(con, "statistics_propagation"):
            rows = con.execute(
                f"copy ({query}) to {literal(str(target))} (format parquet, compression zstd)"
            ).fetchone()[0]
    except duckdb.Error as error:
        if _FLAGGED in str(error):
            raise Flagged from error
        raise
    if target == scratch:
        for period in periods:
            part(period).parent.mkdir(parents=True, exist_ok=True)
            con.execute(
                f"copy (select * from read_parquet({literal(str(scratch))}) "
                f"where strftime(BillingPeriodStart, '%Y-%m') = {literal(period)}) "
                f"to {literal(str(part(period)))} (format parquet, compression zstd)"
            )
        scratch.unlink()
    return rows
