"""Line ids numbered per billing period: a period's ids never depend on another's deliveries."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import cur_line, line_id

from pipeline.common.errors import InputError
from pipeline.dag.macros import expand_macros
from pipeline.ingest import provider
from pipeline.ingest.aws.raw import register_cur
from pipeline.ingest.provider import PERIOD_FILES, PERIOD_KEYS, period_key, register_files
from pipeline.warehouse.raw_store import Delivery
from schemas import aws_cur2


def _delivery(
    root: Path, period: str, rows_per_file: list[int], delivery_id: str = "d1"
) -> Delivery:
    """One AWS delivery of ``period``: a CUR 2.0 Parquet file per entry of ``rows_per_file``."""
    folder = root / f"billing_period={period}" / f"delivery={delivery_id}"
    folder.mkdir(parents=True)
    files = []
    for number, rows in enumerate(rows_per_file):
        path = folder / f"part-{number}.parquet"
        lines = [cur_line(line_item_unblended_cost=float(row)) for row in range(rows)]
        pq.write_table(pa.Table.from_pylist(lines, schema=aws_cur2.arrow_schema()), path)
        files.append(path)
    return Delivery("aws", "ml-cur", period, delivery_id, folder, tuple(files), True)


def _line_ids(deliveries: list[Delivery]) -> dict[tuple[str, str, int], int]:
    """Each stored row's line id, by (period, file, row), as the staging models compute it."""
    con = duckdb.connect()
    con.execute("create schema raw")
    register_cur(con, deliveries)
    rows = con.execute(
        expand_macros(
            "select delivery_period, source_file, source_line, "
            "line_id_of(0, file_index, source_line) from raw.aws_cur2",
            "test",
        )
    ).fetchall()
    return {(period, name, line): found for period, name, line, found in rows}


def test_a_redelivered_period_leaves_every_other_periods_line_ids(tmp_path: Path) -> None:
    september = _delivery(tmp_path, "2026-09", [2, 3])
    october = _delivery(tmp_path, "2026-10", [2])
    november = _delivery(tmp_path, "2026-11", [1, 1, 2])
    before = _line_ids([september, october, november])
    assert len(set(before.values())) == len(before) == 11
    assert before["2026-10", "part-0.parquet", 1] == line_id(1, "2026-10")
    assert before["2026-11", "part-2.parquet", 0] == line_id(0, "2026-11", place=2)

    # October delivered again as three files (one more row): the other periods keep their ids
    again = _delivery(tmp_path, "2026-10", [1, 1, 1], "d2")
    after = _line_ids([september, again, november])
    assert len(set(after.values())) == len(after) == 12
    kept = {key: found for key, found in before.items() if key[0] != "2026-10"}
    assert {key: after[key] for key in kept} == kept
    assert sorted(found for key, found in after.items() if key[0] == "2026-10") == [
        line_id(0, "2026-10", place=place) for place in range(3)
    ]

    # and without September at all (a period dropped from the window)
    assert _line_ids([again, november]) == {
        key: found for key, found in after.items() if key[0] != "2026-09"
    }


def test_period_keys_are_days_from_2000_and_a_day_is_its_own_period() -> None:
    assert period_key("2000-01") == 0
    assert period_key("2026-10") == period_key("202610") == period_key("2026-10-01")
    assert period_key("2026-10-12") == period_key("2026-10-11") + 1
    assert period_key("2026-11") - period_key("2026-10") == 31
    last = provider.KEY_LAST
    assert period_key(last.isoformat()) == PERIOD_KEYS - 1
    # the largest key and place still leave a line id inside its source range's 2^56
    assert (PERIOD_KEYS * PERIOD_FILES) * provider.FILE_ROWS == 2**56


def _one_error_line(error: pytest.ExceptionInfo[InputError]) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("period", ["1999-12", "1999-12-31", "2089-10", "2200-01"])
def test_a_period_outside_the_numbered_years_is_refused(tmp_path: Path, period: str) -> None:
    delivery = Delivery("aws", "ml-cur", period, "d1", tmp_path / "d1", (), True)
    with pytest.raises(InputError) as error:
        register_files(duckdb.connect(), "aws_cur2_files", [delivery])
    message = _one_error_line(error)
    assert message.startswith(f"{tmp_path / 'd1'}: billing period {period} is outside ")
    assert "2000-01-01" in message
    assert "remove that delivery folder from raw/" in message


@pytest.mark.parametrize(
    "period", ["latest", "2026-13", "2026-1", "2026-02-30", "", "\uff12\uff10\uff12\uff16-10"]
)
def test_an_unparseable_period_is_refused(tmp_path: Path, period: str) -> None:
    delivery = Delivery("gcp", "billing", period, "d1", tmp_path / "d1", (), True)
    with pytest.raises(InputError) as error:
        register_files(duckdb.connect(), "gcp_billing_files", [delivery], "partition_date")
    message = _one_error_line(error)
    assert message.startswith(f"{tmp_path / 'd1'}: billing period {period!r} is not a month ")
    assert "remove that delivery folder from raw/ and run again" in message


def test_more_files_in_a_period_than_its_ids_number_is_refused(tmp_path: Path) -> None:
    # the count is refused before any file is opened: the names need not exist
    folder = tmp_path / "billing_period=2026-10" / "delivery=d1"
    many = tuple(folder / f"part-{number}.parquet" for number in range(PERIOD_FILES + 1))
    deliveries = [
        Delivery("aws", "ml-cur", "2026-10", "d1", folder, many, True),
        _delivery(tmp_path, "2026-11", [1]),
    ]
    with pytest.raises(InputError) as error:
        register_files(duckdb.connect(), "aws_cur2_files", deliveries)
    assert _one_error_line(error) == (
        f"{folder}: 8,193 data files for billing period 2026-10, more than the 8,192 one "
        "period's line ids can number; export the period in fewer, larger files and run again"
    )
    # as many as it numbers: one id each, the last place below the next period's first
    con = duckdb.connect()
    register_files(con, "aws_cur2_files", [_delivery(tmp_path / "ok", "2026-10", [1])])
    assert con.execute("select file_index from aws_cur2_files").fetchall() == [
        (period_key("2026-10") * PERIOD_FILES,)
    ]


def test_a_file_with_more_rows_than_its_ids_number_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2^28 rows are too many to write here: the limit is lowered to 3 rows a file
    monkeypatch.setattr(provider, "FILE_ROWS", 3)
    fits = _delivery(tmp_path, "2026-09", [3])
    register_files(duckdb.connect(), "aws_cur2_files", [fits])
    over = _delivery(tmp_path, "2026-10", [2, 4])
    with pytest.raises(InputError) as error:
        register_files(duckdb.connect(), "aws_cur2_files", [fits, over])
    assert _one_error_line(error) == (
        f"{over.files[1]}: 4 rows in one data file, more than the 3 a file's line ids can "
        "number; export the period in smaller files and run again"
    )
