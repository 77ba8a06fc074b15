"""The oracle's expectation as the CSVs in expected/: attempts, experiments, bill, splits."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

from pipeline.scenario.oracle import BASES, MODELS, ZERO, Expectation
from pipeline.scenario.telemetry_writer import FAILED_STATUSES, Attempt, Experiment


def write_expected(
    folder: Path,
    expectation: Expectation,
    attempts: list[Attempt],
    experiments: list[Experiment],
) -> None:
    """Write attempt_costs.csv, experiment_costs.csv, bill_totals.csv, split_costs.csv and
    pool_costs.csv (what each pool spread over attempts), money to 10 places."""
    experiment_of = {attempt.attempt_id: attempt.experiment_id for attempt in attempts}
    attempt_rows: list[dict[str, object]] = [
        {"attempt_id": key[0], "experiment_id": experiment_of[key[0]], "allocation_model": key[1]}
        | costs
        for key, costs in sorted(expectation.attempt_costs.items())
    ]
    experiment_ids = sorted(
        {attempt.experiment_id for attempt in attempts}
        | {item.experiment_id for item in experiments}
        | {experiment_id for experiment_id, _ in expectation.experiment_only}
    )
    experiment_rows = []
    for experiment_id in experiment_ids:
        members = [attempt for attempt in attempts if attempt.experiment_id == experiment_id]
        failed = {attempt.attempt_id for attempt in members if attempt.status in FAILED_STATUSES}
        for model in sorted(MODELS):
            only = expectation.experiment_only.get((experiment_id, model), {})
            costs = [expectation.attempt_costs[attempt.attempt_id, model] for attempt in members]
            row: dict[str, object] = {
                "experiment_id": experiment_id,
                "allocation_model": model,
                "attempts": len(members),
                "failed_attempts": len(failed),
            }
            for basis in BASES:
                row[basis] = sum((cost[basis] for cost in costs), ZERO) + only.get(basis, ZERO)
            row["failed_attempt_cost"] = sum(
                (expectation.attempt_costs[a, model]["effective_cost"] for a in sorted(failed)),
                ZERO,
            )
            row["experiment_only_cost"] = only.get("effective_cost", ZERO)
            experiment_rows.append(row)
    bill_rows = [
        {"billing_period": period, **totals}
        for period, totals in sorted(expectation.bill_totals.items())
    ]
    split_rows = [
        {"attempt_id": key[0], "experiment_id": key[1], "attribution_method": key[2]} | costs
        for key, costs in sorted(expectation.split_slices.items())
    ]
    pool_rows = [
        {"pool_name": name, **spread} for name, spread in sorted(expectation.pool_spread.items())
    ]
    folder.mkdir(parents=True, exist_ok=True)
    _write_csv(folder / "attempt_costs.csv", attempt_rows)
    if split_rows:
        _write_csv(folder / "split_costs.csv", split_rows)
    if pool_rows:
        _write_csv(folder / "pool_costs.csv", pool_rows)
    _write_csv(folder / "experiment_costs.csv", experiment_rows)
    _write_csv(folder / "bill_totals.csv", bill_rows)


def _write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(list(rows[0]))
        for row in rows:
            writer.writerow(
                [
                    f"{value + 0:.10f}" if isinstance(value, Decimal) else value  # + 0: no -0
                    for value in row.values()
                ]
            )
