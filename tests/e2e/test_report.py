"""runcost report: one self-contained HTML file whose charts draw in headless Chromium."""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from chromium import Charts, Sections, chromium, console_messages, needs_chromium
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.config.loader import load_config
from pipeline.report import data, write_report
from pipeline.report.analyst import SECTIONS, section_rows
from pipeline.report.svg import Box, place_label, scatter
from pipeline.scenario import write_gcp_scenario, write_scenario
from pipeline.warehouse.access import open_snapshot
from pipeline.warehouse.queries.changes import is_first_snapshot, previous_costs
from pipeline.warehouse.snapshots import open_database

BASE_CHARTS = {"spend-by-service-USD", "spend-by-kind-USD", "experiment-cost-USD"}


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("report")
    return run_pipeline(load_config(write_scenario(folder))).database


TAG_COVERAGE_STAND_IN = """
create table marts.tag_coverage as
select provider, billing_period, billing_account_id, sub_account_id, service_name,
    billing_currency, count(*) as cost_lines, sum(effective_cost) as total_cost,
    coalesce(sum(effective_cost) filter (where attempt_tag is not null), 0) as attempt_tagged_cost,
    coalesce(sum(effective_cost) filter (where experiment_tag is not null), 0)
        as experiment_tagged_cost
from normalized.cost_lines
group by provider, billing_period, billing_account_id, sub_account_id, service_name,
    billing_currency
"""
FRONTIER_STAND_IN = """
create table marts.cost_quality_frontier as
select costs.experiment_id, costs.allocation_model, experiments.higher_is_better,
    experiments.quality_threshold, costs.effective_cost as total_cost,
    max(attempts.metric_value) as best_metric_value, true as on_frontier
from marts.experiment_costs as costs
inner join telemetry.experiments as experiments on costs.experiment_id = experiments.experiment_id
inner join telemetry.attempts as attempts on costs.experiment_id = attempts.experiment_id
where attempts.metric_name = experiments.quality_metric
group by costs.experiment_id, costs.allocation_model, experiments.higher_is_better,
    experiments.quality_threshold, costs.effective_cost
"""


def optional_charts(database: Path) -> set[str]:
    """The optional charts a snapshot has the marts for."""
    con = open_snapshot(database)
    try:
        found = {"tag-coverage"} if data.table_exists(con, "marts.tag_coverage") else set()
        if data.table_exists(con, "marts.cost_quality_frontier"):
            found.add("cost-quality")
    finally:
        con.close()
    return found


