"""The rules every billing ingest (AWS CUR, GCP export, FOCUS) applies before raw/ changes.

One place for what a good amount, time, currency and id are, how the first bad row is found in
one scan, how repeated rows and repeated files are found, and the one message a refusal gives:
file, row, column, the value, what a good value is, and the fix. Each provider says which
columns the rules apply to (aws/values.py, gcp/values.py, focus/read.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.common.duck import identifier, optimizer_disabled
from pipeline.common.errors import InputError
from pipeline.warehouse.raw_store import sha256_file

# No single line moves 10^15 in any currency; beyond it DECIMAL(38, 10) sums overflow. Usage
# quantities are larger (GCP meters RAM in byte-seconds: 450 GiB for an hour is 1.7e15), so they
# may reach 10^24, which still leaves 10^4 lines of headroom below DECIMAL(38, 10)'s 10^28.
MAX_AMOUNT = 1e15
MAX_QUANTITY = 1e24
EARLIEST, LATEST = "2000-01-01", "2100-01-01"
AFRESH = (
    "nothing of this delivery was stored in raw/ and the current snapshot is unchanged, so the "
    "corrected copy is read afresh on the next run"
)
MONEY_WANTED = (
    f"a finite number below {MAX_AMOUNT:.0e} in magnitude (not NaN, Infinity or text such as "
    "'$1.00')"
)
QUANTITY_WANTED = (
    f"a finite number below {MAX_QUANTITY:.0e} in magnitude (not NaN, Infinity or text)"
)


@dataclass(frozen=True)
class Rule:
    """A check of one column: the SQL condition marking a bad row, the value to show, and what
    a good value is (for the message)."""

    column: str
    bad: str
    value: str
    wanted: str


def _value(column: str, value: str | None) -> str:
    return value if value is not None else identifier(column)


def bad_amount(value: str, limit: float = MAX_AMOUNT, double: bool = False) -> str:
    """SQL true when ``value`` is not a finite number below ``limit`` (NULL is fine);
    ``double``: the value is a DOUBLE column, so no text can fail to read as a number."""
    if double:
        # DuckDB orders NaN above every number, so one comparison refuses NaN, both infinities
        # and the too large, and is NULL (not bad) for NULL: 0.6x the CPU of the four tests below
        # on a CUR file. first_bad keeps footer statistics from folding the comparison to false
        # on a column whose NaN they leave out
        return f"not (abs({value}) < {limit:.0f})"
    number = f"try_cast({value} as double)"
    # isnan/isinf on the number, not its text (a cast of every value to text cost 10x the
    # scan); first_bad keeps footer statistics, which leave NaN out, from folding them away
    return (
        f"(({value}) is not null and {number} is null) or "
        f"isnan({number}) or isinf({number}) or abs({number}) >= {limit:.0f}"
    )


def money(
    column: str, value: str | None = None, wanted: str = MONEY_WANTED, double: bool = False
) -> Rule:
    """An amount (cost, rate, quantity): finite, below MAX_AMOUNT, a number (not '$1.00');
    ``double``: the column is a DOUBLE."""
    value = _value(column, value)
    return Rule(column, bad_amount(value, double=double), value, wanted)


def quantity(column: str, value: str | None = None, double: bool = False) -> Rule:
    """A usage quantity: finite, below MAX_QUANTITY, a number; ``double``: a DOUBLE column."""
    value = _value(column, value)
    return Rule(column, bad_amount(value, MAX_QUANTITY, double), value, QUANTITY_WANTED)


def money_list(column: str, items: str, field: str) -> Rule:
    """Every ``field`` of the list of structs ``items`` (GCP credits) is a good amount."""
    broken = f"list_filter({items}, lambda item: {bad_amount(f'item.{field}')})"
    return Rule(
        f"{column}.{field}",
        f"coalesce(len({broken}), 0) > 0",
        f"{broken}[1].{field}",
        MONEY_WANTED,
    )


def timestamp(column: str, value: str | None = None) -> Rule:
    """A time that can be a billing time: readable, from EARLIEST to before LATEST (UTC)."""
    value = _value(column, value)
    moment = f"try_cast({value} as timestamptz)"
    return Rule(
        column,
        f"(({value}) is not null and {moment} is null) or {moment} < '{EARLIEST}' or "
        f"{moment} >= '{LATEST}'",
        value,
        f"a time between {EARLIEST} and {LATEST}",
    )


def window(start: str, end: str, start_value: str | None = None, end_value: str | None = None):
    """A window that does not end before it starts (it would give negative usage seconds)."""
    begin, finish = _value(start, start_value), _value(end, end_value)
    return Rule(
        end,
        f"try_cast({finish} as timestamptz) < try_cast({begin} as timestamptz)",
        finish,
        f"a time at or after {start} (a line cannot end before it starts)",
    )


def _spelled(column: str, value: str | None, pattern: str, wanted: str) -> Rule:
    """Text that matches ``pattern`` whole (a regular expression), never NULL or empty."""
    value = _value(column, value)
    return Rule(
        column, f"not regexp_full_match(coalesce({value}::varchar, ''), '{pattern}')", value, wanted
    )


def currency(column: str, value: str | None = None) -> Rule:
    """A three-letter ISO 4217 code, never empty."""
    return _spelled(
        column, value, "[A-Z]{3}", "a three-letter ISO 4217 code such as USD (never empty)"
    )


def month(column: str, value: str | None = None) -> Rule:
    """A month as YYYYMM text (an invoice month such as 202611), never empty."""
    return _spelled(
        column,
        value,
        "[0-9]{4}(0[1-9]|1[0-2])",
        "a month written YYYYMM such as 202611 (never empty)",
    )


def required_id(column: str, value: str | None = None) -> Rule:
    """An identifier: never NULL, empty or only spaces."""
    value = _value(column, value)
    text = f"({value})::varchar"
    # an id whose first character is printable ASCII other than a space is not blank, whatever
    # follows: only the others pay for trim, which copies every value (about 1 CPU s for the
    # unique line item ids of a 10M-line delivery against 0.4)
    return Rule(
        column,
        f"case when {text} is null then true when ascii({text}) between 33 and 126 then false "
        f"else trim({text}) = '' end",
        value,
        "an identifier (never empty)",
    )


@dataclass(frozen=True)
class Bad:
    """The first bad row of a source: its number, the rule it breaks, its value as text, and
    how many rows break that rule."""

    row: int
    rule: Rule
    value: str | None
    count: int


def first_bad(
    con: duckdb.DuckDBPyConnection, source: str, row: str, rules: list[Rule]
) -> Bad | None:
    """The row (by the SQL expression ``row``) that breaks a rule first, in one scan of
    ``source`` (a table function or a subquery); only a bad source pays for a second query."""
    return scan_values(con, source, row, rules)[0]


def scan_values(
    con: duckdb.DuckDBPyConnection,
    source: str,
    row: str,
    rules: list[Rule],
    flagged: str | None = None,
) -> tuple[Bad | None, int]:
    """first_bad, and how many rows of ``source`` the SQL condition ``flagged`` marks, in the
    same scan: a condition true for few rows costs that scan little more (precision.may_round,
    1.7 CPU s less than a scan of its own for the 10M benchmark's money)."""
    if not rules and not flagged:
        return None, 0
    # footer statistics leave NaN out: never let them fold a NaN test to false
    with optimizer_disabled(con, "statistics_propagation"):
        return _first_bad(con, source, row, rules, flagged)


def _first_bad(
    con: duckdb.DuckDBPyConnection, source: str, row: str, rules: list[Rule], flagged: str | None
) -> tuple[Bad | None, int]:
    # one scan with every rule or-ed says whether any row is bad (a tenth of the CPU of one
    # filtered aggregate per rule); only a bad source pays for the query naming the first. The
    # filtered counts see only the rows the scan keeps
    anything = " or ".join(f"({rule.bad})" for rule in rules) or "false"
    marked = flagged or "false"
    bad_rows, marked_rows = con.execute(
        f"select count(*) filter (where {anything}), count(*) filter (where {marked}) "
        f"from {source} where ({anything}) or ({marked})"
    ).fetchone()
    if bad_rows == 0:
        return None, marked_rows
    firsts = ", ".join(f"min({row}) filter (where {rule.bad})" for rule in rules)
    counts = ", ".join(f"count(*) filter (where {rule.bad})" for rule in rules)
    found = con.execute(f"select {firsts}, {counts} from {source}").fetchone()
    broken = [
        (number, index, found[len(rules) + index])
        for index, number in enumerate(found[: len(rules)])
        if number is not None
    ]
    if not broken:
        return None, marked_rows
    number, index, count = min(broken)
    rule = rules[index]
    value = con.execute(
        f"select ({rule.value})::varchar from {source} where {row} = ? limit 1", [number]
    ).fetchone()[0]
    return Bad(number, rule, value, count), marked_rows


def refusal(where: str, row: str, bad: Bad, fix: str, afresh: str = AFRESH) -> InputError:
    """The one message of a bad value: ``where`` (the file), ``row`` (how the file counts it)."""
    return refused(where, row, bad.rule.column, bad.value, bad.rule.wanted, fix, bad.count, afresh)


def refused(
    where: str,
    row: str,
    column: str,
    value: object,
    wanted: str,
    fix: str,
    count: int = 1,
    afresh: str = AFRESH,
) -> InputError:
    """The message of a bad value found while a file is read (before any rule can run)."""
    more = f" ({count} rows of the file break it)" if count > 1 else ""
    return InputError(
        f"{where}: {row}, column {column}: {value!r} is refused; it must be {wanted}{more}. "
        f"{fix} and run again; {afresh}"
    )


@dataclass(frozen=True)
class Repeat:
    """Rows of equal identity: the first and the last of the first repeated key, its values,
    and how many keys repeat."""

    first: int
    last: int
    key: tuple[object, ...]
    keys: int


def repeated_rows(
    con: duckdb.DuckDBPyConnection, source: str, row: str, keys: list[str], where: str = "true"
) -> Repeat | None:
    """The first key (SQL expressions ``keys``) that two rows of ``source`` share, by its first
    row; ``where`` limits the rows compared."""
    listed = ", ".join(keys)
    # rows of equal keys have equal hashes: when no two rows share a hash of their keys, no two
    # share the keys, and one pass over the sorted 64-bit hashes (a fraction of grouping the keys
    # themselves, and less CPU than counting the distinct hashes: docs/performance.md, session
    # 33) clears the file; a shared hash pays for the exact grouping below
    repeated_hashes = con.execute(
        "select count(*) filter (where again) from (select hashed = lag(hashed) over "
        f"(order by hashed) as again from (select hash({listed}) as hashed from {source} "
        f"where {where}))"
    ).fetchone()[0]
    if repeated_hashes == 0:
        return None
    found = con.execute(
        f"select min({row}), max({row}), count(*) over (), {listed} from {source} "
        f"where {where} group by {listed} having count(*) > 1 order by 1 limit 1"
    ).fetchone()
    if found is None:
        return None
    first, last, count, *key = found
    return Repeat(first, last, tuple(key), count)


def check_distinct_files(
    files: list[tuple[Path, str]], scope: str, fix: str, digests: list[str] | None = None
) -> None:
    """Refuse the same data file twice among ``files`` ((path, name in messages)): a stray copy
    counts every line twice. ``scope`` says what never holds a file twice; ``digests``: the
    files' sha256 sums, when the caller has them already."""
    seen: dict[str, str] = {}
    for index, (path, where) in enumerate(files):
        digest = digests[index] if digests is not None else sha256_file(path)
        if digest in seen:
            raise InputError(
                f"{where}: has exactly the content of {seen[digest]} (sha256 {digest[:16]}...); "
                f"{scope}, so one is a stray copy that would count every line twice: {fix} and "
                f"run again; {AFRESH}"
            )
        seen[digest] = where
