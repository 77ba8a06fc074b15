"""Three nights: estimates from telemetry, a partial bill, then the restated final bill."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from nights import CLOCKS, G5, INVOICE, P4D, TAX, ground_truth, write_night

from pipeline.run.nightly import RunResult, run_pipeline
from pipeline.warehouse.snapshots import open_database

D = Decimal


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in con.execute(sql).fetchall()]


def _capture(result: RunResult) -> dict[str, Any]:
    con = open_database(result.database)
    con.execute("set TimeZone = 'UTC'")
    try:
        return {
            "periods": _rows(
                con,
                "select provider, billing_account_id, billing_period, period_status, is_final, "
                "cost_lines, invoiced_lines, source_deliveries from normalized.billing_periods",
            ),
            "attempts": _rows(
                con,
                "select attempt_id, billed_cost, unbilled_estimate, cost_status, period_status, "
                "is_final from marts.attempt_costs where allocation_model = 'marginal' order by 1",
            ),
            "experiments": _rows(
                con,
                "select experiment_id, billed_cost, unbilled_estimate, cost_status, "
                "period_status, is_final from marts.experiment_costs "
                "where allocation_model = 'marginal' order by 1",
            ),
            "estimates": _rows(
                con,
                "select attempt_id, strftime(estimate_start, '%d %H:%M'), "
                "strftime(estimate_end, '%d %H:%M'), estimated_hours, price_source, "
                "estimated_cost from marts.cost_estimates order by 1",
            ),
            "errors": _rows(
                con,
                "select attempt_id, strftime(window_start, '%d %H:%M'), "
                "strftime(window_end, '%d %H:%M'), estimated_cost, billed_cost, estimate_error, "
                "replaced_since_previous from marts.estimate_errors order by 1, 2",
            ),
            "changes": _rows(
                con,
                "select coalesce(attempt_id, experiment_id), previous_total, total, change, "
                "previous_cost_status, cost_status, reasons from marts.cost_changes "
                "where allocation_model = 'marginal' order by change_level, 1",
            ),
            "loaded_changes": _rows(
                con,
                "select coalesce(attempt_id, experiment_id), previous_total, total, change, "
                "previous_cost_status, cost_status, reasons from marts.cost_changes "
                "where allocation_model = 'fully_loaded' order by change_level, 1",
            ),
            "invoices": _rows(
                con,
                "select invoice_id, period_status, export_total, marginal_total, "
                "fully_loaded_total, invoice_amount from marts.invoice_totals",
            ),
            "reconciliation": _rows(
                con,
                "select distinct period_status from marts.reconciliation",
            ),
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Any]]:
    root = tmp_path_factory.mktemp("nights")
    played: dict[int, Any] = {}
    for night in (1, 2, 3):
        result = run_pipeline(write_night(root, night), now=CLOCKS[night])
        manifest = json.loads(result.manifest.read_text(encoding="utf-8"))
        played[night] = {"result": result, "manifest": manifest, **_capture(result)}
    played[0] = root
    yield played


def test_night_1_estimates_from_telemetry_alone(nights: dict[int, Any]) -> None:
    night = nights[1]
    assert night["result"].status == "published"
    assert night["periods"] == []  # no bill yet: no period has a status
    # a2's telemetry ends at 06:00 on the 31st, after the clock (00:00): estimated up to now only
    assert night["estimates"] == [
        ("a1", "30 00:00", "30 12:00", 12.0, "config", D("12.00")),
        ("a2", "30 12:00", "31 00:00", 12.0, "config", D("12.00")),
        ("b1", "30 06:00", "30 10:00", 4.0, "config", D("128.00")),
    ]
    assert night["attempts"] == [
        ("a1", 0, D("12.00"), "estimated", None, False),
        ("a2", 0, D("12.00"), "estimated", None, False),
        ("b1", 0, D("128.00"), "estimated", None, False),
    ]
    assert night["experiments"] == [
        ("exp-a", 0, D("24.00"), "estimated", None, False),
        ("exp-b", 0, D("128.00"), "estimated", None, False),
    ]
    assert night["errors"] == []
    # the first publish: everything is new
    assert night["changes"] == [
        ("a1", None, D("12.00"), D("12.00"), None, "estimated", "new_telemetry"),
        ("a2", None, D("12.00"), D("12.00"), None, "estimated", "new_telemetry"),
        ("b1", None, D("128.00"), D("128.00"), None, "estimated", "new_telemetry"),
        ("exp-a", None, D("24.00"), D("24.00"), None, "estimated", "new_telemetry"),
        ("exp-b", None, D("128.00"), D("128.00"), None, "estimated", "new_telemetry"),
    ]
    assert night["manifest"]["estimates"]["estimated_cost"] == "152.0000000000"
    assert night["manifest"]["previous_snapshot"] is None


def test_night_1_warns_that_telemetry_runs_ahead_of_the_clock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="runcost"):
        run_pipeline(write_night(tmp_path, 1), now=CLOCKS[1])
    assert (
        "telemetry runs ahead of the clock: 1 resource interval(s) end after now "
        "(2026-10-31T00:00:00+00:00), the latest at 2026-10-31T06:00:00+00:00; estimates stop "
        "at now" in caplog.text
    )


def test_night_2_a_partial_bill_replaces_the_estimates_it_covers(nights: dict[int, Any]) -> None:
    night = nights[2]
    assert night["periods"] == [
        ("aws", "111111111111", "2026-10", "provisional", False, 22, 0, ["exec-2"])
    ]
    assert night["reconciliation"] == [("provisional",)]
    # the bill reaches 18:00 on the 30th: a2 is estimated from there to its end
    assert night["estimates"] == [("a2", "30 18:00", "31 06:00", 12.0, "config", D("12.00"))]
    assert night["attempts"] == [
        ("a1", 12 * G5, 0, "billed", "provisional", False),
        ("a2", 6 * G5, D("12.00"), "estimated", "provisional", False),
        ("b1", 4 * P4D, 0, "billed", "provisional", False),
    ]
    assert night["experiments"] == [
        ("exp-a", 18 * G5, D("12.00"), "estimated", "provisional", False),
        ("exp-b", 4 * P4D, 0, "billed", "provisional", False),
    ]
    assert night["errors"] == [
        ("a1", "30 00:00", "30 12:00", D("12.00"), 12 * G5, D("-0.072"), True),
        ("a2", "30 12:00", "30 18:00", D("6.00"), 6 * G5, D("-0.036"), True),
        ("b1", "30 06:00", "30 10:00", D("128.00"), 4 * P4D, D("-3.0904"), True),
    ]
    assert night["changes"] == [
        ("a1", D("12.00"), D("12.072"), D("0.072"), "estimated", "billed", "estimate_replaced"),
        ("a2", D("12.00"), D("18.036"), D("6.036"), "estimated", "estimated", "estimate_replaced"),
        ("b1", D("128"), D("131.0904"), D("3.0904"), "estimated", "billed", "estimate_replaced"),
        ("exp-a", D("24"), D("30.108"), D("6.108"), "estimated", "estimated", "estimate_replaced"),
        ("exp-b", D("128"), D("131.0904"), D("3.0904"), "estimated", "billed", "estimate_replaced"),
    ]
    assert night["loaded_changes"] == night["changes"]  # no pools: both models agree
    assert night["invoices"] == []  # nothing is invoiced yet
    assert night["manifest"]["previous_snapshot"] == nights[1]["result"].run_id


def test_night_3_the_restated_final_bill_equals_ground_truth(nights: dict[int, Any]) -> None:
    night = nights[3]
    truth = ground_truth()
    assert night["periods"] == [
        ("aws", "111111111111", "2026-10", "final", True, 35, 35, ["exec-3"])
    ]
    assert night["estimates"] == []
    assert night["attempts"] == [
        (attempt, truth[attempt], 0, "billed", "final", True) for attempt in ("a1", "a2", "b1")
    ]
    assert night["experiments"] == [
        ("exp-a", truth["a1"] + truth["a2"], 0, "billed", "final", True),
        ("exp-b", truth["b1"], 0, "billed", "final", True),
    ]
    # b1's last hour was restated (half an hour): its error grows to what the final bill says
    assert night["errors"] == [
        ("a1", "30 00:00", "30 12:00", D("12.00"), 12 * G5, D("-0.072"), False),
        ("a2", "30 12:00", "30 18:00", D("6.00"), 6 * G5, D("-0.036"), False),
        ("a2", "30 18:00", "31 06:00", D("12.00"), 12 * G5, D("-0.072"), True),
        ("b1", "30 06:00", "30 10:00", D("128.00"), truth["b1"], D("13.2959"), False),
    ]
    assert night["changes"] == [
        ("a2", D("18.036"), D("18.108"), D("0.072"), "estimated", "billed", "estimate_replaced"),
        ("b1", D("131.0904"), truth["b1"], D("-16.3863"), "billed", "billed", "restated_delivery"),
        ("exp-a", D("30.108"), D("30.18"), D("0.072"), "estimated", "billed", "estimate_replaced"),
        (
            "exp-b",
            D("131.0904"),
            truth["b1"],
            D("-16.3863"),
            "billed",
            "billed",
            "restated_delivery",
        ),
    ]
    total = sum(truth.values()) + TAX
    assert night["invoices"] == [(INVOICE, "final", total, total, total, total)]
    assert night["manifest"]["checks"]["invoice_tie_out"] == "passed"
    assert night["manifest"]["periods"] == [
        {
            "provider": "aws",
            "billing_account_id": "111111111111",
            "billing_period": "2026-10",
            "period_status": "final",
            "deliveries": "exec-3",
        }
    ]


def test_the_estimate_error_over_the_three_nights(nights: dict[int, Any]) -> None:
    # 34 estimated instance-hours against the final bill: 158.00 estimated, 144.8841 billed
    summary = nights[3]["manifest"]["estimates"]
    assert summary["replaced_windows"] == 4
    assert Decimal(summary["estimate_error"]) == D("-0.072") - D("0.036") - D("0.072") + D(
        "13.2959"
    )
    assert Decimal(summary["estimated_cost"]) == 0


def test_the_manifest_records_inputs_and_hashes(nights: dict[int, Any]) -> None:
    manifest = nights[3]["manifest"]
    (delivery,) = manifest["inputs"]["deliveries"]
    assert delivery["delivery_id"] == "exec-3"
    assert delivery["delivered_at"] == "2026-11-05T03:00:00+00:00"
    assert [len(item["sha256"]) for item in delivery["files"]] == [64]
    assert manifest["inputs"]["invoice_file"]["path"].endswith("invoices.csv")
    assert manifest["clock"] == "2026-11-05T06:00:00+00:00"
    assert manifest["config_fingerprint"] == nights[2]["manifest"]["config_fingerprint"]
    assert manifest["config_hash"] != nights[2]["manifest"]["config_hash"]  # [invoices] added
    assert len(manifest["code_hash"]) == 16
    assert manifest["outputs"]["marts.cost_changes"] == 8


def test_a_rerun_on_the_same_inputs_publishes_nothing(nights: dict[int, Any]) -> None:
    from pipeline.config.loader import load_config

    root: Path = nights[0]
    again = run_pipeline(load_config(root / "runcost.toml"), now=CLOCKS[3])
    assert again.status == "unchanged"
    assert _capture(again)["changes"] == nights[3]["changes"]


def test_runcost_diff_prints_the_published_cost_changes(nights: dict[int, Any]) -> None:
    import csv
    import io

    from click.testing import CliRunner

    from pipeline.cli.app import main

    config = str(nights[0] / "runcost.toml")
    result = CliRunner().invoke(
        main, ["diff", "--config", config, "--format", "csv", "--allocation-model", "marginal"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert [
        (row["attempt_id"] or row["experiment_id"], Decimal(row["change"]), row["reasons"])
        for row in rows
    ] == [
        (name, change, reasons) for name, _p, _t, change, _ps, _s, reasons in nights[3]["changes"]
    ]


def test_runcost_diff_between_any_two_kept_runs(nights: dict[int, Any]) -> None:
    import json as json_module

    from click.testing import CliRunner

    from pipeline.cli.app import main

    first, last = nights[1]["result"].run_id, nights[3]["result"].run_id
    config = str(nights[0] / "runcost.toml")
    result = CliRunner().invoke(
        main,
        [
            "diff",
            first,
            last,
            "--config",
            config,
            "--format",
            "json",
            "--allocation-model",
            "marginal",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json_module.loads(result.output)
    truth = ground_truth()
    # from the first night's estimates straight to the final bill
    assert [
        (row["attempt_id"] or row["experiment_id"], Decimal(str(row["change"])), row["reasons"])
        for row in rows
    ] == [
        ("a1", truth["a1"] - D("12.00"), "estimate_replaced"),
        ("a2", truth["a2"] - D("12.00"), "estimate_replaced"),
        ("b1", truth["b1"] - D("128.00"), "estimate_replaced"),
        ("exp-a", truth["a1"] + truth["a2"] - D("24.00"), "estimate_replaced"),
        ("exp-b", truth["b1"] - D("128.00"), "estimate_replaced"),
    ]


def test_runcost_sql_as_of_a_date(nights: dict[int, Any]) -> None:
    from datetime import UTC, datetime, timedelta

    from click.testing import CliRunner

    from pipeline.cli.app import main

    config = str(nights[0] / "runcost.toml")
    today = datetime.now(UTC).date()
    query = "select run_id from main.runcost_snapshot"
    runner = CliRunner()
    result = runner.invoke(
        main, ["sql", query, "--config", config, "--as-of", today.isoformat(), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["run_id", nights[3]["result"].run_id]
    assert "INFO: as of " in result.stderr
    before = (today - timedelta(days=1)).isoformat()
    result = runner.invoke(main, ["sql", query, "--config", config, "--as-of", before])
    assert result.exit_code == 1
    assert f"no kept snapshot was current at the end of {before} (UTC): the oldest kept " in (
        " ".join(result.output.split())
    )
