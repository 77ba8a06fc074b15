"""The report's idle GPU section on a measured snapshot: the demo world with its DCGM samples in
a real Prometheus (pipeline/scenario/dcgm.py: att-vis-01's 4 GPUs idle the first of its 3 hours,
att-vis-02's GPU 3 idle half an hour), idle cost per experiment as the mart sums it, and the
attempts' timelines drawn whole in Chromium at 900 px."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from chromium import Charts, Sections, chromium, needs_chromium
from prometheus_server import prometheus_server
from prometheus_world import CLOCK, METRIC, configure

from pipeline.config.loader import load_config
from pipeline.report import write_report
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    world = tmp_path_factory.mktemp("world")
    write_scenario(world)
    samples = world / "dcgm" / "samples.om"
    with prometheus_server(tmp_path_factory.mktemp("prometheus"), METRIC, samples) as url:
        yield run_pipeline(load_config(configure(world, url)), now=CLOCK).database


def test_idle_cost_per_experiment_is_the_marts_sum(database: Path, tmp_path: Path) -> None:
    html = write_report(database, tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index("<section id='gpu-idle'>") :]
    section = section[: section.index("</section>")]
    with open_database(database) as con:
        rows = con.execute(
            "select experiment_id, sum(idle_cost), sum(sampled_gpu_hours) / sum(held_gpu_hours) "
            "from marts.gpu_utilisation where allocation_model = 'fully_loaded' "
            "group by experiment_id order by sum(idle_cost) desc, experiment_id"
        ).fetchall()
        vis = con.execute(
            "select sum(idle_cost) from marts.gpu_utilisation "
            "where attempt_id like 'att-vis-%' and allocation_model = 'fully_loaded'"
        ).fetchone()
    # the experiments measured, most idle cost first; only exp-vision-sweep idled: att-vis-01
    # 2.0473666667 and att-vis-02 0.2554925 (tests/e2e/test_prometheus_nightly.py)
    assert rows[0][0] == "exp-vision-sweep" and rows[0][1] == vis[0] == Decimal("2.3028591667")
    assert all(row[1] == 0 for row in rows[1:])
    cells = section.split("<tr>")[2:]
    assert [cell.split("</td>")[0].split(">")[-1] for cell in cells] == [row[0] for row in rows]
    assert f"<td class='num'>{vis[0]:,.2f}</td>" in cells[0]
    assert f"<td class='num'>{rows[0][2]:.0%}</td>" in cells[0]
    # a timeline per attempt that idled, most idle cost first: att-vis-01's 4 GPUs idle then busy
    # (8 windows); att-vis-02's 4 GPUs busy around the exporter's gap, GPU 3 idle first (9)
    assert section.count("data-chart='gpu-timeline-") == 2
    first, second = section.split("data-chart='gpu-timeline-")[1:]
    assert (first.count("<rect class='mark'"), second.count("<rect class='mark'")) == (8, 9)
    assert "i-0b7e4d1c2a9f80011 · GPU-v1-0 · idle 2026-10-05 09:00 to 2026-10-05 10:00 UTC" in first
    assert (
        "i-0b7e4d1c2a9f80012 · GPU-v2-3 · idle 2026-10-05 09:00 to 2026-10-05 09:30 UTC" in second
    )


@needs_chromium
def test_the_section_draws_whole_at_900_px(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = write_report(database, tmp_path / "report.html")
    dom = chromium(page, tmp_path / "dom", "--window-size=900,2000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    charts, sections = Charts(), Sections()
    charts.feed(dom.stdout)
    sections.feed(dom.stdout)
    body = sections.body
    assert body["data-report-rendered"] == "ok"
    assert int(charts.charts["gpu-timeline-1"]["data-marks-drawn"]) == 8
    assert int(charts.charts["gpu-timeline-2"]["data-marks-drawn"]) == 9
    assert int(charts.charts["gpu-timeline-1"]["data-rendered-width"]) <= 900
    assert body["data-clipped-labels"] == "0"
    assert body["data-overlapping-labels"] == "0", body["data-overlapping-pairs"]
    assert body["data-wide-tables"] == ""
    assert int(body["data-page-width"]) <= int(body["data-window-width"]) == 900
    shown = " ".join(sections.text["gpu-idle"])
    assert "Idle GPU cost" in shown and "att-vis-01 (exp-vision-sweep)" in shown
    assert "coverage 100%" in shown
    screenshot = tmp_path / "gpu-idle-900.png"
    shot = chromium(page, tmp_path / "shot", "--window-size=900,9000", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    with capsys.disabled():
        print(f"\nreport screenshot at 900 px: {screenshot}")
