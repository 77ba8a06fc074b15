"""Resource-hash partitions: a model built in passes is the model built in one."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipeline.common.errors import ModelError
from pipeline.dag.build import build
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.models import discover, parse_model
from pipeline.dag.partitions import (
    BYTES_PER_LINE,
    auto_partitions,
    memory_bytes,
    partitions_for,
    pass_sql,
)

# one row per (resource, hour) with the resource's hours and their sum: every row of a resource
# must be in the same pass for `total` to be right
HELD = """-- Hours held per resource.
-- grain: one row per (resource_id, hour)
-- materialized: {materialized}
with uses as (
    select * from source.uses
),

final as (
    select
        uses.resource_id,
        uses.hour,
        sum(uses.seconds) over (partition by uses.resource_id) as total
    from uses
    where in_resource_partition(uses.resource_id)
)

select * from final
"""


def _uses(con: duckdb.DuckDBPyConnection, resources: int = 500, schema: str = "source") -> None:
    con.execute(f"create schema if not exists {schema}")
    con.execute(
        f"create table {schema}.uses as select 'i-' || (i % $1) as resource_id, i // $1 as hour, "
        "i * 7 % 3600 as seconds from range($1 * 6) as t(i)",
        [resources],
    )


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple]:
    return sorted(con.execute(f"select * from {name}").fetchall())


@pytest.mark.parametrize("materialized", ["table", "intermediate"])
def test_passes_together_are_the_model_built_at_once(materialized: str) -> None:
    con = duckdb.connect()
    _uses(con)
    con.execute("create schema attribution")
    model = parse_model("attribution", "held", HELD.format(materialized=materialized))
    single = DuckDBEngine(con, partitions=1)
    single.create(model)
    once = _rows(con, "attribution.held")
    engine = DuckDBEngine(con, partitions=5)
    engine.create(model)
    assert engine.partitions_used == {"attribution.held": 5}
    assert _rows(con, "attribution.held") == once and len(once) == 3000
    # each pass keeps a different fifth of the resources, and every resource is in one pass
    passes = [
        {row[0] for row in con.execute(pass_sql(model.sql, 5, index)).fetchall()}
        for index in range(5)
    ]
    assert all(passes) and sum(len(found) for found in passes) == 500
    assert set().union(*passes) == {row[0] for row in once}


def test_an_engine_without_a_count_takes_as_many_passes_as_memory_needs() -> None:
    con = duckdb.connect()
    _uses(con, resources=20_000)  # 120,000 rows
    con.execute("create schema attribution")
    con.execute("set memory_limit = '10MB'")
    expected = partitions_for(120_000, memory_bytes("9.5 MiB"))
    assert expected == pytest.approx(120_000 * BYTES_PER_LINE / (9.5 * 2**20), abs=1)
    assert auto_partitions(con, ["source.uses"]) == expected > 1
    engine = DuckDBEngine(con)
    con.execute("set memory_limit = '10GB'")
    engine.create(parse_model("attribution", "held", HELD.format(materialized="table")))
    assert engine.partitions_used == {"attribution.held": 1}


def test_memory_as_duckdb_reports_it() -> None:
    assert memory_bytes("1.4 GiB") == int(1.4 * 2**30)
    assert memory_bytes("762.9 MiB") == int(762.9 * 2**20)
    assert memory_bytes("4.0 GB") == 4 * 10**9
    assert memory_bytes("512 bytes") == 512
    assert memory_bytes("unlimited") is None


def test_the_count_follows_lines_per_memory() -> None:
    gib = 2**30
    assert partitions_for(10_000_000, int(3.7 * gib)) == 1  # 10M lines at memory_limit=4GB
    assert partitions_for(10_000_000, int(1.4 * gib)) == 1  # at 1536MB
    assert partitions_for(10_000_000, int(0.7 * gib)) == 2  # at 768MB
    assert partitions_for(50_000_000, int(3.7 * gib)) == 2
    assert partitions_for(100_000_000, int(3.7 * gib)) == 4
    assert partitions_for(0, gib) == partitions_for(10**9, None) == 1
    assert partitions_for(10**12, gib) == 64


@pytest.mark.parametrize(
    ("layer", "materialized"), [("marts", "view"), ("checks", ""), ("staging", "")]
)
def test_only_a_stored_table_may_be_built_in_passes(layer: str, materialized: str) -> None:
    sql = HELD.format(materialized=materialized)
    if not materialized:
        sql = sql.replace("-- materialized: \n", "")
    with pytest.raises(ModelError, match="in_resource_partition\\(\\) builds a model in passes"):
        parse_model(layer, "held", sql)


def test_a_forgotten_pass_fails_to_bind_instead_of_building_a_wrong_table() -> None:
    con = duckdb.connect()
    _uses(con)
    model = parse_model("attribution", "held", HELD.format(materialized="table"))
    with pytest.raises(duckdb.Error, match="__runcost_partition"):
        con.execute(model.sql)


def test_the_shipped_overlaps_are_built_in_passes() -> None:
    (overlaps,) = [m for m in discover() if m.qualified == "attribution.resource_time_overlaps"]
    # the held hours and the windows
    assert overlaps.sql.count("__runcost_partitions__ = 1 or") == 2


def test_the_build_reports_the_passes_it_took() -> None:
    con = duckdb.connect()
    _uses(con, schema="config")  # a build reads only models and sources
    sql = HELD.format(materialized="intermediate").replace("source.uses", "config.uses")
    model = parse_model("attribution", "held", sql)
    report = build(DuckDBEngine(con, partitions=3), [model])
    assert report.partitions == {"attribution.held": 3}
    assert len(_rows(con, "attribution.held")) == 3000


# the macro as a pass filter alone: what the planner expects of it decides the joins' build sides
PASS_FILTER = """-- The rows of one pass.
-- grain: one row per (resource_id, hour)
-- materialized: table
select uses.resource_id, uses.hour
from source.uses as uses
where in_resource_partition(uses.resource_id)
"""


def _estimated_rows(partitions: int, partition: int) -> int:
    con = duckdb.connect()
    _uses(con)  # 3,000 rows over 500 resources
    model = parse_model("attribution", "pass_rows", PASS_FILTER)
    plan = con.execute(
        "explain (format json) " + pass_sql(model.sql, partitions, partition)
    ).fetchall()
    (top,) = json.loads(plan[0][1])
    return int(top["extra_info"]["Estimated Cardinality"])


def test_one_pass_keeps_every_row_in_the_plan() -> None:
    assert _estimated_rows(1, 0) == 3000


def test_a_pass_of_many_is_estimated_as_a_share_of_the_rows() -> None:
    # an equality on the hash would be estimated like one on the resource: a handful of rows
    assert 300 <= _estimated_rows(4, 1) <= 1500
