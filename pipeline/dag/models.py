"""SQL models: find them in sql/, parse each one's header and inputs, and order them."""

from __future__ import annotations

import graphlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import expressions as exp

from pipeline.common.errors import ModelError
from pipeline.dag.ctes import inline_imports
from pipeline.dag.macros import expand_macros
from pipeline.dag.partitions import is_partitioned

LAYERS = ("staging", "normalized", "attribution", "allocation", "marts", "checks")
# Schemas a model may read without them being models: raw sources (staging only) and the
# configuration tables the run writes (any layer).
SOURCE_SCHEMAS = {"raw": ("staging",), "config": LAYERS}
_GRAIN = re.compile(r"^--\s*grain:\s*\S", re.MULTILINE)
# `-- materialized: view` publishes a model as a view over the published tables instead of
# materializing and writing it: for wide projections and joins of tables that are published
# anyway; `-- materialized: intermediate` builds a table later models read, never published:
# for per-line steps whose content the published tables already carry (docs/performance.md);
# `-- materialized: parquet` is a published table the DuckDB build writes once, from its query,
# as the snapshot's Parquet and reads through a view: for a wide per-line table, whose DuckDB
# copy would cost more to write than the Parquet (normalized.cost_line_facts,
# attribution.line_attributions, allocation.line_remainders)
_MATERIALIZED = re.compile(r"^--\s*materialized:\s*(\S*)", re.MULTILINE)
# `-- pass inputs: <schema.model>, ...` in a model built in passes names the build steps, built in
# the same passes, that it reads only through in_resource_partition on their resource: a DuckDB pass
# then reads the step's file of the same pass alone instead of every pass's file and filtering
# them (pipeline.dag.engines.duckdb_engine)
_PASS_INPUTS = re.compile(r"^--\s*pass inputs:\s*([\w.]+(?:\s*,\s*[\w.]+)*)", re.MULTILINE)
# `-- joins: as written` makes a DuckDB build run the model's joins as the SQL writes them, each
# building its hash table on its right-hand side, in every pass: for a model whose large relation
# DuckDB's build-side optimizer would hash instead (attribution.line_attributions, whose slices
# then came out in the hash table's order)
_JOINS = re.compile(r"^--\s*joins:\s*(.*)$", re.MULTILINE)
# `-- periods: combined` marks a model whose rows combine billing periods (a mart per attempt or
# experiment, estimates priced over every period): a night that builds some periods builds it,
# and every model reading it, after the other periods' published rows are carried in
# (pipeline.run.carry); every other model's rows belong to one period and come from its lines.
# `-- periods: keyed by <column> of <layer.table>` marks a published table without a billing
# period whose rows are shared by the lines of every period (the line profiles): a night carries
# the rows whose <column> the carried periods of <layer.table> hold
_PERIODS = re.compile(r"^--\s*periods:\s*(.*)$", re.MULTILINE)
_KEYED = re.compile(r"keyed by ([a-z_][a-z0-9_]*) of ([a-z_]+\.[a-z_][a-z0-9_]*)")
MATERIALIZATIONS = ("table", "view", "intermediate", "parquet")
# materializations the engines compute once and store in the build
STORED = ("table", "intermediate", "parquet")
# materializations published as tables (Parquet in the snapshot)
PUBLISHED_TABLES = ("table", "parquet")
# materializations a model built in resource-hash passes may have (pipeline.dag.partitions); a
# published one in passes writes each pass's files into its billing periods' folders
_IN_PASSES = ("table", "intermediate", "parquet")


def sql_root() -> Path:
    """The folder of SQL models: inside the installed package, or sql/ beside it in a checkout."""
    here = Path(__file__).resolve()
    packaged = here.parents[1] / "sql"  # the wheel force-includes sql/ as pipeline/sql
    return packaged if packaged.is_dir() else here.parents[2] / "sql"


@dataclass(frozen=True)
class Model:
    """One SQL model: `sql/<layer>/<name>.sql` builds `<layer>.<name>`."""

    layer: str
    name: str
    path: Path | None
    sql: str
    description: str
    grain: str
    inputs: frozenset[str] = field(default_factory=frozenset)
    materialized: str = "table"
    pass_inputs: frozenset[str] = field(default_factory=frozenset)
    joins_as_written: bool = False
    combines_periods: bool = False
    # (key column, per-period table) when the header says `-- periods: keyed by ...`
    carried_by: tuple[str, str] | None = None

    @property
    def qualified(self) -> str:
        return f"{self.layer}.{self.name}"

    @property
    def materialization(self) -> str:
        if self.layer == "checks":
            return "check"
        return "view" if self.layer == "staging" else self.materialized

    @property
    def created_as(self) -> str:
        """What a DuckDB build creates for the model: a `view` or a `table`."""
        return "table" if self.materialization in STORED else "view"


