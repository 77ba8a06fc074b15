"""DuckDB SQL models to Spark SQL: sqlglot plus the named rewrites where the two engines differ."""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import ErrorLevel, UnsupportedError

Rewrite = Callable[[exp.Expression], exp.Expression]
# a schema-qualified relation becomes one temp view name: Spark temp views have no schema
SEPARATOR = "__"


def view_name(qualified: str) -> str:
    """The Spark temp view that stands for ``schema.table``: ``schema__table``."""
    return qualified.replace(".", SEPARATOR)


def qualified_names(tree: exp.Expression) -> exp.Expression:
    """`from staging.attempts` -> `from staging__attempts as attempts`: no schemas in temp views."""
    for table in list(tree.find_all(exp.Table)):
        if not table.db or table.catalog:
            continue
        name = table.name
        table.set("this", exp.to_identifier(f"{table.db}{SEPARATOR}{name}"))
        table.set("db", None)
        if not table.alias:
            # columns may still say attempts.attempt_id: keep the bare name as the alias
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
    return tree


def division_as_double(tree: exp.Expression) -> exp.Expression:
    """`a / b` -> `cast(a as double) / cast(b as double)`: DuckDB's `/` is always DOUBLE division.

    Spark divides DECIMALs as DECIMAL (scale by its own rules) and would give other digits.
    """
    for div in list(tree.find_all(exp.Div)):
        div.set("this", _as_double(div.this))
        div.set("expression", _as_double(div.expression))
        div.set("typed", False)
        div.set("safe", False)
    return tree


def _as_double(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DOUBLE):
        return node
    return exp.cast(node.copy(), exp.DataType.Type.DOUBLE)


def epoch_functions(tree: exp.Expression) -> exp.Expression:
    """`epoch_us(t)` -> `unix_micros(t)`; `epoch(t)` -> `unix_micros(t) / 1e6` (DOUBLE seconds).

    sqlglot writes epoch(t) as unix_timestamp(t), which drops the fractional second.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() == "epoch_us" and len(node.expressions) == 1:
            node.replace(exp.Anonymous(this="unix_micros", expressions=[node.expressions[0]]))
    for node in list(tree.find_all(exp.TimeToUnix)):
        micros = exp.Anonymous(this="unix_micros", expressions=[node.this])
        node.replace(exp.Div(this=exp.cast(micros, "double"), expression=exp.Literal.number(1e6)))
    return tree


def micro_intervals(tree: exp.Expression) -> exp.Expression:
    """`to_microseconds(n)` -> `make_dt_interval(0, 0, 0, n * 0.000001)`: an exact interval.

    Spark has no to_microseconds; its day-time interval takes DECIMAL(18, 6) seconds.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() != "to_microseconds" or len(node.expressions) != 1:
            continue
        micros = exp.cast(node.expressions[0].copy(), "decimal(38, 0)")
        seconds = exp.Mul(this=micros, expression=exp.Literal.number("0.000001"))
        zero = exp.Literal.number(0)
        node.replace(
            exp.Anonymous(
                this="make_dt_interval",
                expressions=[zero, zero.copy(), zero.copy(), exp.cast(seconds, "decimal(18, 6)")],
            )
        )
    return tree


def hugeint_as_decimal(tree: exp.Expression) -> exp.Expression:
    """`cast(x as hugeint)` -> `cast(x as decimal(38, 0))`: Spark's widest exact integer."""
    for node in list(tree.find_all(exp.DataType)):
        if node.is_type(exp.DataType.Type.INT128):
            node.replace(exp.DataType.build("decimal(38, 0)"))
    return tree


def integer_sign(tree: exp.Expression) -> exp.Expression:
    """`sign(x)` -> `cast(sign(x) as int)`: Spark's sign is DOUBLE, and a DOUBLE factor would
    turn exact integer arithmetic (sign(units) * (abs(units) ...)) into floating point."""
    for node in list(tree.find_all(exp.Sign)):
        if not isinstance(node.parent, exp.Cast):
            node.replace(exp.cast(node.copy(), "int"))
    return tree


def safe_subscripts(tree: exp.Expression) -> exp.Expression:
    """`list[1]`, `map[key]` -> `try_element_at(...)`: NULL when absent, as in DuckDB.

    Spark in ANSI mode raises on an index past the end or a missing map key. An integer
    literal subscript is a list index; any other subscript is a map key.
    """
    for node in list(tree.find_all(exp.Bracket)):
        if len(node.expressions) != 1:
            raise UnsupportedError(f"subscript with {len(node.expressions)} keys: {node.sql()}")
        key = node.expressions[0]
        if isinstance(key, exp.Literal) and not key.is_string:
            offset = 1 - (node.args.get("offset") or 0)
            key = exp.Literal.number(int(key.this) + offset)
        node.replace(exp.Anonymous(this="try_element_at", expressions=[node.this, key.copy()]))
    return tree


