"""The build: create every model in dependency order through an engine; run the checks."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from pipeline.common.errors import ModelError
from pipeline.dag.engines.base import Engine
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.models import LAYERS, Model, across_periods, order
from pipeline.warehouse.undecodable import name_undecodable


@dataclass
class BuildReport:
    """What a build did: seconds per model, the rows each check returned, and the passes of the
    models built in resource-hash partitions (pipeline.dag.partitions)."""

    seconds: dict[str, float] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    check_failures: list[tuple[str, list[str], list[tuple], int]] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)


def build(
    target: duckdb.DuckDBPyConnection | Engine,
    models: list[Model],
    on_model: Callable[[Model], None] | None = None,
    carry: Callable[[Engine, list[Model]], None] | None = None,
) -> BuildReport:
    """Create every model in order; run checks last and collect their failing rows.

    ``target`` is an engine (pipeline.dag.engines), or a DuckDB connection to build on with
    the default one, without a scratch folder (every model a view or a table, as in tests).
    ``carry``: a night that builds some billing periods (pipeline.run.carry): the models whose
    rows belong to one period are built first, from the built periods' lines; then
    ``carry(engine, built)`` adds the other periods' published rows; then the models that
    combine periods (pipeline.dag.models.across_periods) and the checks of them.
    """
    engine = DuckDBEngine(target) if isinstance(target, duckdb.DuckDBPyConnection) else target
    report = BuildReport()
    engine.prepare(LAYERS[:-1])
    ordered = order(models)
    combined: set[str] = set()
    if carry is not None:
        combined = across_periods(models)
        # models outside `combined` never read one inside: the order stays a dependency order
        ordered = [m for m in ordered if m.qualified not in combined] + [
            m for m in ordered if m.qualified in combined
        ]
    carried = carry is None
    for model in ordered:
        if not carried and model.qualified in combined:
            carry(engine, [m for m in ordered if m.qualified not in combined])
            carried = True
        if on_model:
            on_model(model)
        started = time.perf_counter()
        try:
            if model.materialization == "check":
                failed = engine.check(model)
                report.checks_run.append(model.name)
                if failed is not None:
                    report.check_failures.append(
                        (model.name, failed.columns, failed.rows, failed.total)
                    )
            else:
                engine.create(model)
        except engine.errors as error:
            if isinstance(engine, DuckDBEngine):  # its errors name no damaged input file
                name_undecodable(engine.con, error)
            where = model.path or model.qualified
            raise ModelError(f"{where}: building {model.qualified} failed: {error}") from error
        report.seconds[model.qualified] = time.perf_counter() - started
    if not carried:
        carry(engine, ordered)
    report.partitions = dict(engine.partitions_used)
    return report
