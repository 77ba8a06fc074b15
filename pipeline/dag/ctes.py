"""Import CTEs are read where they are used: a model's `with x as (select * from t)` is inlined.

Models start with import CTEs, one per relation they read (STYLE.md). DuckDB materializes a
CTE that the query references more than once: it copies the relation into a temporary result
before the query runs and reads that copy at each reference. For an import CTE the copy holds
the whole relation (`normalized.cost_lines`, every slice), costs a write and, under a fixed
`memory_limit`, spills; reading the relation again at each reference costs one scan, with its
filters and projections pushed into it. At 10M line items `marts.waste_findings` took 13.4 CPU
s with its imports materialized and 6.7 inlined, 28.7 and 9.9 with `memory_limit=800MB`
(docs/performance.md).

So parse_model marks each import CTE `as not materialized`. A CTE that computes something (a
join, a filter, an aggregate, a window) keeps DuckDB's choice: computing it once is what the
model asked for, and a window with ties must not be numbered twice. A CTE that says
`as materialized` or `as not materialized` itself keeps what it says. The Spark engine drops
the hint (Spark SQL has no such syntax; it plans each reference itself).
"""

from __future__ import annotations

import re

from sqlglot import expressions as exp

# what makes a CTE compute something rather than read a relation as it is
_COMPUTING_CLAUSES = (
    "joins",
    "laterals",
    "where",
    "group",
    "having",
    "qualify",
    "distinct",
    "windows",
    "order",
    "limit",
    "offset",
)


def import_ctes(statement: exp.Expression) -> list[str]:
    """The names of the statement's top-level CTEs that only read one relation (a table or
    view of the build, not another CTE)."""
    found = statement.args.get("with") or statement.args.get("with_")
    if found is None:
        return []
    names = {cte.alias for cte in found.expressions}
    return [
        cte.alias
        for cte in found.expressions
        if cte.args.get("materialized") is None
        and is_import(cte.this)
        and not _reads_a_cte(cte.this, names)
    ]


def _reads_a_cte(query: exp.Expression, names: set[str]) -> bool:
    """`select * from renamed`: one step of the model itself, not a relation it imports."""
    source = (query.args.get("from") or query.args.get("from_")).this
    return not source.db and source.name in names


def is_import(query: exp.Expression) -> bool:
    """A select of columns (or *) from one table or view, nothing computed."""
    if not isinstance(query, exp.Select) or any(query.args.get(k) for k in _COMPUTING_CLAUSES):
        return False
    source = query.args.get("from") or query.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return False
    if not isinstance(source.this.this, exp.Identifier):  # a table function: read_parquet()
        return False
    return all(_is_column(projection) for projection in query.expressions)


def _is_column(projection: exp.Expression) -> bool:
    if isinstance(projection, exp.Alias):
        projection = projection.this
    return isinstance(projection, exp.Star | exp.Column) and not projection.find(exp.Func)


def inline_imports(sql: str, statement: exp.Expression) -> str:
    """``sql`` with `as not materialized` on each import CTE of ``statement`` (its parse)."""
    for name in import_ctes(statement):
        definition = re.compile(rf"^(\s*(?:with\s+)?{re.escape(name)}\s+as)\s+\(", re.I | re.M)
        if len(definition.findall(sql)) == 1:  # else the name is ambiguous: leave it as written
            sql = definition.sub(r"\1 not materialized (", sql, count=1)
    return sql
