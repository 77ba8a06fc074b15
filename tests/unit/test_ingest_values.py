"""Bad values, duplicates and shrinking re-deliveries refused at ingest, before raw/ changes."""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from test_ingest_aws import EXPORT, PERIOD, config_for, cur_table, raw_files, write_export
from test_ingest_csv import csv_bytes, write_csv_export

from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports

DATA = f"data/BILLING_PERIOD={PERIOD}"


def with_values(table: pa.Table, column: str, values: dict[int, object], kind=None) -> pa.Table:
    """The table with some cells of one column replaced (and the column retyped when asked)."""
    index = table.schema.get_field_index(column)
    cells = table.column(column).to_pylist()
    if kind is not None:
        cells = [None if cell is None else str(cell) for cell in cells]
    for row, value in values.items():
        cells[row] = value
    kind = kind or table.schema.field(column).type
    return table.set_column(index, pa.field(column, kind), pa.array(cells, type=kind))


def ingest_one(tmp_path: Path, table: pa.Table, **kwargs) -> Path:
    root = write_export(tmp_path / "exports" / EXPORT, {"part-0.parquet": table}, **kwargs)
    ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    return root


START = cur_table().column("line_item_usage_start_date")[0].as_py()
BAD_VALUES = {
    "nan": ("line_item_unblended_cost", {1: float("nan")}, None, "row 2", "'nan'"),
    "infinity": ("line_item_net_unblended_cost", {2: float("inf")}, None, "row 3", "'inf'"),
    "minus infinity": ("line_item_unblended_cost", {0: float("-inf")}, None, "row 1", "'-inf'"),
    "1e308": ("line_item_unblended_cost", {0: 1e308}, None, "row 1", "'1e+308'"),
    "1e27": ("pricing_public_on_demand_cost", {1: 1e27}, None, "row 2", "'1e+27'"),
    "dollar sign": ("line_item_unblended_cost", {1: "$1.00"}, pa.string(), "row 2", "'$1.00'"),
    "end before start": (
        "line_item_usage_end_date",
        {1: START - timedelta(hours=1)},
        None,
        "row 2",
        "'2026-09-30 23:00:00+00'",
    ),
    "year 1970": (
        "line_item_usage_start_date",
        {0: START.replace(year=1970)},
        None,
        "row 1",
        "'1970-10-01 00:00:00+00'",
    ),
    "empty currency": ("line_item_currency_code", {2: ""}, None, "row 3", "''"),
    "lowercase currency": ("line_item_currency_code", {0: "usd"}, None, "row 1", "'usd'"),
    "empty line item id": ("identity_line_item_id", {1: ""}, None, "row 2", "''"),
    "blank account": ("line_item_usage_account_id", {0: "  "}, None, "row 1", "'  '"),
}


@pytest.mark.parametrize("case", list(BAD_VALUES), ids=list(BAD_VALUES))
def test_a_bad_value_is_refused_naming_file_row_column_and_value(tmp_path: Path, case: str):
    column, values, kind, row, shown = BAD_VALUES[case]
    table = with_values(cur_table(), column, values, kind)
    with pytest.raises(InputError) as caught:
        ingest_one(tmp_path, table)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "exports" / EXPORT / DATA / "part-0.parquet"))
    assert f": {row}, column {column}: {shown}" in message
    assert "is refused; it must be" in message
    assert "the corrected copy is read afresh on the next run" in message
    assert raw_files(tmp_path) == [], "nothing reaches raw/"
    assert not (tmp_path / "warehouse" / ".ingest-staging").exists()


def test_a_corrected_copy_under_the_same_manifest_is_read_afresh(tmp_path: Path):
    bad = with_values(cur_table(), "line_item_unblended_cost", {1: float("nan")})
    with pytest.raises(InputError, match="'nan' is refused"):
        ingest_one(tmp_path, bad)
    good = with_values(cur_table(), "line_item_unblended_cost", {1: 7.25})
    ingest_one(tmp_path, good)  # same executionId, same file name: a fixed re-copy
    stored = list((tmp_path / "warehouse" / "raw").rglob("part-0.parquet"))
    assert len(stored) == 1
    assert pq.read_table(stored[0]).column("line_item_unblended_cost").to_pylist()[1] == 7.25


def test_csv_cells_that_are_not_numbers_are_named_by_line(tmp_path: Path):
    table = cur_table()
    text = csv_bytes(with_values(table, "line_item_unblended_cost", {1: "$1.00"}, pa.string()))
    root = write_csv_export(tmp_path / "exports" / EXPORT, {"part-0.csv.gz": text})
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert str(caught.value).startswith(str(root / DATA / "part-0.csv.gz"))
    assert ": line 3, column line_item_unblended_cost: '$1.00' is refused" in str(caught.value)
    assert raw_files(tmp_path) == []


