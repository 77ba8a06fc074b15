"""Every command's table at 60, 80 and 200 columns: each money value printed is the mart's.

Amounts are read back from the output as numbers; a value cut off (`1,464.…`), squeezed out
or wrapped would not read back, and the multiset of printed amounts would miss it.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console
from rich.progress import Progress

from pipeline.cli.app import EXPERIMENT_COLUMNS, _print_run_summary, main
from pipeline.cli.explain import BASES, explain_attempt
from pipeline.cli.status import progress_columns
from pipeline.cli.tables import Column, print_table
from pipeline.config.loader import load_config
from pipeline.report.page import EXPERIMENT_HEADERS
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database

WIDTHS = (60, 80, 200)
CENT = Decimal("0.01")
AMOUNT = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})*\.\d+(?![\w.])")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("terminal")
    config = write_scenario(folder)
    result = run_pipeline(load_config(config))
    return {"config": config, "database": result.database, "run_id": result.run_id}


def invoke(width: int, *args: str) -> Result:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result


def printed_amounts(text: str) -> Counter[Decimal]:
    return Counter(Decimal(match.replace(",", "")) for match in AMOUNT.findall(text))


def assert_printed(text: str, expected: Iterable[Decimal], width: int) -> None:
    assert "…" not in text
    missing = Counter(expected) - printed_amounts(text)
    assert not missing, f"at {width} columns these amounts are not printed whole: {missing}"


def query(database: Path, sql: str) -> list[tuple]:
    con = open_database(database)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def decimals(rows: list[tuple]) -> list[Decimal]:
    return [value for row in rows for value in row if isinstance(value, Decimal)]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("exact", [False, True])
def test_sql_prints_every_amount_of_attempt_costs(world: dict, width: int, exact: bool) -> None:
    sql = "select * from marts.attempt_costs order by all"
    args = ["--exact"] if exact else []
    result = invoke(width, "sql", "--database", str(world["database"]), *args, sql)
    expected = decimals(query(world["database"], sql))
    assert len(expected) > 40
    # every amount of attempt_costs is money: to the cent, or with --exact every digit
    assert_printed(
        result.output, expected if exact else [value.quantize(CENT) for value in expected], width
    )
    for row in query(world["database"], "select attempt_id from marts.attempt_costs"):
        assert row[0] in result.output


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("model", ["fully_loaded", "marginal"])
def test_explain_prints_every_amount(world: dict, width: int, model: str) -> None:
    result = invoke(
        width, "explain", "att-llm-01", "--model", model, "--config", str(world["config"])
    )
    con = open_database(world["database"])
    try:
        explanation = explain_attempt(con, "att-llm-01", model)
    finally:
        con.close()
    places = Decimal("0.000001")
    expected = [
        Decimal(row[basis]).quantize(places, ROUND_HALF_EVEN)
        for row in explanation.groups
        for basis in BASES
    ]
    expected += [explanation.totals[basis].quantize(places, ROUND_HALF_EVEN) for basis in BASES]
    assert_printed(result.output, expected, width)
    assert "totals equal marts.attempt_costs" in result.output


@pytest.mark.parametrize("width", WIDTHS)
def test_status_prints_the_billed_totals(world: dict, width: int) -> None:
    result = invoke(width, "status", "--config", str(world["config"]))
    rows = query(
        world["database"],
        "select sum(bill_total) from marts.reconciliation where cost_basis = 'billed_cost' "
        "and allocation_model = 'marginal' group by billing_period, provider, "
        "billing_account_id, billing_currency",
    )
    assert_printed(result.output, [row[0].quantize(CENT) for row in rows], width)


@pytest.mark.parametrize("width", WIDTHS)
def test_run_summary_prints_every_experiment_amount(
    world: dict, width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    _print_run_summary(world["database"], str(world["run_id"]))
    text = capsys.readouterr().out
    experiments = query(
        world["database"],
        "select max(effective_cost) filter (where allocation_model = 'marginal'), "
        "max(effective_cost) filter (where allocation_model = 'fully_loaded'), "
        "max(failed_attempt_cost) filter (where allocation_model = 'fully_loaded'), "
        "max(experiment_only_cost) filter (where allocation_model = 'fully_loaded') "
        "from marts.experiment_costs group by experiment_id",
    )
    reconciliation = query(
        world["database"],
        "select bill_total, attributed, shared, unallocated, difference from marts.reconciliation "
        "where cost_basis = 'effective_cost' and allocation_model = 'fully_loaded'",
    )
    expected = [value.quantize(CENT) for value in decimals(experiments + reconciliation)]
    assert_printed(text, expected, width)
    # one name per number: the summary's and the report's words for the same amounts
    shared = {"marginal", "fully loaded", "failed attempts' cost (fully loaded)"}
    assert shared <= set(EXPERIMENT_COLUMNS) & set(EXPERIMENT_HEADERS)
    for line in text.splitlines():
        assert "=" in line or len(line) <= width, line  # a table fits; records may soft-wrap


def test_a_table_too_wide_prints_as_records(world: dict) -> None:
    sql = "select attempt_id, effective_cost from marts.attempt_costs order by all limit 2"
    wide = invoke(200, "sql", "--database", str(world["database"]), sql).output
    narrow = invoke(20, "sql", "--database", str(world["database"]), sql).output
    assert "one block per row" not in wide
    assert "one block per row (a table would be wider than 20 columns)" in " ".join(narrow.split())
    (first, _), *_ = query(world["database"], sql)
    assert f"    attempt_id = {first}" in narrow


def fits(text: str, width: int) -> None:
    assert "one block per row" not in text
    assert "…" not in text
    for line in text.splitlines():
        assert len(line.rstrip()) <= width, line


@pytest.mark.parametrize("width", WIDTHS)
def test_check_prints_every_coverage_amount(world: dict, width: int) -> None:
    result = invoke(width, "check", "--skip-aws", "--config", str(world["config"]))
    rows = query(world["database"], "select total_cost from marts.tag_coverage")
    assert_printed(result.output, [row[0].quantize(CENT) for row in rows], width)
    (account,) = query(world["database"], "select distinct sub_account_id from marts.tag_coverage")
    whole = f"  {account[0]}  " if width >= 80 else f"account = {account[0]}"
    assert whole in result.output
    if width >= 80:
        fits(result.output, width)


def test_a_five_column_query_prints_as_a_table_at_80(world: dict) -> None:
    sql = (
        "select attempt_id, allocation_model, effective_cost, billed_cost, list_cost "
        "from marts.attempt_costs order by all"
    )
    text = invoke(80, "sql", "--database", str(world["database"]), sql).output
    fits(text, 80)
    rows = query(world["database"], sql)
    assert_printed(text, [value.quantize(CENT) for value in decimals(rows)], 80)


def test_the_run_summary_prints_as_tables_at_80(
    world: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    _print_run_summary(world["database"], str(world["run_id"]))
    text = capsys.readouterr().out
    fits(text, 80)
    assert re.search(r"^experiment +attempts +attempts +marginal +loaded", text, re.M)


@pytest.mark.parametrize(
    ("sql", "first"),
    [
        ("select count(*) as n from marts.attempt_costs", "1 row"),
        ("select 1 as n union all select 2", "2 rows"),
    ],
)
def test_a_narrow_result_keeps_its_title_whole(world: dict, sql: str, first: str) -> None:
    text = invoke(80, "sql", "--database", str(world["database"]), sql).output
    assert text.splitlines()[0] == first
    assert text.splitlines()[1].strip() == "n"


@pytest.mark.parametrize("width", [20, 40, 80])
def test_titles_and_headers_break_only_between_words(width: int) -> None:
    console = Console(width=width, record=True, file=io.StringIO())
    title = "Tag coverage of the published bill (effective cost, rounded to the cent)"
    columns = [Column("n", numeric=True), Column("experiment-only cost (fully loaded)")]
    layout = print_table(title, columns, [["1", "0.00"]], console=console)
    text = console.export_text()
    words = set(text.split())
    # a word of the title or a header is whole on one line ("experiment-" may end one)
    assert set(title.split()) <= words
    assert layout == "table"
    assert {"(fully", "loaded)", "cost"} <= words
    assert "only" in " ".join(text.split()) and "ro" not in words


@pytest.mark.parametrize("width", [60, 80, 200])
def test_progress_bars_keep_their_time_whole(width: int) -> None:
    console = Console(width=width, record=True, file=io.StringIO())
    bars = Progress(*progress_columns(), console=console, expand=True)
    for message, total in [
        ("ingest: 1 deliveries, 1 new", 1),
        ("build: 73 models", 73),
        ("publish: snapshot 20261207T035917608200Z-9cd17d is current", 1),
    ]:
        task = bars.add_task(message, total=total)
        bars.update(task, completed=total)
    console.print(bars.get_renderable())
    text = console.export_text()
    assert "…" not in text
    assert len(re.findall(r" (\d+)/\1 +0:00:00$", text, re.M)) == 3, text
    if width >= 80:  # the description wraps between words, narrower it may fold
        assert "20261207T035917608200Z-9cd17d" in text
