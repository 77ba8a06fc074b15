"""A restated final billing period that lost a whole account is refused, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipeline.common.errors import InputError
from pipeline.run.restatement import check_restated_accounts
from pipeline.warehouse.snapshots import SNAPSHOT_RECORD

PERIODS = (
    "select 'aws' as provider, '111111111111' as billing_account_id, billing_period, is_final "
    "from (values ('2026-09', true), ('2026-10', false)) as periods(billing_period, is_final)"
)
PROFILES = (
    "select * from (values (1, 'aws', '111111111111', '222222222222'), "
    "(2, 'aws', '111111111111', '333333333333')) "
    "as profiles(profile_key, provider, billing_account_id, sub_account_id)"
)


def facts(rows: list[tuple[str, int]]) -> str:
    values = ", ".join(
        f"({number}, '{period}', {key})" for number, (period, key) in enumerate(rows)
    )
    return f"select * from (values {values}) as facts(line_id, billing_period, profile_key)"


def published(folder: Path, lines: list[tuple[str, int]]) -> Path:
    """A published snapshot folder holding the three tables the check reads."""
    con = duckdb.connect()
    tables = {}
    for name, select, partition in (
        ("normalized.billing_periods", PERIODS, "billing_period"),
        ("normalized.cost_line_facts", facts(lines), "billing_period"),
        ("normalized.cost_line_profiles", PROFILES, None),
    ):
        path = name.replace(".", "/")
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        if partition:
            con.execute(
                f"copy ({select}) to '{folder / path}' (format parquet, partition_by ({partition}))"
            )
        else:
            path += ".parquet"
            con.execute(f"copy ({select}) to '{folder / path}' (format parquet)")
        tables[name] = {"rows": 1, "path": path, "partition_by": partition}
    (folder / SNAPSHOT_RECORD).write_text(json.dumps({"run_id": folder.name, "tables": tables}))
    return folder


def build(lines: list[tuple[str, int]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("create schema normalized")
    con.execute(f"create table normalized.cost_line_facts as {facts(lines)}")
    con.execute(f"create table normalized.cost_line_profiles as {PROFILES}")
    return con


FULL = [("2026-09", 1), ("2026-09", 1), ("2026-09", 2), ("2026-10", 1), ("2026-10", 2)]


def test_a_final_period_that_lost_an_account_is_refused(tmp_path: Path) -> None:
    folder = published(tmp_path / "20261101T000000Z-abc123", FULL)
    con = build([("2026-09", 1), ("2026-09", 1), ("2026-10", 1), ("2026-10", 2)])

    with pytest.raises(InputError) as raised:
        check_restated_accounts(con, folder)

    assert str(raised.value) == (
        "billing period 2026-09 of aws billing account 111111111111 is final in the published "
        "snapshot 20261101T000000Z-abc123, but its restatement has no lines of account "
        "333333333333 (1 line); a restatement corrects amounts and adds lines, it does not "
        "drop a whole account, so nothing was published and the current snapshot stays "
        "current. If the provider really restated it so, run once with `runcost run "
        "--allow-shrink 2026-09`; otherwise fix the export (it left the account out) and run "
        "again"
    )


def test_allowed_once_it_passes(tmp_path: Path) -> None:
    folder = published(tmp_path / "snap", FULL)
    con = build([("2026-09", 1), ("2026-10", 1), ("2026-10", 2)])

    check_restated_accounts(con, folder, allowed=["2026-09"])


def test_an_open_period_may_lose_an_account_and_a_final_one_may_gain_one(tmp_path: Path) -> None:
    folder = published(tmp_path / "snap", [("2026-09", 1), ("2026-10", 1), ("2026-10", 2)])
    con = build([("2026-09", 1), ("2026-09", 2), ("2026-10", 1)])

    check_restated_accounts(con, folder)


def test_a_period_with_no_lines_left_is_the_ingest_guards(tmp_path: Path) -> None:
    folder = published(tmp_path / "snap", FULL)
    con = build([("2026-10", 1), ("2026-10", 2)])

    check_restated_accounts(con, folder)


def test_no_published_snapshot_no_check(tmp_path: Path) -> None:
    check_restated_accounts(build([("2026-09", 1)]), None)
    check_restated_accounts(build([("2026-09", 1)]), tmp_path)


def test_a_night_that_carries_months_compares_the_built_months_alone(tmp_path: Path) -> None:
    folder = published(tmp_path / "snap", FULL)
    lost = [("2026-09", 1), ("2026-09", 1), ("2026-10", 1), ("2026-10", 2)]

    with pytest.raises(InputError, match="billing period 2026-09 "):
        check_restated_accounts(build(lost), folder, built=("2026-09",))
    # a carried month's lines are the snapshot's own: the pass reads the built months alone
    check_restated_accounts(build(lost), folder, built=("2026-10",))
