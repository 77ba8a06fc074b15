"""Billing lines whose attempt or experiment tag holds a control character are warned, naming the
first line's file, row and tag key; a tag that differs from an id only in Unicode normalisation
is no look-alike: it is read in NFC (tests/e2e/test_tag_lookalikes.py places its cost)."""

from __future__ import annotations

import logging
import unicodedata

import duckdb
import pytest

from pipeline.run.lookalikes import warn_lookalike_tags

NFC = unicodedata.normalize("NFC", "att-café")
NFD = unicodedata.normalize("NFD", "att-café")
FIX = (
    "remove the character where the resources are tagged (lines already billed keep the tag they "
    "were billed with)"
)

Line = tuple[str, int, str, dict[str, str], str | None, str | None, str]


def built(lines: list[Line]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("create schema normalized")
    con.execute("create schema staging")
    con.execute(
        "create table staging.attempts as select * from (values "
        f"('{NFC}', 'exp-1'), ('att-llm-01', 'exp-1')) as attempts(attempt_id, experiment_id)"
    )
    con.execute("create table staging.experiments as select 'exp-2' as experiment_id")
    # source_line counts from 0, as ingest numbers the rows of a file
    con.execute(
        "create table normalized.cost_lines (source_delivery varchar default 'd-1', "
        "billing_period varchar default '2026-10', "
        "source_file varchar, source_line bigint, source_format varchar, "
        "tags map(varchar, varchar), attempt_tag varchar, experiment_tag varchar, "
        "billed_cost decimal(38, 10))"
    )
    columns = "source_file, source_line, source_format, tags, attempt_tag, experiment_tag"
    con.executemany(
        f"insert into normalized.cost_lines ({columns}, billed_cost) values (?, ?, ?, ?, ?, ?, ?)",
        lines,
    )
    con.execute("create schema raw")
    con.execute(
        "create table raw.billing_deliveries as select 'cur' as export_name, "
        "'2026-10' as billing_period, 'd-1' as delivery_id"
    )
    return con


def messages(con: duckdb.DuckDBPyConnection, caplog: pytest.LogCaptureFixture) -> list[str]:
    with caplog.at_level(logging.WARNING, logger="runcost"):
        warn_lookalike_tags(con)
    return [record.getMessage() for record in caplog.records]


@pytest.mark.parametrize(
    ("source_format", "key", "column"),
    [
        ("aws_cur", "user_attempt_id", "resource_tags['user_attempt_id']"),
        ("gcp_billing_export", "attempt-id", "labels['attempt-id']"),
        ("focus", "attempt-id", "Tags['attempt-id']"),
    ],
)
def test_a_control_character_in_a_tag_is_warned_naming_file_row_and_key(
    caplog: pytest.LogCaptureFixture, source_format: str, key: str, column: str
) -> None:
    tagged = "att-llm-01\x00"
    con = built(
        [
            ("b.parquet", 3, source_format, {key: "att-x\x1b"}, "att-x\x1b", None, "0.5"),
            ("a.parquet", 7, source_format, {"team": "x", key: tagged}, tagged, None, "0.14"),
            ("a.parquet", 8, source_format, {key: "att-llm-01"}, "att-llm-01", None, "174.68"),
        ]
    )

    assert messages(con, caplog) == [
        f"cur 2026-10 (delivery d-1), a.parquet: row 8, column {column}: the attempt tag "
        "'att-llm-01\\x00' holds the control "
        "character U+0000, which no attempt id holds, so the line is not placed by its tag; "
        "without it the tag names attempt 'att-llm-01' (2 line(s), billed 0.64, carry attempt "
        f"tags with control characters; the first is named); {FIX}"
    ]


def test_an_experiment_tag_names_a_listed_experiment(caplog: pytest.LogCaptureFixture) -> None:
    tags = {"user_experiment_id": "exp-2\r"}
    con = built([("converted/cur.parquet", 2, "aws_cur", tags, None, "exp-2\r", "1")])

    assert messages(con, caplog) == [
        "cur 2026-10 (delivery d-1), the CSV converted to converted/cur.parquet: line 4, "
        "column resource_tags['user_experiment_id']: the experiment tag "
        "'exp-2\\r' holds the control character U+000D, which no experiment id holds, so the "
        "line is not placed by its tag; without it the tag names experiment 'exp-2' (1 line(s), "
        f"billed 1, carry experiment tags with control characters; the first is named); {FIX}"
    ]


def test_a_tag_naming_no_known_id_says_only_what_it_holds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    con = built([("f.csv", 1, "focus", {"attempt-id": "\x7fzz"}, "\x7fzz", None, "2.50")])

    assert messages(con, caplog) == [
        "cur 2026-10 (delivery d-1), f.csv: row 2, column Tags['attempt-id']: the attempt tag "
        "'\\x7fzz' holds the control "
        "character U+007F, which no attempt id holds, so the line is not placed by its tag (1 "
        "line(s), billed 2.5, carry attempt tags with control characters; the first is named); "
        f"{FIX}"
    ]


def test_a_tag_with_a_nul_is_kept_as_written_and_named(caplog: pytest.LogCaptureFixture) -> None:
    tag = f"{NFD}\x00"  # nfc_text leaves text with a NUL as it is
    con = built([("g.json", 4, "gcp_billing_export", {"attempt-id": tag}, tag, None, "3")])

    assert messages(con, caplog) == [
        "cur 2026-10 (delivery d-1), g.json: row 5, column labels['attempt-id']: the attempt tag "
        "'att-cafe\\u0301\\x00' "
        "holds the control character U+0000, which no attempt id holds, so the line is not "
        f"placed by its tag; without it the tag names attempt {NFC!r} (1 line(s), billed 3, "
        f"carry attempt tags with control characters; the first is named); {FIX}"
    ]


def test_plain_and_unicode_tags_are_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    con = built(
        [
            ("a.parquet", 1, "aws_cur", {"user_attempt_id": NFC}, NFC, None, "5"),
            ("a.parquet", 2, "aws_cur", {"user_attempt_id": "att-x"}, "att-x", None, "5"),
            ("a.parquet", 3, "aws_cur", {"note": "a\x00b"}, None, None, "5"),
        ]
    )

    assert messages(con, caplog) == []


def test_a_night_that_carries_months_warns_about_the_built_months_lines_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    con = built(
        [("a.parquet", 7, "aws_cur", {"user_attempt_id": "att-x\x1b"}, "att-x\x1b", None, "1")]
    )
    con.execute("update normalized.cost_lines set billing_period = '2026-09'")

    with caplog.at_level(logging.WARNING, logger="runcost"):
        warn_lookalike_tags(con, built=("2026-10",))
    assert caplog.records == []  # September was carried: warned the night it was built
    assert len(messages(con, caplog)) == 1  # built whole, every month's lines are read