@pytest.fixture(scope="module")
def enriched(database: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the snapshot with stand-ins for the optional marts it does not publish yet."""
    # beside the original: the views name the snapshot relative to the database, and a
    # database reads only its own warehouse's snapshots/
    copy = database.parent / "enriched.duckdb"
    shutil.copy(database, copy)
    missing = {"tag-coverage", "cost-quality"} - optional_charts(database)
    con = duckdb.connect(str(copy))
    try:
        con.execute("set TimeZone = 'UTC'")
        if "tag-coverage" in missing:
            con.execute(TAG_COVERAGE_STAND_IN)
        if "cost-quality" in missing:
            con.execute(FRONTIER_STAND_IN)
    finally:
        con.close()
    return copy


@pytest.fixture(scope="module")
def report(database: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(database, tmp_path_factory.mktemp("html") / "report.html")


@pytest.fixture
def con(database: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = open_snapshot(database)
    yield connection
    connection.close()


def test_command_writes_one_file(database: Path, tmp_path: Path) -> None:
    output = tmp_path / "out" / "report.html"
    result = CliRunner().invoke(
        main, ["report", "--database", str(database), "--output", str(output)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {output}" in result.output.replace("\n", "")
    assert [path.name for path in output.parent.iterdir()] == ["report.html"]


def test_report_before_anything_is_published(tmp_path: Path) -> None:
    config = tmp_path / "runcost.toml"
    config.write_text("", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "--config", str(config)])
    assert result.exit_code == 1
    assert "nothing is published yet; run `runcost run` first" in result.output


def test_report_is_self_contained(report: Path, database: Path) -> None:
    html = report.read_text(encoding="utf-8")
    without_namespace = html.replace("http://www.w3.org/2000/svg", "")
    assert not re.search(r"https?://|//cdn|<link|@import|url\(|src=", without_namespace)
    assert html.count("<svg") == len(BASE_CHARTS | optional_charts(database))


def test_experiment_totals_are_the_marts(con: duckdb.DuckDBPyConnection) -> None:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    statuses: dict[str, set[str]] = defaultdict(set)
    for _, experiment, status, amount in data.experiment_status(con):
        totals[experiment] += amount
        statuses[experiment].add(status)
    marts = dict(
        con.execute(
            "select experiment_id, effective_cost from marts.experiment_costs "
            "where allocation_model = 'fully_loaded'"
        ).fetchall()
    )
    assert totals == marts
    assert statuses["exp-llm-7b"] == {"succeeded", "timeout"}
    assert statuses["exp-vision-sweep"] == {"experiment only", "interrupted", "succeeded"}


def test_daily_spend_adds_up_to_the_bill(con: duckdb.DuckDBPyConnection) -> None:
    rows = data.daily_spend(con)
    bill = con.execute("select sum(effective_cost) from normalized.cost_lines").fetchone()[0]
    # days are prorated shares of a charge, each rounded to 10 places
    assert abs(sum(row[4] for row in rows) - bill) < Decimal("0.000001")
    assert {row[3] for row in rows} == {"attributed", "shared", "unallocated"}
    days = sorted({row[1] for row in rows})
    assert (days[0].isoformat(), days[-1].isoformat(), len(days)) == (
        "2026-10-01",
        "2026-10-31",
        31,
    )
    split = data.service_split(con)
    assert sum(row[5] for row in split) == bill


def test_reconciliation_shows_period_status(con: duckdb.DuckDBPyConnection) -> None:
    names, rows = data.reconciliation(con)
    assert len(rows) == 8  # one period, two models, four bases
    status = names.index("period_status")
    assert {row[status] for row in rows} == {"final"}  # every scenario line is invoiced
    assert {row[names.index("difference")] for row in rows} == {Decimal(0)}


def test_report_tables_show_the_mart_amounts(report: Path, con: duckdb.DuckDBPyConnection) -> None:
    html = report.read_text(encoding="utf-8")
    for experiment, amount in con.execute(
        "select experiment_id, effective_cost from marts.experiment_costs "
        "where allocation_model = 'fully_loaded'"
    ).fetchall():
        assert experiment in html
        assert f"{amount:,.2f}" in html
    has_coverage = data.table_exists(con, "marts.tag_coverage")
    assert ("id='tag-coverage'" in html) == has_coverage


def test_optional_sections_draw_when_their_marts_exist(enriched: Path, tmp_path: Path) -> None:
    html = write_report(enriched, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "id='tag-coverage'" in html and "data-chart='tag-coverage'" in html
    assert "tagged cost / total_cost per billing_period" in html
    assert "id='cost-quality'" in html and "data-chart='cost-quality'" in html
    assert html.count("<svg") == len(BASE_CHARTS) + 2
    con = open_snapshot(enriched)
    try:
        series, _ = data.tag_coverage(con)
        expected = con.execute(
            "select billing_period, sum(attempt_tagged_cost) / sum(total_cost) "
            "from marts.tag_coverage group by all order by all"
        ).fetchall()
    finally:
        con.close()
    attempt = next(item for item in series if item.name == "attempt tagged USD")
    assert attempt.points == [(period, float(share)) for period, share in expected]
    assert 0 < attempt.points[0][1] < 1


@needs_chromium
def test_console_check_catches_errors(tmp_path: Path) -> None:
    # the check below must be able to fail: a page that logs and throws is caught
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><script>console.error('boom');"
        "throw new Error('kaboom');</script></body></html>",
        encoding="utf-8",
    )
    result = chromium(page, tmp_path / "profile", "--enable-logging=stderr", "--v=0", "--dump-dom")
    messages = console_messages(result.stderr)
    assert any('"boom"' in line for line in messages)
    assert any("Uncaught Error: kaboom" in line for line in messages)


@needs_chromium
@pytest.mark.parametrize("which", ["scenario", "with-optional-marts"])
def test_charts_render_in_chromium(
    which: str,
    database: Path,
    enriched: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = write_report(enriched if which != "scenario" else database, tmp_path / "report.html")
    dom = chromium(page, tmp_path / "dom", "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_messages(dom.stderr) == []
    parsed = Charts()
    parsed.feed(dom.stdout)
    optional = {"tag-coverage", "cost-quality"} if which != "scenario" else set()
    expected = BASE_CHARTS | optional | optional_charts(database)
    assert set(parsed.charts) == expected
    assert parsed.body.get("data-report-rendered") == "ok"
    assert parsed.title.endswith("(rendered)")
    for name, chart in parsed.charts.items():
        assert int(chart["data-rendered-width"]) > 0, name
        assert int(chart["data-rendered-height"]) > 0, name
        assert int(chart["data-marks-drawn"]) > 0, name
    # 31 days x (4 services, 3 kinds), minus empty slices
    assert int(parsed.charts["spend-by-kind-USD"]["data-marks-drawn"]) >= 31
    # one bar segment per (experiment, attempt status) with cost, read from the same database
    source = enriched if which != "scenario" else database
    with open_database(source) as con:
        segments = con.execute(
            "select count(*) from (select experiment_id, status from marts.attempt_costs "
            "where allocation_model = 'fully_loaded' group by all having sum(effective_cost) <> 0)"
        ).fetchone()[0]
        experiment_only = con.execute(
            "select count(*) from marts.experiment_costs "
            "where allocation_model = 'fully_loaded' and experiment_only_cost <> 0"
        ).fetchone()[0]
    drawn = int(parsed.charts["experiment-cost-USD"]["data-marks-drawn"])
    assert drawn == segments + experiment_only

    screenshot = tmp_path / f"report-{which}.png"
    shot = chromium(
        page, tmp_path / "shot", "--window-size=1100,2800", f"--screenshot={screenshot}"
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nreport screenshot ({which}): {screenshot}")


def section_expectations(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """For every section, text it must show, read from the marts with the report's rounding."""

    def money(sql: str) -> list[str]:
        return [f"{row[0]:,.2f}" for row in con.execute(sql).fetchall()]

    def names(sql: str) -> list[str]:
        return [str(row[0]) for row in con.execute(sql).fetchall()]

    model = "allocation_model = 'fully_loaded'"
    return {
        "spend": ["Spend by day", "Per service over the snapshot"],
        "experiments": names("select distinct experiment_id from marts.experiment_costs")
        + money(f"select effective_cost from marts.experiment_costs where {model}"),
        "attempts": names("select attempt_id from marts.attempt_costs")
        + money(f"select effective_cost from marts.attempt_costs where {model}"),
        "estimates": names("select distinct cost_status from marts.attempt_costs"),
        "unallocated": names(
            f"select distinct unallocated_reason from marts.unallocated_costs where {model}"
        )
        + money(
            "select sum(effective_cost) from marts.unallocated_costs "
            f"where {model} group by unallocated_reason, billing_currency"
        ),
        "accepted": money(
            "select cost_per_accepted_result from marts.cost_per_accepted_result "
            f"where {model} and dimension in ('all', 'team', 'capacity_type') "
            "and cost_per_accepted_result is not null"
        ),
        "goodput": names(f"select attempt_id from marts.attempt_goodput where {model}")
        + money(
            "select cost_per_useful_gpu_hour from marts.attempt_goodput "
            f"where {model} and cost_per_useful_gpu_hour is not null"
        ),
        "capacity": names("select distinct capacity_type from marts.capacity_type_economics")
        + money(
            "select price_per_useful_gpu_hour from marts.capacity_type_economics "
            f"where {model} and price_per_useful_gpu_hour is not null"
        ),
        "waste": names("select subject_id from marts.waste_findings")
        + money("select effective_cost from marts.waste_findings"),
        "changes": ["What changed since the last run"],
        # the demo world's attempts are measured by no prometheus source
        "gpu-idle": ["No GPU utilisation measured"],
        "reconciliation": money("select bill_total from marts.reconciliation"),
    }


@needs_chromium
@pytest.mark.parametrize("width", [900, 1400])
def test_every_section_renders_whole_at_900_and_1400_px(
    width: int, database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = write_report(database, tmp_path / "report.html")
    size = f"--window-size={width},2000"
    dom = chromium(page, tmp_path / "dom", size, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = Sections()
    parsed.feed(dom.stdout)
    assert parsed.body.get("data-report-rendered") == "ok"
    assert parsed.body["data-clipped-labels"] == "0"  # no chart label outside its chart
    # no sideways scroll: the page is no wider than the window
    assert int(parsed.body["data-page-width"]) <= int(parsed.body["data-window-width"]) == width
    with open_database(database) as con:
        expected = section_expectations(con)
    for section, texts in expected.items():
        assert section in parsed.text, f"section {section} is missing"
        shown = " ".join(parsed.text[section])
        missing = [text for text in texts if text not in shown]
        assert not missing, f"{section} at {width} px does not show {missing}"
    screenshot = tmp_path / f"report-{width}.png"
    shot = chromium(
        page, tmp_path / "shot", f"--window-size={width},9000", f"--screenshot={screenshot}"
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nreport screenshot at {width} px: {screenshot}")


@pytest.fixture(scope="module")
def gcp_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipeline.run.nightly import run_pipeline

    folder = tmp_path_factory.mktemp("report-gcp")
    return run_pipeline(load_config(write_gcp_scenario(folder))).database


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse published twice: estimates the first night, part of the bill the second."""
    from nights import CLOCKS, write_night

    from pipeline.run.nightly import run_pipeline

    root = tmp_path_factory.mktemp("report-nights")
    for night in (1, 2):
        database = run_pipeline(write_night(root, night), now=CLOCKS[night]).database
    return database


def layout(page: Path, width: int, profile: Path) -> dict[str, str]:
    """The body attributes the page's check script sets, laid out in a ``width`` px window."""
    dom = chromium(page, profile, f"--window-size={width},2000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = Sections()
    parsed.feed(dom.stdout)
    return parsed.body


@needs_chromium
@pytest.mark.parametrize("width", [900, 1280])
@pytest.mark.parametrize("world", ["aws", "gcp"])
def test_tables_fit_and_chart_labels_do_not_overlap(
    world: str, width: int, database: Path, gcp_database: Path, tmp_path: Path
) -> None:
    source = database if world == "aws" else gcp_database
    body = layout(write_report(source, tmp_path / "report.html"), width, tmp_path / "dom")
    assert body["data-report-rendered"] == "ok"
    # every table's last column (the reconciliation's difference) is inside its box and window
    assert body["data-wide-tables"] == ""
    assert body["data-overlapping-labels"] == "0", body["data-overlapping-pairs"]
    assert body["data-clipped-labels"] == "0"
    assert int(body["data-page-width"]) <= width


@needs_chromium
def test_the_layout_check_catches_overlapping_labels_and_wide_tables(tmp_path: Path) -> None:
    from pipeline.report.layout_check import CHECK_SCRIPT
    from pipeline.report.page import STYLE

    label = "<text x='20' y='20' font-size='11'>exp-a (val_loss)</text>"
    cells = "".join(f"<td>a-rather-long-cell-{index}</td>" for index in range(20))
    page = tmp_path / "bad.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><style>{STYLE}</style></head><body>"
        "<svg data-chart='c' viewBox='0 0 200 100' width='200' height='100'>"
        f"<rect class='mark' width='5' height='5'/>{label}{label.replace('20', '24')}</svg>"
        f"<section id='wide'><div class='table'><table><tr>{cells}</tr></table></div></section>"
        f"<script>{CHECK_SCRIPT}</script></body></html>",
        encoding="utf-8",
    )
    body = layout(page, 900, tmp_path / "dom")
    assert body["data-overlapping-labels"] == "1"
    assert body["data-overlapping-pairs"] == "exp-a (val_loss) / exp-a (val_loss)"
    assert body["data-wide-tables"].startswith("wide(")


def test_crowded_scatter_labels_move_or_are_left_out() -> None:
    points = [(f"exp-{index} (val_loss)", 100.0 + index, 1.0, index == 0) for index in range(6)]
    points.append(("exp-far (val_loss)", 900.0, 2.0, False))
    chart = scatter("crowded", "crowded", points, x_label="cost", y_label="quality / bar")
    labels = re.findall(
        r"<text class='point-label' x='([\d.]+)' y='([\d.]+)'[^>]*>([^<]*)</text>", chart
    )
    named = [text for _, _, text in labels]
    assert "exp-far (val_loss)" in named and "exp-0 (val_loss)" in named  # frontier first
    assert len(named) < len(points)  # six points on one spot cannot all be labelled
    assert len({(x, y) for x, y, _ in labels}) == len(labels)
    # every point keeps its name in its tooltip
    assert all(f"<title>{name}:" in chart for name, *_ in points)


def test_a_label_goes_where_nothing_is() -> None:
    area = Box(0, 0, 400, 200)
    first = place_label(100, 100, 60, area, [])
    assert first is not None and first[1] == "start"
    second = place_label(100, 100, 60, area, [first[2]])
    assert second is not None and not second[2].overlaps(first[2])
    # by the right edge a label runs leftwards rather than out of the chart
    assert place_label(390, 100, 60, area, [])[1] == "end"
    assert place_label(100, 100, 60, area, [area]) is None


def test_page_names_one_cost_basis(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert "All amounts: effective cost, fully loaded (commitments amortized: Savings" in html
    notes = re.findall(r"<section id='(\w+)'><h2>[^<]*</h2><p class='note'>([^<]*)</p>", html)
    analyst = {anchor for anchor, _ in notes} & {section.anchor for section in SECTIONS}
    assert analyst == {section.anchor for section in SECTIONS}
    for anchor, note in notes:
        if anchor in analyst or anchor == "changes":
            assert "Amounts: effective cost, fully loaded." in note, anchor


def test_a_first_run_says_there_is_nothing_to_compare(report: Path, database: Path) -> None:
    con = open_snapshot(database)
    try:
        assert is_first_snapshot(con)
        run_id = con.execute("select run_id from main.runcost_snapshot").fetchone()[0]
    finally:
        con.close()  # the command opens it with its own settings
    html = report.read_text(encoding="utf-8")
    changes = re.search(r"<section id='changes'>.*?</section>", html, re.S).group(0)
    assert "This is the first snapshot: there is no previous one to compare with" in changes
    assert "<table" not in changes and "new_telemetry" not in changes
    config = str(database.parent.parent / "runcost.toml")
    result = CliRunner().invoke(main, ["diff", "--config", config])
    assert result.exit_code == 0, result.output
    assert " ".join(result.output.split()) == (
        f"{run_id} is the first snapshot: there is no earlier one to compare it with. "
        "The next run's changes are listed against it."
    )


def test_what_changed_is_in_the_reports_basis(two_nights: Path, tmp_path: Path) -> None:
    html = write_report(two_nights, tmp_path / "report.html").read_text(encoding="utf-8")
    changes = re.search(r"<section id='changes'>.*?</section>", html, re.S).group(0)
    con = open_snapshot(two_nights)
    try:
        experiments = con.execute(
            "select experiment_id, effective_cost + unbilled_estimate from marts.experiment_costs "
            "where allocation_model = 'fully_loaded'"
        ).fetchall()
        previous = con.execute("select max(previous_run_id) from marts.cost_changes").fetchone()[0]
    finally:
        con.close()
    rows = re.findall(
        r"<tr><td class=''>experiment</td><td class=''>([^<]*)</td>(.*?)</tr>", changes
    )
    shown = {name: re.findall(r"<td class='num'>([^<]*)</td>", cells)[1] for name, cells in rows}
    # "now" is the experiment table's amount (effective cost) plus its unbilled estimate
    assert shown == {name: f"{amount:,.2f}" for name, amount in experiments if name in shown}
    assert set(shown) == {"exp-a", "exp-b"}
    folder = two_nights.parent / "snapshots" / previous
    assert previous_costs(folder) is not None
    config = str(two_nights.parent.parent / "runcost.toml")
    for basis in ("billed", "effective"):
        result = CliRunner().invoke(
            main,
            ["diff", "--config", config, "--basis", basis, "--format", "csv",
             "--allocation-model", "fully_loaded"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "exp-a" in result.output


def test_statuses_and_empty_values_say_why(con: duckdb.DuckDBPyConnection) -> None:
    sections = {section.anchor: section for section in SECTIONS}
    never = {
        row[0]: row
        for row in con.execute(
            "select attempt_id, status from marts.attempt_costs where started_at is null"
        ).fetchall()
    }
    assert set(never) == {"att-vis-03"}  # the cancelled attempt that never started
    attempts = {row[0]: row for row in section_rows(con, sections["attempts"])}
    assert attempts["att-vis-03"][8] == "—, never started"
    assert all(row[8] in {"final", "open", "provisional"} for name, row in attempts.items()
               if name not in never)  # fmt: skip
    estimates = section_rows(con, sections["estimates"])
    assert "open" not in {row[1] for row in estimates}
    goodput = {row[0]: row for row in section_rows(con, sections["goodput"])}
    assert goodput["att-vis-03"][2:4] == ("none: never ran", "n/a: never ran")
    assert goodput["att-vis-03"][5] == "n/a: no GPU-hours"
    accepted = section_rows(con, sections["accepted"])
    assert all(value is not None and value != "" for row in accepted for value in row)
    no_capacity = [row for row in accepted if row[0] == "capacity_type" and row[3] == 0]
    assert no_capacity and {row[5] for row in no_capacity} == {"no accepted result"}
    assert {row[1] for row in no_capacity} == {"(none: experiment-level cost)"}
