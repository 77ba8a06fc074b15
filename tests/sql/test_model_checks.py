"""checks.*: zero rows on a clean build, and rows naming the problem once a table is corrupted."""

from __future__ import annotations

from decimal import Decimal

import pytest
from builders import (
    at,
    cur_line,
    line_id,
    lines_as_table,
    rebuild,
    records,
    run_check,
    sql_models,
)
from exact_checks import exact_problems

from pipeline.ingest.provider import FILE_ROWS

D = Decimal
CHECKS = sorted(item.name for item in sql_models() if item.layer == "checks")

ATTEMPTS = [
    {"attempt_id": "a1", "experiment_id": "e1", "started_at": at(10), "ended_at": at(11)},
    {"attempt_id": "a2", "experiment_id": "e1", "started_at": at(10), "ended_at": at(11)},
    {"attempt_id": "a3", "experiment_id": "e1", "status": "cancelled"},
]
LINES = [
    # line 0: tagged to a1
    cur_line(line_item_unblended_cost=10.0, resource_tags={"user_attempt_id": "a1"}),
    # line 1: a2 held i-b for the whole hour
    cur_line(line_item_unblended_cost=6.0, line_item_resource_id="i-b"),
    # line 2: shared by the pool over a1 and a2
    cur_line(line_item_unblended_cost=1.0, line_item_product_code="AmazonEKS"),
    # line 3: unallocated
    cur_line(line_item_unblended_cost=2.0, line_item_resource_id="i-idle"),
]
LINE = [line_id(row) for row in range(len(LINES))]  # the lines' ids: rows 0-3 of one file
CONFIG = {"pools": [{"name": "eks", "selector": "service_name = 'AmazonEKS'", "driver": "even"}]}


@pytest.fixture(scope="module")
def clean(build_once):
    """One clean build for the module: (connection, report)."""
    return build_once(LINES, ATTEMPTS, [{"attempt_id": "a2", "resource_id": "i-b"}], config=CONFIG)


def corrupt_slices(con, statement: str, params: list | None = None) -> None:
    """Run ``statement`` on the stored slices with each slice spelled out per model.

    allocation.cost_slices keeps a slice both models share once; the corruption names one model,
    so the slices are first stored one row per model (what allocation.model_slices reads).
    """
    con.execute("create or replace temp table expanded as select * from allocation.model_slices")
    con.execute("drop view if exists allocation.cost_slices")  # a view of the stored slices
    con.execute(
        "create or replace table allocation.cost_slices as select allocation_model as "
        "allocation_models, * exclude (allocation_model) from expanded"
    )
    con.execute(statement.replace("allocation_model ", "allocation_models "), params or [])
    # the checks and marts that sum the slices read their sums, computed once from them
    rebuild(con, "allocation.profile_slice_sums")
    rebuild(con, "allocation.period_slice_sums")


@pytest.fixture
def built(clean):
    """The clean build; whatever a test corrupts is rolled back after it."""
    con, _ = clean
    con.begin()
    yield con
    con.rollback()


def test_the_invariant_checks_exist():
    assert {
        "conservation",
        "every_attempt_costed",
        "no_double_counting",
        "one_currency_per_attempt",
        "shares_in_range",
        "slices_sum_to_line",
    } <= set(CHECKS)


@pytest.mark.parametrize("check", CHECKS)
def test_check_passes_on_a_clean_build(built, check):
    kinds = records(
        built,
        "select allocation_kind, count(*) as n from allocation.cost_allocations "
        "where allocation_model = 'fully_loaded' group by all order by all",
    )
    assert kinds == [
        {"allocation_kind": "attributed", "n": 2},
        {"allocation_kind": "shared", "n": 2},
        {"allocation_kind": "unallocated", "n": 1},
    ]
    assert run_check(built, check) == []


def test_build_report_lists_every_check(clean):
    _, report = clean

    assert sorted(report.checks_run) == CHECKS
    assert report.check_failures == []


