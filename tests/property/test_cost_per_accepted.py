"""Cost per accepted result, property-tested: total cost / accepted count, or NULL + reason."""

from __future__ import annotations

import tempfile
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from builders import at, cur_line, records
from economics_builders import build_economics
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

# one experiment: (team, [(status, metric, cost in cents), ...]); the bar is acc >= 0.5
ATTEMPT = st.tuples(
    st.sampled_from(["succeeded", "failed", "interrupted"]),
    st.one_of(st.none(), st.sampled_from([0.2, 0.5, 0.9])),
    st.integers(min_value=-500, max_value=10**7),
)
EXPERIMENT = st.tuples(st.sampled_from(["a", "b"]), st.lists(ATTEMPT, min_size=1, max_size=3))
PORTFOLIO = st.lists(EXPERIMENT, min_size=1, max_size=5)


def expected(portfolio) -> dict[str, tuple[Decimal, int]]:
    """Per team and for all: (total cost, accepted experiments), computed directly."""
    totals: dict[str, list] = {}
    for team, attempts in portfolio:
        cost = sum((Decimal(cents) / 100 for _, _, cents in attempts), Decimal(0))
        accepted = any(s == "succeeded" and m is not None and m >= 0.5 for s, m, _ in attempts)
        for key in ("all", team):
            entry = totals.setdefault(key, [Decimal(0), 0])
            entry[0] += cost
            entry[1] += int(accepted)
    return {key: (value[0], value[1]) for key, value in totals.items()}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example([("a", [("failed", None, 300)]), ("b", [("succeeded", 0.2, 1)])])  # none accepted
@example([("a", [("succeeded", 0.9, 100), ("failed", None, 1)]), ("a", [("succeeded", 0.5, 1)])])
@given(PORTFOLIO)
def test_cost_per_accepted_is_total_over_accepted(portfolio) -> None:
    experiments, attempts, lines = [], [], []
    for index, (team, runs) in enumerate(portfolio):
        experiment_id = f"e{index}"
        experiments.append(
            {
                "experiment_id": experiment_id,
                "team": team,
                "quality_metric": "acc",
                "quality_threshold": 0.5,
                "higher_is_better": True,
            }
        )
        for number, (status, metric, cents) in enumerate(runs):
            attempt_id = f"{experiment_id}-{number}"
            attempts.append(
                {
                    "attempt_id": attempt_id,
                    "experiment_id": experiment_id,
                    "status": status,
                    "metric_name": "acc",
                    "metric_value": metric,
                    "started_at": at(10 + number),
                    "ended_at": at(11 + number),
                }
            )
            lines.append(
                cur_line(
                    line_item_unblended_cost=cents / 100,
                    resource_tags={"user_attempt_id": attempt_id},
                )
            )
    with tempfile.TemporaryDirectory() as folder:
        con = build_economics(Path(folder), lines, attempts, [], experiments)
        rows = records(
            con,
            "select dimension_value, total_cost, accepted_results, cost_per_accepted_result, "
            "no_result_reason from marts.cost_per_accepted_result "
            "where allocation_model = 'marginal' and dimension in ('all', 'team')",
        )
        con.close()
    want = expected(portfolio)
    assert {row["dimension_value"] for row in rows} == set(want)
    for row in rows:
        total, accepted = want[row["dimension_value"]]
        assert row["total_cost"] == total
        assert row["accepted_results"] == accepted
        if accepted:
            quotient = (total / accepted).quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)
            assert row["cost_per_accepted_result"] == quotient
            assert row["no_result_reason"] is None
        else:
            assert row["cost_per_accepted_result"] is None
            assert row["no_result_reason"] == "no_accepted_result"