def parse_model(layer: str, name: str, sql: str, path: Path | None = None) -> Model:
    """Parse a model's header and inputs; malformed models raise ModelError naming the file."""
    where = str(path) if path else f"{layer}.{name}"
    sql = expand_macros(sql, where)
    lines = sql.lstrip().splitlines()
    if not lines or not lines[0].startswith("--"):
        raise ModelError(f"{where}: the first line must be a comment saying what the model is")
    grain_match = _GRAIN.search(sql)
    if not grain_match:
        raise ModelError(f"{where}: add a header line `-- grain: one row per (...)`")
    grain_line = sql[grain_match.start() :].splitlines()[0]
    materialized = _materialized(sql, layer, where)
    if is_partitioned(sql) and (layer in ("staging", "checks") or materialized not in _IN_PASSES):
        raise ModelError(
            f"{where}: in_resource_partition() builds a model in passes, which only a "
            "`-- materialized: table`, `intermediate` or `parquet` model can be; remove the call "
            "or change the materialization"
        )
    if sql.rstrip().endswith(";"):
        raise ModelError(f"{where}: a model is one select without a trailing ';'")
    try:
        statements = sqlglot.parse(sql, dialect="duckdb")
    except sqlglot.errors.ParseError as error:
        raise ModelError(f"{where}: SQL does not parse: {error}") from error
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ModelError(f"{where}: a model must be exactly one select statement")
    inputs = _inputs(statements[0])
    pass_inputs = _pass_inputs(sql, inputs, where)
    sql = inline_imports(sql, statements[0])
    return Model(
        layer=layer,
        name=name,
        path=path,
        sql=sql.rstrip(),
        description=lines[0].lstrip("- ").strip(),
        grain=grain_line.split(":", 1)[1].strip(),
        inputs=frozenset(inputs),
        materialized=_published_view_inputs(materialized, inputs, where),
        pass_inputs=pass_inputs,
        joins_as_written=_joins_as_written(sql, materialized, layer, where),
        combines_periods=_periods(sql, where) == "combined",
        carried_by=_carried_by(_periods(sql, where)),
    )


def _pass_inputs(sql: str, inputs: set[str], where: str) -> frozenset[str]:
    found = [name.strip() for line in _PASS_INPUTS.findall(sql) for name in line.split(",")]
    if found and not is_partitioned(sql):
        raise ModelError(
            f"{where}: `-- pass inputs:` is for a model built in passes; call "
            "in_resource_partition() on what it reads, or remove the line"
        )
    unread = sorted(name for name in found if name not in inputs)
    if unread:
        raise ModelError(
            f"{where}: `-- pass inputs:` names {', '.join(unread)}, which the model does not "
            "read; name only models it selects from"
        )
    return frozenset(found)


def _joins_as_written(sql: str, materialized: str, layer: str, where: str) -> bool:
    found = [text.strip() for text in _JOINS.findall(sql)]
    if not found:
        return False
    if len(found) > 1 or not found[0].startswith("as written"):
        raise ModelError(
            f"{where}: the one value of the header line `-- joins:` is `as written` "
            f"(found {', '.join(repr(text) for text in found)})"
        )
    if layer in ("staging", "checks") or materialized not in STORED:
        raise ModelError(
            f"{where}: `-- joins: as written` is for a model the build stores (`-- materialized: "
            "table`, `intermediate` or `parquet`); a view's joins are planned where it is read, "
            "so remove the line"
        )
    return True


def _periods(sql: str, where: str) -> str | None:
    """The value of the header line `-- periods:` (None without one): `combined`, or `keyed by
    <column> of <layer.table>` and the reason in parentheses after either."""
    found = [text.strip() for text in _PERIODS.findall(sql)]
    valid = all(text.startswith("combined") or _KEYED.match(text) for text in found)
    if not valid or len(found) > 1:
        raise ModelError(
            f"{where}: the one header line `-- periods:` says `combined` or `keyed by <column> "
            f"of <layer.table>` (found {', '.join(repr(text) for text in found)})"
        )
    if not found:
        return None
    return "combined" if found[0].startswith("combined") else found[0]


def _carried_by(periods: str | None) -> tuple[str, str] | None:
    matched = _KEYED.match(periods or "")
    return (matched.group(1), matched.group(2)) if matched else None


