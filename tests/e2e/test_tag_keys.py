"""One configured tag key places cost on every provider, each under its own spelling of the key.

`attempt_tag_keys = ["attempt-id"]`: an AWS CUR line is searched under user_attempt_id, a Google
Cloud VM under its label attempt-id (a GKE pod under k8s-label/attempt-id), a FOCUS row under
its Tags key attempt-id. Lines carrying another provider's spelling are not placed by tag.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from mixed_world import write_world

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import open_database

D = Decimal
# marginal billed cost per attempt placed by tag, per provider's files (computed by hand)
BY_TAG = {
    "aws": {"att-aws": D("10.5")},
    "gcp": {"att-gcp": D("4.2"), "att-gke": D("3.3")},
    "focus": {"att-focus": D("7.0"), "att-aws": D("6.0")},
}
# the experiment tag alone: the AWS volume; experiment-tagged lines with an attempt tag go there
EXPERIMENT_ONLY = {"aws": D("0.25"), "gcp": D(0), "focus": D(0)}
# lines tagged with another provider's spelling of the key, never placed by tag
WRONG_SPELLING = {"aws": D("1.75"), "gcp": D("0.8"), "focus": D("1.0")}


def _run(folder: Path, providers: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    result = run_pipeline(load_config(write_world(folder, providers)))
    return open_database(result.database)


@pytest.fixture(scope="module", params=[("aws",), ("gcp",), ("focus",), ("aws", "gcp", "focus")])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[tuple[str, ...], duckdb.DuckDBPyConnection]]:
    providers = request.param
    con = _run(tmp_path_factory.mktemp("-".join(providers)), providers)
    yield providers, con
    con.close()


def test_each_provider_places_its_tagged_lines_on_their_attempts(world) -> None:
    providers, con = world
    expected: dict[str, Decimal] = {}
    for provider in providers:
        for attempt_id, cost in BY_TAG[provider].items():
            expected[attempt_id] = expected.get(attempt_id, D(0)) + cost
    got = dict(
        con.execute(
            "select attempt_id, sum(billed_cost) from allocation.cost_allocations "
            "where allocation_model = 'marginal' and attribution_method = 'tag' group by 1"
        ).fetchall()
    )
    assert got == expected


def test_the_experiment_tag_and_other_spellings(world) -> None:
    providers, con = world
    experiment = con.execute(
        "select coalesce(sum(billed_cost), 0) from allocation.cost_allocations "
        "where allocation_model = 'marginal' and attribution_method = 'experiment_tag'"
    ).fetchone()[0]
    assert experiment == sum((EXPERIMENT_ONLY[name] for name in providers), D(0))
    # a line tagged with another provider's spelling carries no attempt tag at all
    wrong = con.execute(
        "select coalesce(sum(billed_cost), 0) from normalized.cost_lines "
        "where attempt_tag is null and (tags['attempt-id'] is not null "
        "or tags['user_attempt_id'] is not null)"
    ).fetchone()[0]
    assert wrong == sum((WRONG_SPELLING[name] for name in providers), D(0))


def test_tag_coverage_names_the_keys_looked_up_per_source(world) -> None:
    providers, con = world
    rows = con.execute(
        "select distinct provider, source_format, attempt_tag_keys, experiment_tag_keys "
        "from marts.tag_coverage order by all"
    ).fetchall()
    expected = {
        "aws": [("aws", "aws_cur", ["user_attempt_id"], ["user_experiment_id"])],
        "gcp": [("gcp", "gcp_billing_export", ["attempt-id"], ["experiment-id"])],
        "focus": [
            ("aws", "focus", ["attempt-id"], ["experiment-id"]),
            ("microsoft", "focus", ["attempt-id"], ["experiment-id"]),
        ],
    }
    assert rows == sorted(row for name in providers for row in expected[name])
    gcp = con.execute(
        "select sum(attempt_tagged_cost), sum(total_cost) from marts.tag_coverage "
        "where source_format = 'gcp_billing_export'"
    ).fetchone()
    if "gcp" in providers:
        assert gcp == (D("7.5"), D("9.02"))  # 4.2 + 3.3 + 0.8 + 0.12 + 0.27 + 0.27 + 0.06