def test_conservation_fails_when_a_slice_is_lost(built):
    corrupt_slices(
        built,
        "delete from allocation.cost_slices "
        "where allocation_model = 'marginal' and allocation_kind = 'unallocated'",
    )
    rebuild(built, "marts.reconciliation")

    rows = run_check(built, "conservation")

    assert sorted((row["cost_basis"], row["difference"]) for row in rows) == [
        ("billed_cost", D(3)),
        ("effective_cost", D(3)),
        ("net_cost", D(3)),
    ]
    assert {row["allocation_model"] for row in rows} == {"marginal"}


def test_conservation_fails_when_a_slice_is_inflated(built):
    corrupt_slices(
        built,
        "update allocation.cost_slices set list_cost = list_cost + 0.0000000001 "
        f"where allocation_model = 'fully_loaded' and line_id = {LINE[0]}",
    )
    rebuild(built, "marts.reconciliation")

    rows = run_check(built, "conservation")

    assert [(row["allocation_model"], row["cost_basis"], row["difference"]) for row in rows] == [
        ("fully_loaded", "list_cost", D("-0.0000000001"))
    ]


def test_every_attempt_costed_fails_on_a_missing_row(built):
    built.execute(
        "delete from marts.attempt_costs where attempt_id = 'a3' and allocation_model = 'marginal'"
    )

    rows = run_check(built, "every_attempt_costed")

    assert rows == [{"attempt_id": "a3", "allocation_model": "marginal", "occurrences": 0}]


def test_every_attempt_costed_fails_on_a_duplicate_row(built):
    built.execute(
        "insert into marts.attempt_costs select * from marts.attempt_costs "
        "where attempt_id = 'a1' and allocation_model = 'fully_loaded'"
    )

    rows = run_check(built, "every_attempt_costed")

    assert rows == [{"attempt_id": "a1", "allocation_model": "fully_loaded", "occurrences": 2}]


def test_no_double_counting_fails_on_a_duplicate_line(built):
    lines_as_table(built)
    built.execute(
        "insert into normalized.cost_lines select * from normalized.cost_lines "
        f"where line_id = {LINE[1]}"
    )

    rows = run_check(built, "no_double_counting")

    # four lines, rows 0-3, and five rows: the file holds more lines than ids
    assert [(row["problem"], row["line_key"], row["occurrences"]) for row in rows] == [
        ("duplicate line_id", "delivery-1:part-0.parquet", 5)
    ]
    assert exact_problems(built)["unique_lines"] == [
        ("line_id", str(LINE[1])),
        ("source row", "delivery-1:part-0.parquet:1"),
    ]


def test_no_double_counting_fails_on_a_file_read_twice(built):
    # the same file registered again under the next file index: new ids, the same source rows
    lines_as_table(built)
    built.execute(
        f"insert into normalized.cost_lines select * replace (line_id + {FILE_ROWS} as line_id) "
        "from normalized.cost_lines"
    )

    rows = run_check(built, "no_double_counting")

    assert [(row["problem"], row["line_key"]) for row in rows] == [
        ("file read twice", "delivery-1:part-0.parquet")
    ]


def test_no_double_counting_fails_on_files_sharing_ids(built):
    lines_as_table(built)
    built.execute(
        "insert into normalized.cost_lines select * replace ('part-1.parquet' as source_file) "
        f"from normalized.cost_lines where line_id = {LINE[3]}"
    )

    rows = run_check(built, "no_double_counting")

    assert [(row["problem"], row["line_key"]) for row in rows] == [
        ("line ids shared with another file", "delivery-1:part-1.parquet")
    ]


def test_no_double_counting_fails_on_a_split_cost_row(built):
    lines_as_table(built)
    built.execute(
        f"update normalized.cost_lines set operation = 'EKSPod-EC2' where line_id = {LINE[2]}"
    )

    rows = run_check(built, "no_double_counting")

    assert rows == [
        {
            "problem": "split-cost row counted in the bill",
            "line_key": str(LINE[2]),
            "occurrences": 1,
        }
    ]


