"""Billing lines whose tag is a look-alike of a known id (a NUL, NFD against NFC) are warned."""

from __future__ import annotations

import logging
import unicodedata

import duckdb
import pytest

from pipeline.run.lookalikes import warn_lookalike_tags

NFC = unicodedata.normalize("NFC", "att-café")
NFD = unicodedata.normalize("NFD", "att-café")


def built(lines: list[tuple[str | None, str | None, str]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("create schema attribution")
    con.execute("create schema staging")
    con.execute(
        "create table staging.attempts as select * from (values "
        f"('{NFC}', 'exp-1'), ('att-llm-01', 'exp-1')) as attempts(attempt_id, experiment_id)"
    )
    con.execute(
        "create table attribution.unplaced_lines (attempt_tag varchar, experiment_tag varchar, "
        "billed_cost decimal(38, 10))"
    )
    con.executemany("insert into attribution.unplaced_lines values (?, ?, ?)", lines)
    return con


def test_lookalike_tags_are_warned(caplog: pytest.LogCaptureFixture) -> None:
    con = built(
        [
            (NFD, None, "100.5"),
            (NFD, None, "74.18"),
            ("att-llm-01\x00", None, "0.14"),
            (None, "exp-1\x00", "1"),
            ("att-unknown", None, "5"),
        ]
    )

    with caplog.at_level(logging.WARNING, logger="runcost"):
        warn_lookalike_tags(con)

    fix = (
        "so they were not placed on it; fix the tag where the resources are tagged (lines "
        "already billed keep the tag they were billed with)"
    )
    assert [record.getMessage() for record in caplog.records] == [
        "2 cost line(s) (billed 174.68) carry the attempt tag 'att-cafe\\u0301', which "
        f"differs from attempt '{NFC}' only in Unicode normalisation (NFD against NFC), {fix}",
        "1 cost line(s) (billed 0.14) carry the attempt tag 'att-llm-01\\x00', which "
        f"differs from attempt 'att-llm-01' only in a control character, {fix}",
        "1 cost line(s) (billed 1) carry the experiment tag 'exp-1\\x00', which "
        f"differs from experiment 'exp-1' only in a control character, {fix}",
    ]


def test_exact_and_unknown_tags_are_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    con = built([("att-unknown", None, "5"), (NFC, "exp-1", "1")])

    with caplog.at_level(logging.WARNING, logger="runcost"):
        warn_lookalike_tags(con)

    assert caplog.records == []
