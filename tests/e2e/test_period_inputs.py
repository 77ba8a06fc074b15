"""Bad input around periods: invoice currency and amount, an older delivery, telemetry ahead."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from nights import CLOCKS, INVOICE, write_night

from pipeline.common.errors import CheckFailed, InputError
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import CURRENT_NAME, open_database


def test_an_invoice_in_another_currency_than_the_bill(tmp_path: Path) -> None:
    config = write_night(tmp_path, 3, invoice_currency="EUR")
    with pytest.raises(InputError) as error:
        run_pipeline(config, now=CLOCKS[3])
    assert str(error.value) == (
        f"{tmp_path / 'invoices.csv'}: row 2: invoice {INVOICE} is in EUR, but the bill charges "
        "it in USD; write the amount in USD as the invoice states it (runcost does not convert "
        "currencies)"
    )
    assert not (config.warehouse / CURRENT_NAME).exists()  # nothing published


def test_an_invoice_amount_that_does_not_tie_out_fails_the_run(tmp_path: Path) -> None:
    config = write_night(tmp_path, 3)
    (tmp_path / "invoices.csv").write_text(
        f"invoice_id,amount,currency\n{INVOICE},150.00,USD\n", encoding="utf-8"
    )
    with pytest.raises(CheckFailed) as error:
        run_pipeline(config, now=CLOCKS[3])
    text = str(error.value)
    assert "check invoice_tie_out failed: 1 row(s) break it" in text
    assert (
        f"aws | 111111111111 | 2026-10 | {INVOICE} | USD | 154.8841000000 | 154.8841000000 | "
        "154.8841000000 | 150.0000000000 | 4.8841000000"
    ) in text
    assert not (config.warehouse / CURRENT_NAME).exists()


def test_an_invoice_not_on_the_bill_yet_is_noted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_night(tmp_path, 3)
    (tmp_path / "invoices.csv").write_text(
        "invoice_id,amount,currency\nINV-2026-11-0001,99.00,USD\n", encoding="utf-8"
    )
    with caplog.at_level(logging.INFO, logger="runcost"):
        result = run_pipeline(config, now=CLOCKS[3])
    assert result.status == "published"
    assert (
        f"{tmp_path / 'invoices.csv'}: 1 invoice(s) match no bill line yet (INV-2026-11-0001); "
        "they are not compared" in caplog.text
    )


def test_an_older_delivery_is_never_applied_over_the_newer_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run_pipeline(write_night(tmp_path, 3), now=CLOCKS[3])
    # the partial delivery of night 2 shows up again (a stale copy of the export)
    config = write_night(tmp_path, 2)
    with caplog.at_level(logging.WARNING, logger="runcost"):
        result = run_pipeline(config, now=CLOCKS[3])
    assert (
        "delivery exec-2 (delivered 2026-11-02T03:00:00+00:00) is older than the current "
        "delivery exec-3 of 2026-10 (delivered 2026-11-05T03:00:00+00:00); ignored, the newer "
        "one stays current" in caplog.text
    )
    con = open_database(result.database)
    try:
        assert con.execute(
            "select period_status, source_deliveries, cost_lines from normalized.billing_periods"
        ).fetchall() == [("final", ["exec-3"], 35)]
    finally:
        con.close()


def test_estimates_stop_at_the_clock_when_telemetry_runs_ahead(tmp_path: Path) -> None:
    # on night 1 a2's telemetry says it ran until 06:00 on the 31st; the clock says 00:00
    result = run_pipeline(write_night(tmp_path, 1), now=CLOCKS[1])
    con = open_database(result.database)
    con.execute("set TimeZone = 'UTC'")
    try:
        assert con.execute(
            "select held_until, estimate_end, estimated_hours from marts.cost_estimates "
            "where attempt_id = 'a2'"
        ).fetchall() == [
            (CLOCKS[1].replace(hour=6), CLOCKS[1], 12.0),
        ]
    finally:
        con.close()


def test_a_snapshot_from_before_run_history_lists_nothing_as_moved(tmp_path: Path) -> None:
    import json

    from pipeline.warehouse.snapshots import SNAPSHOT_RECORD, current_snapshot

    config = write_night(tmp_path, 3)
    run_pipeline(config, now=CLOCKS[3])
    # make the current snapshot look like one an older runcost published
    record_path = Path(current_snapshot(config.warehouse)["snapshot"]) / SNAPSHOT_RECORD
    record = json.loads(record_path.read_text(encoding="utf-8"))
    for name in ("config.periods", "normalized.billing_periods", "marts.cost_estimates"):
        del record["tables"][name]
    for name in ("marts.attempt_costs", "marts.experiment_costs"):
        entry = record["tables"][name]
        entry["columns"] = [
            column
            for column in entry["columns"]
            if column[0] not in ("unbilled_estimate", "cost_status")
        ]
    record_path.write_text(json.dumps(record), encoding="utf-8")

    result = run_pipeline(config, now=CLOCKS[3])
    assert result.status == "published"
    con = open_database(result.database)
    try:
        assert con.execute("select count(*) from marts.cost_changes").fetchone() == (0,)
    finally:
        con.close()