def across_periods(models: Iterable[Model]) -> set[str]:
    """The models whose rows combine billing periods: those that say `-- periods: combined`
    and every model that reads one of them, directly or not."""
    models = list(models)
    found = {model.qualified for model in models if model.combines_periods}
    grown = True
    while grown:
        more = {m.qualified for m in models if m.qualified not in found and m.inputs & found}
        found |= more
        grown = bool(more)
    return found


def _published_view_inputs(materialized: str, inputs: set[str], where: str) -> str:
    # a published view is re-created in runcost.duckdb, where only published relations exist
    unpublished = sorted(name for name in inputs if name.split(".")[0] in ("raw", "staging"))
    if materialized == "view" and unpublished:
        raise ModelError(
            f"{where}: a view is published over the published tables, and "
            f"{', '.join(unpublished)} is not published; read a normalized/attribution/"
            "allocation/marts model or config.*, or make the model `-- materialized: table`"
        )
    return materialized


def _materialized(sql: str, layer: str, where: str) -> str:
    found = _MATERIALIZED.findall(sql)
    if not found:
        return "table"
    if len(found) > 1 or found[0] not in MATERIALIZATIONS:
        raise ModelError(
            f"{where}: write one header line `-- materialized: table`, `view`, `intermediate` "
            "or `parquet`"
            f" (found {', '.join(repr(item) for item in found)})"
        )
    if layer in ("staging", "checks"):
        raise ModelError(
            f"{where}: a {layer} model cannot choose its materialization; remove the "
            "`-- materialized:` line"
        )
    return found[0]


def _inputs(statement: exp.Expression) -> set[str]:
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    found = set()
    for table in statement.find_all(exp.Table):
        if table.db:
            found.add(f"{table.db}.{table.name}")
        elif table.name and table.name not in ctes and not isinstance(table.this, exp.Anonymous):
            found.add(table.name)
    return found


def discover(root: Path | None = None) -> list[Model]:
    """Every model under sql/<layer>/*.sql."""
    root = root or sql_root()
    models = []
    for layer in LAYERS:
        for path in sorted((root / layer).glob("*.sql")):
            models.append(parse_model(layer, path.stem, path.read_text(encoding="utf-8"), path))
    return models


def order(models: Iterable[Model]) -> list[Model]:
    """Models in dependency order; checks the layer rules and that every input exists."""
    by_name = {model.qualified: model for model in models}
    graph: dict[str, set[str]] = {}
    for model in by_name.values():
        deps = set()
        for name in model.inputs:
            schema, _, _ = name.partition(".")
            if name in by_name:
                if LAYERS.index(by_name[name].layer) > LAYERS.index(model.layer):
                    raise ModelError(
                        f"{model.qualified} reads {name}, a higher layer; a model reads only "
                        f"its own or lower layers ({' < '.join(LAYERS)})"
                    )
                deps.add(name)
            elif schema in SOURCE_SCHEMAS:
                if model.layer not in SOURCE_SCHEMAS[schema]:
                    raise ModelError(
                        f"{model.qualified} reads {name}; {schema}.* may be read only from "
                        f"{', '.join(SOURCE_SCHEMAS[schema])} models"
                    )
            else:
                raise ModelError(
                    f"{model.qualified} reads {name}, which is neither a model nor a source; "
                    "name inputs fully qualified, such as normalized.cost_lines"
                )
        graph[model.qualified] = deps
        _published_inputs(model, [by_name[name] for name in deps])
    try:
        ordered = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        raise ModelError(f"models depend on each other in a cycle: {error.args[1]}") from error
    return [by_name[name] for name in ordered]


def _published_inputs(model: Model, inputs: list[Model]) -> None:
    # a published view is re-created in runcost.duckdb, where intermediates do not exist
    hidden = sorted(item.qualified for item in inputs if item.materialization == "intermediate")
    if model.materialization == "view" and model.layer != "staging" and hidden:
        raise ModelError(
            f"{model.qualified} is published as a view but reads {', '.join(hidden)}, which is "
            "not published (`-- materialized: intermediate`); read published tables, or make "
            f"{model.qualified} `-- materialized: table`"
        )


def intermediates(models: Iterable[Model]) -> set[str]:
    """Names of the models built as tables for later models and never published."""
    return {model.qualified for model in models if model.materialization == "intermediate"}


def published_views(models: Iterable[Model]) -> list[tuple[str, str]]:
    """(name, sql) of every model published as a view, in dependency order."""
    return [
        (model.qualified, model.sql)
        for model in order(models)
        if model.layer not in ("staging", "checks") and model.materialization == "view"
    ]
