"""Build steps (`-- materialized: intermediate`) with a scratch folder: Parquet, one file per
pass, read through a view with the columns and types the same model has as a table."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipeline.common.errors import ModelError
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.models import discover, parse_model

# every kind of column the shipped steps carry, a HUGEINT sum (which Parquet cannot hold) and
# a resource-hash filter, so the same model is built in one pass or in several
STEP = """-- A build step with every kind of column.
-- grain: one row per (resource_id, hour)
-- materialized: intermediate
with uses as (
    select * from source.uses
),

final as (
    select
        uses.resource_id,
        uses.hour,
        sum(uses.seconds) over (partition by uses.resource_id) as total,
        cast(uses.seconds * 1.5 as decimal(38, 10)) as cost,
        uses.seconds / 7 as share,
        uses.seconds % 2 = 0 as fully_attributed,
        timestamptz '2026-10-01 00:00:00+00' + to_hours(uses.hour) as hour_start,
        [{'attempt_id': 'a-' || uses.hour, 'overlap_us': uses.seconds}] as holders,
        map(['team'], [uses.resource_id]) as tags,
        case when uses.hour = 0 then null else uses.resource_id end as maybe_null
    from uses
    where in_resource_partition(uses.resource_id)
)

select * from final
"""


def _connect(path: str = ":memory:", **config: str) -> duckdb.DuckDBPyConnection:
    """A build database with source.uses: 40 resources, 10 hours each."""
    con = duckdb.connect(path, config=config)
    con.execute("set TimeZone = 'UTC'")
    con.execute("create schema source")
    con.execute("create schema attribution")
    con.execute(
        "create table source.uses as select 'i-' || (i % 40) as resource_id, i // 40 as hour, "
        "i * 7 % 3600 as seconds from range(400) as t(i)"
    )
    return con


def _described(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple]:
    return [row[:2] for row in con.execute(f"describe {name}").fetchall()]


@pytest.mark.parametrize("passes", [1, 3])
def test_a_step_is_parquet_read_as_the_table_it_replaces(tmp_path: Path, passes: int) -> None:
    model = parse_model("attribution", "held", STEP)
    as_table = _connect()
    DuckDBEngine(as_table, partitions=passes).create(model)  # no scratch folder: a table
    table_type = "select table_type from information_schema.tables where table_name = 'held'"
    assert as_table.execute(table_type).fetchone()[0] == "BASE TABLE"

    con = _connect()
    engine = DuckDBEngine(con, scratch=tmp_path, partitions=passes)
    engine.create(model)
    assert con.execute(table_type).fetchone()[0] == "VIEW"
    folder = tmp_path / "steps" / "attribution.held"
    assert sorted(path.name for path in folder.iterdir()) == [
        f"pass_{index}.parquet" for index in range(passes)
    ]
    assert engine.partitions_used == {"attribution.held": passes}
    # the HUGEINT sum comes back as HUGEINT, every other type as written
    assert _described(con, "attribution.held") == _described(as_table, "attribution.held")
    assert dict(_described(con, "attribution.held"))["total"] == "HUGEINT"
    rows = "select * from attribution.held order by resource_id, hour"
    assert con.execute(rows).fetchall() == as_table.execute(rows).fetchall()
    assert len(con.execute(rows).fetchall()) == 400


def test_a_step_with_no_rows_keeps_its_columns(tmp_path: Path) -> None:
    con = _connect()
    con.execute("delete from source.uses")
    DuckDBEngine(con, scratch=tmp_path, partitions=2).create(
        parse_model("attribution", "held", STEP)
    )
    assert con.execute("select count(*) from attribution.held").fetchone()[0] == 0
    assert dict(_described(con, "attribution.held"))["holders"].startswith("STRUCT(")


def test_a_step_built_again_replaces_its_files(tmp_path: Path) -> None:
    con = _connect()
    model = parse_model("attribution", "held", STEP)
    DuckDBEngine(con, scratch=tmp_path, partitions=3).create(model)
    DuckDBEngine(con, scratch=tmp_path, partitions=1).create(model)
    folder = tmp_path / "steps" / "attribution.held"
    assert [path.name for path in folder.iterdir()] == ["pass_0.parquet"]
    assert con.execute("select count(*) from attribution.held").fetchone()[0] == 400


def test_the_shipped_build_steps_are_intermediate_models() -> None:
    """The steps the engine writes as Parquet: the attribution and allocation intermediates."""
    steps = {model.qualified for model in discover() if model.materialization == "intermediate"}
    assert {"attribution.tag_matches", "attribution.resource_time_overlaps"} <= steps
    assert {"allocation.pooled_lines", "attribution.unplaced_lines"} <= steps
    # the rests are computed where they are published (allocation.line_remainders), not in a step
    assert "attribution.unattributed_lines" not in {model.qualified for model in discover()}


def test_a_kept_build_database_still_reads_its_steps(tmp_path: Path) -> None:
    """A failed check keeps runs/<run_id>/build.duckdb and tmp/: closing the build database
    (whose temp_directory is tmp/) leaves the steps there, readable when it is opened again."""
    scratch = tmp_path / "tmp"
    path = str(tmp_path / "build.duckdb")
    con = _connect(path, temp_directory=str(scratch))
    DuckDBEngine(con, scratch=scratch, partitions=2).create(
        parse_model("attribution", "held", STEP)
    )
    con.close()
    again = duckdb.connect(path, read_only=True)
    assert again.execute("select count(*), sum(total) from attribution.held").fetchone() == (
        400,
        10 * sum(i * 7 % 3600 for i in range(400)),  # each resource's total on its 10 rows
    )


# reads the step above only through the same resource filter, so a pass may read its own file
READER = """-- Reads a step built in the same passes.
-- grain: one row per (resource_id, hour)
-- materialized: intermediate
-- pass inputs: attribution.held (each pass reads its own file of it)
select held.resource_id, held.hour, held.cost
from attribution.held as held
where in_resource_partition(held.resource_id)
"""
READ = "select resource_id, hour, cost from attribution.reader order by all"


def test_a_pass_reads_its_own_file_of_a_step_built_in_the_same_passes(tmp_path: Path) -> None:
    step, reader = (
        parse_model("attribution", "held", STEP),
        parse_model("attribution", "reader", READER),
    )
    assert reader.pass_inputs == {"attribution.held"}
    whole = _connect()
    for model in (step, reader):
        DuckDBEngine(whole).create(model)  # tables, one pass
    con = _connect()
    engine = DuckDBEngine(con, scratch=tmp_path, partitions=3)
    engine.create(step)
    engine.create(reader)
    assert con.execute(READ).fetchall() == whole.execute(READ).fetchall()
    assert len(con.execute(READ).fetchall()) == 400

    # the proof that pass 0 read its own file alone: with pass 1's file in its place, pass 0
    # finds none of its rows and pass 1's rows are read once (every file would give them twice)
    files = tmp_path / "steps" / "attribution.held"
    kept = sorted(
        con.execute(
            "select resource_id, hour, cost from read_parquet(?)",
            [[str(files / "pass_1.parquet"), str(files / "pass_2.parquet")]],
        ).fetchall()
    )
    shutil.copy(files / "pass_1.parquet", files / "pass_0.parquet")
    engine.create(reader)
    assert con.execute(READ).fetchall() == kept
    assert 0 < len(kept) < 400


def test_a_step_of_other_passes_is_read_whole_and_filtered(tmp_path: Path) -> None:
    step, reader = (
        parse_model("attribution", "held", STEP),
        parse_model("attribution", "reader", READER),
    )
    whole = _connect()
    for model in (step, reader):
        DuckDBEngine(whole).create(model)
    con = _connect()
    engine = DuckDBEngine(con, scratch=tmp_path, partitions=3)
    engine.create(step)
    engine.partitions = 2  # the reader in 2 passes: no file of the step is one of its passes
    engine.create(reader)
    assert con.execute(READ).fetchall() == whole.execute(READ).fetchall()


def test_pass_inputs_name_steps_a_model_in_passes_reads() -> None:
    with pytest.raises(ModelError, match="which the model does not read"):
        parse_model(
            "attribution", "reader", READER.replace("attribution.held (", "attribution.other (")
        )
    unpartitioned = READER.replace("where in_resource_partition(held.resource_id)\n", "")
    with pytest.raises(ModelError, match="is for a model built in passes"):
        parse_model("attribution", "reader", unpartitioned)


def test_a_model_that_says_so_runs_its_joins_as_written(tmp_path: Path) -> None:
    """`-- joins: as written`: DuckDB's build-side optimizer off in every pass of the model, in
    one pass or many and whether a pass reads its own file or every file, added to any optimizer
    already off and restored after the model; a model that does not say it keeps the optimizer."""
    step = parse_model("attribution", "held", STEP)
    sql = READER.replace(
        "select held.resource_id,",
        "select current_setting('disabled_optimizers') as disabled, held.resource_id,",
    )
    written = parse_model(
        "attribution",
        "reader",
        sql.replace(
            "-- pass inputs:", "-- joins: as written (the windows on the right)\n-- pass inputs:"
        ),
    )
    planned = parse_model("attribution", "reader", sql)
    assert written.joins_as_written and not planned.joins_as_written
    read = "select distinct disabled from attribution.reader"
    con = _connect()
    con.execute("set disabled_optimizers = 'statistics_propagation'")
    engine = DuckDBEngine(con, scratch=tmp_path, partitions=3)
    engine.create(step)
    setting = "select current_setting('disabled_optimizers')"
    off = [("statistics_propagation,build_side_probe_side",)]
    for passes, model, expected in (
        (3, written, off),  # each pass its own file
        (2, written, off),  # every file, filtered
        (1, written, off),  # one pass
        (3, planned, [("statistics_propagation",)]),
    ):
        engine.partitions = passes
        engine.create(model)
        assert con.execute(read).fetchall() == expected, (passes, model.joins_as_written)
        assert con.execute(setting).fetchone()[0] == "statistics_propagation"
    tables = DuckDBEngine(_connect())  # no scratch folder: a table, in passes or not
    tables.con.execute("set disabled_optimizers = 'statistics_propagation'")
    tables.create(step)
    tables.create(written)
    assert tables.con.execute(read).fetchall() == off


def test_joins_as_written_is_said_once_of_a_stored_model() -> None:
    with pytest.raises(ModelError, match="the one value of the header line `-- joins:`"):
        parse_model("attribution", "reader", READER + "-- joins: hashed\n")
    with pytest.raises(ModelError, match="is for a model the build stores"):
        parse_model(
            "attribution",
            "viewed",
            "-- A view.\n-- grain: one row per x\n-- materialized: view\n-- joins: as written\n"
            "select 1 as x",
        )