def test_csv_nan_is_refused_by_its_line(tmp_path: Path):
    text = csv_bytes(with_values(cur_table(), "line_item_unblended_cost", {2: "NaN"}, pa.string()))
    root = write_csv_export(tmp_path / "exports" / EXPORT, {"part-0.csv.gz": text})
    with pytest.raises(InputError, match=r": line 4, column line_item_unblended_cost: 'nan'"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert raw_files(tmp_path) == []


def repeated(rows: int = 10, copies: int = 5) -> pa.Table:
    """rows lines, the last ``copies`` repeating the first ones' id and hour."""
    table = cur_table(rows=rows)
    for column in ("identity_line_item_id", "identity_time_interval"):
        cells = table.column(column).to_pylist()
        table = with_values(table, column, {rows - copies + i: cells[i] for i in range(copies)})
    return table


def test_rows_repeating_a_line_item_and_hour_in_one_file_are_refused(tmp_path: Path):
    with pytest.raises(InputError) as caught:
        ingest_one(tmp_path, repeated())
    message = str(caught.value)
    assert ": row 6 repeats row 1 (identity_line_item_id 'v0', identity_time_interval 'v0')" in (
        message
    )
    assert "5 line items are repeated in this file" in message
    assert "runcost never drops duplicates itself" in message
    assert raw_files(tmp_path) == []


def test_one_line_item_in_several_hours_or_files_is_not_a_duplicate(tmp_path: Path):
    hours = with_values(cur_table(rows=3), "identity_line_item_id", {1: "v0", 2: "v0"})
    # AWS makes the id unique only within a partition: the same id in two files is fine
    other = with_values(cur_table(rows=3), "line_item_unblended_cost", {0: 9.0})
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": hours, "b.parquet": other})
    (delivery,) = ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert sum(pq.read_metadata(path).num_rows for path in delivery.files) == 6


@pytest.mark.parametrize("manifest", [True, False], ids=["manifest", "no manifest"])
def test_a_stray_copy_of_a_data_file_is_refused(tmp_path: Path, manifest: bool):
    root = write_export(
        tmp_path / "exports" / EXPORT,
        {"part-0.parquet": cur_table()},
        execution_id="exec-0001" if manifest else None,
        listed=["part-0.parquet", "part-0 (copy).parquet"] if manifest else None,
    )
    shutil.copyfile(root / DATA / "part-0.parquet", root / DATA / "part-0 (copy).parquet")
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    message = str(caught.value)
    # the manifest's order, or name order without one (where the copy sorts first)
    copy, original = root / DATA / "part-0 (copy).parquet", root / DATA / "part-0.parquet"
    first, second = (original, copy) if manifest else (copy, original)
    assert message.startswith(f"{second}: has exactly the content of {first} (sha256 ")
    assert "would count every line twice" in message
    assert raw_files(tmp_path) == []


def open_lines(rows: int) -> pa.Table:
    """Lines not invoiced yet: the period is open."""
    return with_values(cur_table(rows=rows), "bill_invoice_id", dict.fromkeys(range(rows), ""))


def deliver(tmp_path: Path, table: pa.Table, execution_id: str, allow=()) -> str:
    root = tmp_path / "exports" / EXPORT
    shutil.rmtree(root, ignore_errors=True)
    write_export(root, {"part-0.parquet": table}, execution_id=execution_id)
    (delivery,) = ingest_with(ingest_aws_exports, config_for(tmp_path, root), allow_shrink=allow)
    return delivery.delivery_id


def test_a_re_delivery_with_no_lines_is_stopped_unless_allowed_once(tmp_path: Path, caplog):
    assert deliver(tmp_path, open_lines(10), "exec-1") == "exec-1"
    with pytest.raises(InputError) as caught:
        deliver(tmp_path, open_lines(0), "exec-2")
    message = str(caught.value)
    assert f"the new delivery exec-2 of {EXPORT} billing period {PERIOD} holds no lines, but " in (
        message
    )
    assert "the current delivery exec-1 holds 10;" in message
    assert f"run once with `runcost run --allow-shrink {PERIOD}`" in message
    current = tmp_path / "warehouse" / "raw" / "aws" / EXPORT / f"BILLING_PERIOD={PERIOD}"
    assert '"delivery_id": "exec-1"' in (current / "current.json").read_text()
    assert not (current / "delivery=exec-2").exists()
    with caplog.at_level(logging.WARNING, logger="runcost"):
        assert deliver(tmp_path, open_lines(0), "exec-2", allow=[PERIOD]) == "exec-2"
    assert "allowed once by --allow-shrink 2026-10" in caplog.text


def invoiced(rows: int) -> pa.Table:
    return with_values(cur_table(rows=rows), "bill_invoice_id", dict.fromkeys(range(rows), "I-1"))


def test_a_final_period_may_not_lose_more_than_a_tenth_of_its_lines(tmp_path: Path):
    deliver(tmp_path, invoiced(10), "exec-1")
    with pytest.raises(InputError, match=r"holds 8 lines \(20% fewer\), but the current final "):
        deliver(tmp_path, invoiced(8), "exec-2")
    assert deliver(tmp_path, invoiced(9), "exec-3") == "exec-3"  # 10% fewer: a restatement


def test_an_open_period_may_shrink(tmp_path: Path):
    deliver(tmp_path, open_lines(10), "exec-1")
    assert deliver(tmp_path, open_lines(4), "exec-2") == "exec-2"


def test_a_usage_quantity_may_pass_the_money_limit_but_not_1e25(tmp_path: Path):
    big = with_values(cur_table(), "line_item_usage_amount", {1: 1.9e15})  # byte-seconds, say
    (delivery,) = ingest_with(ingest_aws_exports, config_for(tmp_path, ingest_root(tmp_path, big)))
    assert pq.read_table(delivery.files[0]).column("line_item_usage_amount")[1].as_py() == 1.9e15
    huge = with_values(cur_table(), "line_item_usage_amount", {2: 1e25})
    with pytest.raises(InputError, match=r"row 3, column line_item_usage_amount: '1e\+25' is ref"):
        ingest_one(tmp_path / "again", huge)


def ingest_root(tmp_path: Path, table: pa.Table) -> Path:
    return write_export(tmp_path / "exports" / EXPORT, {"part-0.parquet": table})