def test_one_currency_per_attempt_fails_on_mixed_currencies(build):
    """Only the attempt drawing two currencies fails: a2 is billed in EUR alone, a3 in USD."""
    lines = [
        cur_line(line_item_unblended_cost=1.0, resource_tags={"user_attempt_id": "a1"}),
        cur_line(
            line_item_unblended_cost=2.0,
            line_item_currency_code="EUR",
            resource_tags={"user_attempt_id": "a1"},
        ),
        cur_line(
            line_item_unblended_cost=3.0,
            line_item_currency_code="EUR",
            resource_tags={"user_attempt_id": "a2"},
        ),
        cur_line(line_item_unblended_cost=4.0, resource_tags={"user_attempt_id": "a3"}),
    ]

    con, report = build(lines, ATTEMPTS, [])

    expected = [
        {"allocation_model": model, "attempt_id": "a1", "currencies": 2}
        for model in ("fully_loaded", "marginal")
    ]
    rows = run_check(con, "one_currency_per_attempt")
    assert sorted(rows, key=lambda row: row["allocation_model"]) == expected
    assert [failure[0] for failure in report.check_failures] == ["one_currency_per_attempt"]


def test_one_currency_per_attempt_fails_on_a_corrupted_slice(built):
    corrupt_slices(
        built,
        "update allocation.cost_slices set billing_currency = 'EUR' "
        f"where allocation_model = 'fully_loaded' and line_id = {LINE[0]}",
    )

    rows = run_check(built, "one_currency_per_attempt")

    # a1 has line 0 by tag and a share of the pooled line 2
    assert rows == [{"allocation_model": "fully_loaded", "attempt_id": "a1", "currencies": 2}]


@pytest.mark.parametrize(
    ("corruption", "position"),
    [
        pytest.param("update {t} set share = 1.5 where line_id = {0}", 0, id="share-over-1"),
        pytest.param(
            "update {t} set share = -0.25 where line_id = {2} and attempt_id = 'a1'",
            2,
            id="negative",
        ),
    ],
)
def test_shares_in_range_fails(built, corruption, position):
    corrupt_slices(
        built,
        corruption.format(*LINE, t="allocation.cost_slices")
        + " and allocation_model = 'fully_loaded'",
    )

    rows = run_check(built, "shares_in_range")

    assert [(row["allocation_model"], row["line_id"]) for row in rows] == [
        ("fully_loaded", LINE[position])
    ]
    assert exact_problems(built)["shares_per_line"] == [("fully_loaded", LINE[position])]


@pytest.mark.parametrize(
    ("corruption", "position"),
    [
        pytest.param(
            "update {t} set share = 0.5 where line_id = {1} and allocation_kind = 'attributed'",
            1,
            id="whole-line-shares-under-1",
        ),
        pytest.param(
            "insert into {t} select * from {t} "
            "where line_id = {1} and allocation_kind = 'attributed'",
            1,
            id="attributed-shares-over-1",
        ),
    ],
)
def test_share_sums_per_line_are_checked_exactly_in_the_suite(built, corruption, position):
    """A per-line share sum is not a build check (it needs a group-by on line_id)."""
    corrupt_slices(
        built,
        corruption.format(*LINE, t="allocation.cost_slices")
        + " and allocation_model = 'fully_loaded'",
    )

    assert run_check(built, "shares_in_range") == []
    assert exact_problems(built)["shares_per_line"] == [("fully_loaded", LINE[position])]