def exclusive_ranges(tree: exp.Expression) -> exp.Expression:
    """`range(a, b, step)` -> `if(a < b, filter(sequence(a, b, step), x -> x < b), array())`.

    DuckDB's range excludes `b`; sqlglot's `sequence(a, b - step, step)` drops the last value
    when b is not on the step grid (a line ending at 12:30 loses its 12:00 hour).
    """
    for node in list(tree.find_all(exp.GenerateSeries)):
        if not node.args.get("is_end_exclusive"):
            continue
        start, end, step = node.args["start"], node.args["end"], node.args.get("step")
        if step is None or (isinstance(step, exp.Literal) and str(step.this).startswith("-")):
            raise UnsupportedError(f"range() without a positive step: {node.sql('duckdb')}")
        sequence = exp.Anonymous(
            this="sequence", expressions=[start.copy(), end.copy(), step.copy()]
        )
        element = exp.to_identifier("range_value")
        keep = exp.Lambda(
            this=exp.LT(this=exp.column(element), expression=end.copy()), expressions=[element]
        )
        filtered = exp.Anonymous(this="filter", expressions=[sequence, keep])
        empty = exp.Array(expressions=[])
        node.replace(
            exp.If(
                this=exp.LT(this=start.copy(), expression=end.copy()), true=filtered, false=empty
            )
        )
    return tree


def window_filters(tree: exp.Expression) -> exp.Expression:
    """`sum(x) filter (where c) over (...)` -> `sum(case when c then x end) over (...)`.

    Spark accepts FILTER on aggregates but not on window aggregates.
    """
    for window in list(tree.find_all(exp.Window)):
        node = window.this
        if not isinstance(node, exp.Filter):
            continue
        aggregate, condition = node.this, node.expression.this
        if not isinstance(aggregate, exp.Sum | exp.Count | exp.Min | exp.Max | exp.Avg):
            raise UnsupportedError(f"FILTER on window {aggregate.key}: {window.sql('duckdb')}")
        argument = aggregate.this
        if isinstance(argument, exp.Star):
            argument = exp.Literal.number(1)
        case = exp.Case(ifs=[exp.If(this=condition.copy(), true=argument.copy())])
        aggregate = aggregate.copy()
        aggregate.set("this", case)
        window.set("this", aggregate)
    return tree


def ordered_lists(tree: exp.Expression) -> exp.Expression:
    """`list([distinct] x order by x)` -> `array_sort(collect_set|collect_list(x))`.

    sqlglot drops the ORDER BY of an ordered list aggregate; Spark has no ordered collect.
    """
    for node in list(tree.find_all(exp.ArrayAgg)):
        inner = node.this
        if not isinstance(inner, exp.Order):
            continue
        value, keys = inner.this, inner.expressions
        distinct = isinstance(value, exp.Distinct)
        item = value.expressions[0] if distinct else value
        if len(keys) != 1 or keys[0].this != item:
            raise UnsupportedError(f"list() ordered by another column: {node.sql('duckdb')}")
        collect = exp.Anonymous(
            this="collect_set" if distinct else "collect_list", expressions=[item.copy()]
        )
        ordered: exp.Expression = exp.Anonymous(this="array_sort", expressions=[collect])
        if keys[0].args.get("desc"):
            ordered = exp.Anonymous(this="reverse", expressions=[ordered])
        node.replace(ordered)
    return tree


def zipped_unnests(tree: exp.Expression) -> exp.Expression:
    """Several `unnest([...]) as c` in one select -> `inline(arrays_zip(...)) as (c, ...)`.

    DuckDB unnests side by side; Spark allows one generator per select.
    """
    for select in list(tree.find_all(exp.Select)):
        unnests = [
            item
            for item in select.expressions
            if isinstance(item.unalias(), exp.Unnest | exp.Explode)
        ]
        if len(unnests) < 2:
            continue
        if len(unnests) != len(select.expressions):
            raise UnsupportedError(f"unnest beside other columns: {select.sql('duckdb')}")
        arrays, names = [], []
        for item in unnests:
            inner = item.unalias()
            array = inner.expressions[0] if isinstance(inner, exp.Unnest) else inner.this
            arrays.append(array.copy())
            names.append(exp.to_identifier(item.alias_or_name))
        zipped = exp.Anonymous(
            this="inline", expressions=[exp.Anonymous(this="arrays_zip", expressions=arrays)]
        )
        select.set("expressions", [exp.Aliases(this=zipped, expressions=names)])
    return tree


def qualify_as_subquery(tree: exp.Expression) -> exp.Expression:
    """`select a, b from t qualify c` -> `select a, b from (select a, b, c as keep ...) where keep`.

    Spark has no QUALIFY; sqlglot's own rewrite leaves `t.c` pointing at a table out of scope.
    """
    for select in list(tree.find_all(exp.Select)):
        qualify = select.args.get("qualify")
        if qualify is None:
            continue
        names = [item.alias_or_name for item in select.expressions]
        if any(
            isinstance(item, exp.Star) or not name
            for item, name in zip(select.expressions, names, strict=True)
        ):
            raise UnsupportedError(f"QUALIFY needs named columns: {select.sql('duckdb')}")
        inner = select.copy()
        inner.set("qualify", None)
        inner.select(exp.alias_(qualify.this.copy(), "qualify_keep"), copy=False)
        outer = (
            exp.select(*[exp.column(name, table="qualified") for name in names])
            .from_(inner.subquery("qualified"))
            .where(exp.column("qualify_keep", table="qualified"))
        )
        if select is tree:
            tree = outer
        else:
            select.replace(outer)
    return tree


