"""`-- materialized: parquet`: a published table written once from its query, in the snapshot's
layout; the build reads it through a view and publish moves the files instead of copying."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.config.loader import load_config
from pipeline.dag.build import build
from pipeline.dag.engines.duckdb import DuckDBEngine
from pipeline.dag.models import discover, parse_model
from pipeline.run import stages
from pipeline.run.nightly import run_pipeline
from pipeline.run.sources import TELEMETRY_TABLES
from pipeline.scenario import write_scenario
from pipeline.warehouse import publish as publish_module
from pipeline.warehouse.parquet import OutsideCandidates, write_parquet
from pipeline.warehouse.publish import content_hash, publish, table_contents
from pipeline.warehouse.snapshots import DATABASE_NAME, open_database, snapshot_record

LINES = """-- Lines.
-- grain: one row per line_id
-- materialized: parquet
with numbers as (select unnest(range({rows})) as i)

select
    numbers.i as line_id,
    {period} as billing_period,
    (numbers.i * 1.25)::decimal(38, 10) as billed_cost,
    (numbers.i::hugeint * 10000000000000000000000000000000000) as big,
    map(['team'], ['ml']) as tags,
    timestamptz '2026-10-01 00:00:00+00' as charge_start
from numbers"""

TOTALS = """-- Totals.
-- grain: one row per billing_period
select lines.billing_period, sum(lines.billed_cost) as billed_cost, sum(lines.big) as big
from normalized.lines as lines
group by lines.billing_period"""

SIX = "'2026-0' || (1 + numbers.i % 6)::varchar"
CASES = {
    # (period expression, rows): the files of the layout, relative to normalized/
    "two periods: a filtered copy each": (
        "case when numbers.i < 3 then '2026-09' else '2026-10' end",
        7,
        [
            "lines/billing_period=2026-09/part_0.parquet",
            "lines/billing_period=2026-10/part_0.parquet",
        ],
    ),
    "six periods: PARTITION_BY": (
        SIX,
        12,
        [f"lines/billing_period=2026-0{month}/part_0.parquet" for month in range(1, 7)],
    ),
    "no rows: one plain file": ("'2026-10'", 0, ["lines.parquet"]),
}


def _models(period: str, rows: int) -> list:
    return [
        parse_model("normalized", "lines", LINES.format(period=period, rows=rows)),
        parse_model("marts", "totals", TOTALS),
    ]


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create schema staging")
    for name in publish_module.TELEMETRY_VIEWS:
        con.execute(f"create view staging.{name} as select 1 as id where false")
    return con


@pytest.mark.parametrize("case", sorted(CASES))
def test_written_once_read_through_a_view_and_moved_by_publish(tmp_path: Path, case: str) -> None:
    period, rows, files = CASES[case]
    as_table = _connect()
    build(as_table, _models(period, rows))  # no scratch folder: a table, as in tests
    assert as_table.execute(
        "select table_type from information_schema.tables where table_name = 'lines'"
    ).fetchone() == ("BASE TABLE",)

    con = _connect()
    engine = DuckDBEngine(con, tmp_path / "scratch")
    build(engine, _models(period, rows))
    written = tmp_path / "scratch" / "published" / "normalized"
    assert sorted(str(path.relative_to(written)) for path in written.rglob("*.parquet")) == files
    assert set(engine.published_files) == {"normalized.lines"}
    assert con.execute(
        "select table_type from information_schema.tables where table_name = 'lines'"
    ).fetchone() == ("VIEW",)
    for name in ("normalized.lines", "marts.totals"):
        # same columns, types (HUGEINT cast back), rows and order-independent hash as a table
        assert content_hash(con, name) == content_hash(as_table, name), name

    contents = table_contents(con, engine.published_files)
    snapshot = publish(con, tmp_path / "warehouse", "20261101T000000Z-aaaaaa", contents)
    assert not any(written.rglob("*.parquet")), "moved into the snapshot, not copied"
    moved = snapshot.folder / "normalized"
    assert sorted(str(path.relative_to(moved)) for path in moved.rglob("*.parquet")) == files
    record = snapshot_record(snapshot.folder)["tables"]["normalized.lines"]
    assert record["rows"] == rows
    assert record["partition_by"] == ("billing_period" if rows else None)
    published = open_database(tmp_path / "warehouse" / DATABASE_NAME)
    assert content_hash(published, "normalized.lines") == content_hash(as_table, "normalized.lines")
    published.close()


def test_a_table_without_billing_periods_is_one_file(tmp_path: Path) -> None:
    model = parse_model(
        "normalized", "plain", "-- Plain.\n-- grain: x\n-- materialized: parquet\nselect 1 as x"
    )
    engine = DuckDBEngine(_connect(), tmp_path)
    build(engine, [model])
    assert engine.published_files == {
        "normalized.plain": tmp_path / "published" / "normalized" / "plain.parquet"
    }
    assert engine.con.execute("select x from normalized.plain").fetchall() == [(1,)]


def test_the_per_line_and_per_attempt_tables_are_written_once_as_parquet() -> None:
    shipped = {model.qualified for model in discover() if model.materialization == "parquet"}
    assert shipped == {
        "normalized.cost_line_facts",
        "attribution.line_attributions",
        "allocation.line_remainders",
        "allocation.pool_shares",
        "marts.attempt_costs",
        "marts.attempt_goodput",
        "marts.cost_changes",
    }
    assert parse_model("normalized", "x", LINES.format(period="'a'", rows=1)).created_as == "table"


PASSED = """-- Slices of lines, built in resource passes.
-- grain: one row per line_id
-- materialized: parquet
select
    lines.line_id,
    'r' || (lines.line_id % 5)::varchar as resource_id,
    {period} as billing_period,
    lines.billed_cost
