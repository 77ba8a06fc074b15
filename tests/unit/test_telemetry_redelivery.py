"""A re-delivered telemetry file updates the attempts it names and never drops the others."""

from __future__ import annotations

import csv
from pathlib import Path

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.scenario import write_scenario
from pipeline.warehouse.snapshots import open_database


def keep_rows(path: Path, attempt_ids: set[str], change: dict[str, str] | None = None) -> None:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    fields = list(rows[0]) if rows else []
    kept = [{**row, **(change or {})} for row in rows if row["attempt_id"] in attempt_ids]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)


def costs(database: Path) -> dict[tuple[str, str], tuple]:
    with open_database(database) as con:
        rows = con.execute(
            "select attempt_id, allocation_model, effective_cost, status from marts.attempt_costs"
        ).fetchall()
    return {(row[0], row[1]): row[2:] for row in rows}


def redeliver_one_attempt(world: Path) -> None:
    telemetry = world / "telemetry"
    keep_rows(telemetry / "attempts.csv", {"att-nlp-01"}, {"metric_value": "0.95"})
    keep_rows(telemetry / "attempt_resources.csv", {"att-nlp-01"})
    keep_rows(telemetry / "attempt_events.csv", {"att-nlp-01"})


def test_attempts_left_out_of_a_redelivery_stay(tmp_path: Path) -> None:
    config = load_config(write_scenario(tmp_path / "world"))
    before = costs(run_pipeline(config).database)
    redeliver_one_attempt(tmp_path / "world")
    after = run_pipeline(config).database
    assert costs(after) == before  # every attempt still there, every cost unchanged
    with open_database(after) as con:
        metric = con.execute(
            "select metric_value from telemetry.attempts where attempt_id = 'att-nlp-01'"
        ).fetchone()
    assert metric == (0.95,)  # the attempt the file names is updated


def test_keep_published_false_takes_the_delivery_as_the_whole_truth(tmp_path: Path) -> None:
    config_file = write_scenario(tmp_path / "world")
    run_pipeline(load_config(config_file))
    redeliver_one_attempt(tmp_path / "world")
    text = config_file.read_text(encoding="utf-8")
    config_file.write_text(
        text.replace("[telemetry]\n", "[telemetry]\nkeep_published = false\n"), encoding="utf-8"
    )
    attempts = {attempt for attempt, _ in costs(run_pipeline(load_config(config_file)).database)}
    assert attempts == {"att-nlp-01"}