def list_sums(tree: exp.Expression) -> exp.Expression:
    """`list_sum(l)` -> `aggregate(filter(l, x -> x is not null), z, (acc, x) -> acc + x)`.

    Spark has no list_sum. The start value z is `first - first` of the non-NULL elements: zero of
    the element's own type (DECIMAL(38, s) stays DECIMAL(38, s)), NULL for a list with no
    non-NULL element, as DuckDB's list_sum gives. A narrower DECIMAL element would widen on each
    addition, which Spark's aggregate refuses: cast elements to DECIMAL(38, s) first.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() != "list_sum" or len(node.expressions) != 1:
            continue
        item, total = exp.to_identifier("list_item"), exp.to_identifier("list_total")
        present = exp.Anonymous(
            this="filter",
            expressions=[
                node.expressions[0].copy(),
                exp.Lambda(this=exp.column(item).is_(exp.null()).not_(), expressions=[item]),
            ],
        )
        first = exp.Anonymous(
            this="try_element_at", expressions=[present.copy(), exp.Literal.number(1)]
        )
        start = exp.Sub(this=first, expression=first.copy())
        add = exp.Lambda(
            this=exp.Add(this=exp.column(total), expression=exp.column(item)),
            expressions=[total, item.copy()],
        )
        node.replace(exp.Anonymous(this="aggregate", expressions=[present, start, add]))
    return tree


def local_to_instant(tree: exp.Expression) -> exp.Expression:
    """`timezone(zone, timestamp)` -> `to_utc_timestamp(timestamp, zone)`: wall time in a zone.

    Only a plain TIMESTAMP (a cast to timestamp, plus or minus an interval) is known to be wall
    time; DuckDB's timezone() of a TIMESTAMPTZ does the opposite, so anything else raises.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() != "timezone" or len(node.expressions) != 2:
            continue
        zone, value = node.expressions
        wall = value.this if isinstance(value, exp.Add | exp.Sub) else value
        if not (
            isinstance(wall, exp.Cast)
            and wall.to.is_type(exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.TIMESTAMP)
        ):
            raise UnsupportedError(f"timezone() of a non-TIMESTAMP: {node.sql('duckdb')}")
        node.replace(
            exp.Anonymous(this="to_utc_timestamp", expressions=[value.copy(), zone.copy()])
        )
    return tree


def hash_as_xxhash64(tree: exp.Expression) -> exp.Expression:
    """`hash(a, b)` -> `xxhash64(a is null, a, b is null, b)`: a 64-bit hash, as DuckDB's is.

    Spark's `hash` is 32 bits (two of a million profiles would share a key far too often), and
    its hashes skip NULL arguments, so `(NULL, 'x')` and `('x', NULL)` would hash alike: the
    is-null markers keep each argument in its place. The values are Spark's own, not DuckDB's.
    """
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() == "hash" and node.expressions:
            arguments = []
            for argument in node.expressions:
                arguments += [exp.Is(this=argument.copy(), expression=exp.Null()), argument.copy()]
            node.replace(exp.Anonymous(this="xxhash64", expressions=arguments))
    return tree


def cte_hints(tree: exp.Expression) -> exp.Expression:
    """`x as not materialized (...)` -> `x as (...)`: Spark SQL has no materialization hints.

    parse_model adds the hint to import CTEs (pipeline/dag/ctes.py); Spark plans each
    reference to a CTE itself.
    """
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    return tree


# applied in this order to the DuckDB syntax tree, before sqlglot writes Spark SQL
REWRITES: tuple[tuple[str, Rewrite], ...] = (
    ("qualified_names", qualified_names),
    ("cte_hints", cte_hints),
    ("qualify_as_subquery", qualify_as_subquery),
    ("zipped_unnests", zipped_unnests),
    ("ordered_lists", ordered_lists),
    ("window_filters", window_filters),
    ("exclusive_ranges", exclusive_ranges),
    ("safe_subscripts", safe_subscripts),
    ("epoch_functions", epoch_functions),
    ("hash_as_xxhash64", hash_as_xxhash64),
    ("list_sums", list_sums),
    ("local_to_instant", local_to_instant),
    ("micro_intervals", micro_intervals),
    ("hugeint_as_decimal", hugeint_as_decimal),
    ("integer_sign", integer_sign),
    ("division_as_double", division_as_double),
)


def to_spark(sql: str, pretty: bool = False) -> str:
    """One DuckDB statement as Spark SQL; what cannot be expressed raises UnsupportedError."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    for _name, rewrite in REWRITES:
        tree = rewrite(tree)
    return tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE, pretty=pretty)