@pytest.mark.parametrize(
    ("corruption", "model", "position"),
    [
        pytest.param(
            "delete from {t} where line_id = {2} and attempt_id = 'a2'",
            "fully_loaded",
            2,
            id="shared-slice-lost",
        ),
        pytest.param("delete from {t} where line_id = {3}", "marginal", 3, id="line-missing"),
        pytest.param(
            "update {t} set net_cost = net_cost - 0.0000000001 where line_id = {1}",
            "marginal",
            1,
            id="net-off",
        ),
        pytest.param(
            "update {t} set effective_cost = 0, list_cost = 1 where line_id = {0}",
            "fully_loaded",
            0,
            id="bases-off",
        ),
    ],
)
def test_slices_sum_to_line_fails(built, corruption, model, position):
    corrupt_slices(
        built,
        corruption.format(*LINE, t="allocation.cost_slices") + " and allocation_model = ?",
        [model],
    )

    rows = run_check(built, "slices_sum_to_line")

    # the checksum names the ledger (one account and period here); the exact check, the line
    assert [(row["allocation_model"], row["billing_period"]) for row in rows] == [
        (model, "2026-10")
    ]
    assert exact_problems(built)["slices_sum_to_line"] == [(model, LINE[position])]


def test_slices_sum_to_line_sees_a_slice_moved_to_another_line(built):
    # the same cost on line 1 instead of line 0: every total and the reconciliation hold
    corrupt_slices(
        built,
        f"update allocation.cost_slices set line_id = {LINE[1]} "
        f"where line_id = {LINE[0]} and allocation_model = 'marginal'",
    )

    rows = run_check(built, "slices_sum_to_line")

    assert [row["allocation_model"] for row in rows] == ["marginal"]
    assert exact_problems(built)["slices_sum_to_line"] == [
        ("marginal", LINE[0]),
        ("marginal", LINE[1]),
    ]


def test_slices_sum_to_line_sees_a_slice_under_another_profile(built):
    # line 0's slice named by another profile: every ledger total holds, but the marts would
    # count its cost under another service and category
    corrupt_slices(
        built,
        "update allocation.cost_slices set profile_key = profile_key + 1 "
        f"where line_id = {LINE[0]} and allocation_model = 'fully_loaded'",
    )

    rows = run_check(built, "slices_sum_to_line")

    line_key = records(
        built, f"select profile_key from normalized.cost_line_facts where line_id = {LINE[0]}"
    )[0]["profile_key"]
    assert sorted((row["allocation_model"], row["profile_key"]) for row in rows) == sorted(
        [("fully_loaded", line_key), ("fully_loaded", line_key + 1)]
    )
    assert exact_problems(built)["slice_profiles"] == [("fully_loaded", LINE[0])]
    assert exact_problems(built)["slices_sum_to_line"] == []


def test_the_checksum_cannot_see_a_missing_zero_cost_line(built):
    """What the header of slices_sum_to_line says it cannot catch; the exact check can."""
    built.execute(
        "update normalized.cost_line_facts set billed_cost = 0, effective_cost = 0, "
        f"list_cost = 0, net_cost = 0 where line_id = {LINE[3]}"
    )
    rebuild(built, "normalized.profile_line_sums")
    corrupt_slices(built, f"delete from allocation.cost_slices where line_id = {LINE[3]}")

    assert run_check(built, "slices_sum_to_line") == []
    assert exact_problems(built)["slices_sum_to_line"] == [
        ("fully_loaded", LINE[3]),
        ("marginal", LINE[3]),
    ]


def test_line_profile_keys_unique_fails_when_two_profiles_share_a_key(built):
    profiles = records(built, "select count(*) as n from normalized.cost_line_profiles")[0]["n"]
    assert 0 < profiles < 4  # the four lines share profiles: one row per combination
    built.execute(
        "insert into normalized.cost_line_profiles select * replace ('other' as usage_type) "
        "from normalized.cost_line_profiles limit 1"
    )

    rows = run_check(built, "line_profile_keys_unique")

    assert [row["profiles"] for row in rows] == [2]
    # what the check guards against: the view would give the key's lines twice
    assert exact_problems(built)["unique_lines"]
