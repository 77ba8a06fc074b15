"""A FOCUS CSV typed block by block (pipeline/ingest/focus/csv_blocks.py) is stored, refused
and noted exactly as the row pass (focus/read.py) stores, refuses and notes it."""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb
import pytest
from builders import ingest_with
from focus_world import mixed_rows, row, write_mixed_csv

from pipeline.common.errors import InputError
from pipeline.config.loader import parse_config
from pipeline.ingest.focus import csv_blocks, read
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.warehouse.raw_store import Delivery


def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few rows, gathered 7 rows at a time: many dictionaries to unify."""
    monkeypatch.setattr(csv_blocks, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(csv_blocks, "ROWS", 7)


def row_pass_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file to the row pass, as a block holding a flagged value is."""

    def unsure(*_args: object, **_kwargs: object) -> None:
        raise csv_blocks.Unsure

    monkeypatch.setattr(csv_blocks, "write_csv", unsure)


def ingest(root: Path, source: dict[str, str]) -> list[Delivery]:
    settings = {"focus": {"files": [source]}, "warehouse": {"memory_limit": "256MB"}}
    return ingest_with(ingest_focus_files, parse_config(settings, base=root))


def stored(deliveries: list[Delivery]) -> dict[str, tuple[list[tuple], list[tuple]]]:
    """Each period's part: its columns with their types, and its rows in file order."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    found = {}
    for delivery in deliveries:
        [part] = delivery.files
        columns = con.execute(f"describe select * from read_parquet('{part}')").fetchall()
        rows = con.execute(f"select * from read_parquet('{part}')").fetchall()
        found[delivery.billing_period] = ([column[:2] for column in columns], rows)
    con.close()
    return found


def many_rows() -> list[dict[str, str]]:
    """60 rows over two periods, interleaved, with the sample's quirks and amounts that differ
    from block to block (8E-7, quoted commas and newlines, NULL, an extra Id column)."""
    rows = []
    for number in range(60):
        line = dict(mixed_rows()[number % len(mixed_rows())])
        if number % 3 == 0:
            line["BilledCost"] = f"{number}.{number:04d}"
        if number % 5 == 0:
            line["ChargeDescription"] = f'usage, "quoted"\nline {number % 4}'
        rows.append(line)
    return rows


@pytest.mark.parametrize("provider_name", [None, "Configured Cloud"])
def test_a_csv_is_stored_as_the_row_pass_stores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider_name: str | None
) -> None:
    small_blocks(monkeypatch)
    source = {"path": "focus", "name": "bills"}
    if provider_name:
        source["provider_name"] = provider_name
    for name in ("blocks", "rows"):
        write_mixed_csv(tmp_path / name / "focus" / "f.csv", many_rows())
    texts: list[Path] = []
    load_text = read._load_text
    monkeypatch.setattr(read, "_load_text", lambda con, path, *rest: (
        texts.append(path), load_text(con, path, *rest))[1])  # fmt: skip
    by_blocks = stored(ingest(tmp_path / "blocks", source))
    assert texts == []  # the blocks wrote it: the row pass never read it as text
    row_pass_only(monkeypatch)
    by_rows = stored(ingest(tmp_path / "rows", source))
    assert sorted(by_blocks) == ["2026-09", "2026-10"] and len(texts) == 1
    assert by_blocks == by_rows
    lines = [line[0] for _columns, rows in by_blocks.values() for line in rows]
    assert sorted(lines) == list(range(60))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("BilledCost", "$1.00"),
        ("EffectiveCost", "NaN"),
        ("ListCost", "1e16"),
        ("BillingCurrency", "NULL"),
        ("ChargePeriodStart", "5/1/25"),
        ("Tags", "team=ml"),
    ],
)
def test_a_bad_value_in_a_later_block_is_refused_as_the_row_pass_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str, value: str
) -> None:
    small_blocks(monkeypatch)
    rows = [row("AWS", 10, BilledCost=f"{number}.5") for number in range(50)]
    rows[40][column] = value
    messages = []
    for name in ("blocks", "rows"):
        if name == "rows":
            row_pass_only(monkeypatch)
        write_mixed_csv(tmp_path / name / "focus" / "f.csv", rows)
        with pytest.raises(InputError) as error:
            ingest(tmp_path / name, {"path": "focus", "name": "bills"})
        messages.append(str(error.value).replace(str(tmp_path / name), ""))
        assert not list((tmp_path / name).glob("**/raw/focus/**/*.parquet"))
    assert messages[0] == messages[1]
    assert f"row 41 (after the header), column {column}" in messages[0]


@pytest.mark.parametrize(
    ("amount", "noted"),
    [
        ("0.123456789012", "1 money values carry more than 10 decimal places (largest rounding "
         "difference 0.000000000012)"),
        ("0.1234567890", None),
    ],
)  # fmt: skip
def test_money_beyond_10_places_is_noted_as_the_row_pass_notes_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    amount: str,
    noted: str | None,
) -> None:
    small_blocks(monkeypatch)
    rows = [row("AWS", 10, BilledCost="1.25") for _number in range(30)]
    rows[20]["EffectiveCost"] = amount
    notes = []
    for name in ("blocks", "rows"):
        if name == "rows":
            row_pass_only(monkeypatch)
        write_mixed_csv(tmp_path / name / "focus" / "f.csv", rows)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="runcost"):
            ingest(tmp_path / name, {"path": "focus", "name": "bills"})
        notes.append(
            [r.getMessage().split(": ", 1)[1] for r in caplog.records if "places" in r.msg]
        )
    assert notes[0] == notes[1]
    assert [noted in note for note in notes[0]] == ([True] if noted else [])