from normalized.lines as lines
where in_resource_partition('r' || (lines.line_id % 5)::varchar) and lines.line_id < {below}"""


LINES_PERIODS = {
    "two": (CASES["two periods: a filtered copy each"][0], {"2026-09", "2026-10"}),
    "one": ("'2026-10'", {"2026-10"}),
}


def _passed(period: str = "lines.billing_period", below: int = 100, lines: str = "two") -> list:
    return [
        parse_model("normalized", "lines", LINES.format(period=LINES_PERIODS[lines][0], rows=7)),
        parse_model("allocation", "slices", PASSED.format(period=period, below=below)),
    ]


ANOTHER = "case when lines.line_id = 6 then '2026-12' else lines.billing_period end"


@pytest.mark.parametrize("lines", sorted(LINES_PERIODS))
@pytest.mark.parametrize(
    ("period", "below", "computed"),
    [
        # the periods of the lines it reads: two checked by a filter that reads nothing, one
        # written as the candidate
        ("lines.billing_period", 100, ["normalized.lines"]),
        # a period its inputs do not have: every pass's periods are computed
        (ANOTHER, 100, None),
        # no rows in any pass: one plain file
        ("lines.billing_period", 0, ["normalized.lines"]),
    ],
)
def test_a_published_model_in_passes_writes_each_pass_into_its_periods(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    period: str,
    below: int,
    computed: list | None,
    lines: str,
) -> None:
    from pipeline.dag.engines.duckdb import engine as duckdb_engine

    as_table = _connect()
    build(as_table, _passed(period, below, lines))
    calls: list[str] = []
    original = duckdb_engine.partition_values

    def counted(con, source, column):
        calls.append(
            "allocation.slices"
            if "in_resource_partition" in source or "% 3" in source
            else "normalized.lines"
        )
        return original(con, source, column)

    monkeypatch.setattr(duckdb_engine, "partition_values", counted)
    con = _connect()
    engine = DuckDBEngine(con, tmp_path / "scratch", partitions=3)
    build(engine, _passed(period, below, lines))
    written = tmp_path / "scratch" / "published" / "allocation"
    files = sorted(str(path.relative_to(written)) for path in written.rglob("*.parquet"))
    assert engine.partitions_used["allocation.slices"] == 3
    if below == 0:
        assert files == ["slices.parquet"]
    else:
        expected = LINES_PERIODS[lines][1] | ({"2026-12"} if computed is None else set())
        assert {name.split("/")[1].split("=")[1] for name in files} == expected
        assert len(files) > len(expected)  # several passes wrote into a period's folder
        assert all(name.split("/")[-1].startswith("part_") for name in files)
    if computed is not None:
        assert calls == computed  # the slices' periods were never computed from their query
    else:
        assert calls.count("normalized.lines") == 1 and len(calls) == 4
    assert content_hash(con, "allocation.slices") == content_hash(as_table, "allocation.slices")


TWO = "case when numbers.i < 3 then '2026-09' else '2026-10' end"
SOME_NULL = "case when numbers.i < 3 then null else '2026-10' end"
MONTHS = [f"2026-0{month}" for month in range(1, 7)]


@pytest.mark.parametrize(
    ("period", "candidates", "folders"),
    [
        # a filtered copy per candidate; a candidate without rows leaves no folder
        (TWO, ["2026-08", "2026-09", "2026-10"], ["2026-09", "2026-10"]),
        (TWO, ["2026-10"], None),  # a row of 2026-09 is refused
        (SOME_NULL, ["2026-10"], None),  # so is a row without a period
        (SIX, MONTHS, MONTHS),  # PARTITION_BY
        (SIX, MONTHS[:5], None),
        (
            SOME_NULL,
            ["2026-10", None],
            ["2026-10", "__HIVE_DEFAULT_PARTITION__"],
        ),  # NULL: PARTITION_BY
    ],
)
def test_a_write_given_candidate_periods_refuses_a_row_of_another(
    tmp_path: Path, period: str, candidates: list, folders: list | None
) -> None:
    """The periods a model should have are written without a query computing them first: a row
    of any other period stops the write instead of being left out."""
    con = duckdb.connect()
    source = (
        f"(select numbers.i as line_id, {period} as billing_period from range(12) as numbers(i))"
    )
    columns = (("line_id", "BIGINT"), ("billing_period", "VARCHAR"))
    target = tmp_path / "lines"
    if folders is None:
        with pytest.raises(OutsideCandidates):
            write_parquet(con, source, columns, target, "billing_period", candidates, None, True)
        return
    assert (
        write_parquet(con, source, columns, target, "billing_period", candidates, None, True) == 12
    )
    assert sorted(path.name.split("=")[1] for path in target.iterdir()) == folders
    read = f"read_parquet('{target}/*/*.parquet', hive_partitioning = true)"
    assert con.execute(f"select count(distinct line_id) from {read}").fetchone()[0] == 12


def test_a_write_given_candidate_periods_passes_other_errors_on(tmp_path: Path) -> None:
    con = duckdb.connect()
    source = (
        "(select numbers.i as line_id, error('not a period') as billing_period "
        "from range(3) as numbers(i))"
    )
    columns = (("line_id", "BIGINT"), ("billing_period", "VARCHAR"))
    with pytest.raises(duckdb.Error, match="not a period"):
        write_parquet(
            con, source, columns, tmp_path / "x", "billing_period", ["2026-10"], None, True
        )


def test_a_run_publishes_the_telemetry_parquet_it_wrote_before_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The telemetry is written once, by pyarrow, and the build reads that file: publish moves
    it into the snapshot instead of copying a table of the build database (DuckDB's writer)."""
    relations: dict[str, str] = {}
    build_models = stages.build_models

    def watch(engine: DuckDBEngine, *args: object) -> object:
        relations.update(
            engine.con.execute(
                "select table_name, table_type from information_schema.tables "
                "where table_schema = 'raw' and table_name in (select unnest(?))",
                [list(TELEMETRY_TABLES)],
            ).fetchall()
        )
        return build_models(engine, *args)

    monkeypatch.setattr(stages, "build_models", watch)
    result = run_pipeline(load_config(write_scenario(tmp_path / "world")))

    assert relations == dict.fromkeys(TELEMETRY_TABLES, "VIEW")
    record = snapshot_record(result.snapshot)["tables"]
    with open_database(result.database) as con:
        for name in TELEMETRY_TABLES:
            path = result.snapshot / "telemetry" / f"{name}.parquet"
            assert pq.read_metadata(path).created_by.startswith("parquet-cpp-arrow"), name
            rows = con.execute(f"select count(*) from telemetry.{name}").fetchall()[0][0]
            assert rows == record[f"telemetry.{name}"]["rows"]
    assert record["telemetry.attempts"]["rows"] > 0
