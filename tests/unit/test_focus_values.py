"""FOCUS files: bad money, times, currencies and ids, repeated files and shrinking periods refused
before raw/ changes, with the message value_rules gives every provider."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from focus_world import row, write_azure_parquet, write_mixed_csv
from test_ingest_focus import assert_nothing_stored, config

from pipeline.common.errors import InputError
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.warehouse.raw_store import RawStore

FIXED = "the corrected copy is read afresh on the next run"
BAD = {
    # case: (column, value, value shown)
    "nan": ("BilledCost", "NaN", "'NaN'"),
    "infinity": ("EffectiveCost", "Infinity", "'Infinity'"),
    "1e308": ("ListCost", "1e308", "'1e308'"),
    "1e27": ("BilledCost", "1e27", "'1e27'"),
    "dollar sign": ("BilledCost", "$1.00", "'$1.00'"),
    "nan quantity": ("PricingQuantity", "nan", "'nan'"),
    "end before start": ("ChargePeriodEnd", "2026-10-02 09:00:00", "'2026-10-02 09:00:00+00'"),
    "period end before start": (
        "BillingPeriodEnd",
        "2026-09-01 00:00:00",
        "'2026-09-01 00:00:00+00'",
    ),
    "year 1970": ("ChargePeriodStart", "1970-01-01 00:00:00", "'1970-01-01 00:00:00+00'"),
    "blank currency": ("BillingCurrency", "  ", "'  '"),
    "lowercase currency": ("BillingCurrency", "usd", "'usd'"),
    "blank account": ("BillingAccountId", " ", "' '"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_value_is_refused_naming_file_row_column_and_value(tmp_path: Path, case: str):
    column, value, shown = BAD[case]
    rows = [row("AWS", 10), row("AWS", 10, **{column: value}), row("AWS", 10)]
    path = write_mixed_csv(tmp_path / "focus" / "f.csv", rows)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    message = str(caught.value)
    assert message.startswith(f"{path}: row 2 (after the header), column {column}: {shown} is ")
    assert "is refused; it must be " in message
    assert "Fix the value in the export" in message and FIXED in message
    assert_nothing_stored(tmp_path)
    assert not (tmp_path / "warehouse" / ".ingest-staging").exists()


def test_a_bad_parquet_amount_is_named_by_its_row(tmp_path: Path):
    path = write_azure_parquet(tmp_path / "focus" / "azure.parquet")
    table = pq.read_table(path)
    index = table.schema.get_field_index("BilledCost")
    cells = table.column(index).to_pylist()
    cells = [None if cell is None else int(cell) for cell in cells]
    cells[1] = 10**27
    kind = pa.decimal128(38, 0)
    table = table.set_column(index, pa.field("BilledCost", kind), pa.array(cells, kind))
    pq.write_table(table, path)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    assert str(caught.value).startswith(
        f"{path}: row 2, column BilledCost: '1000000000000000000000000000' is refused"
    )
    assert_nothing_stored(tmp_path)


def test_a_copy_of_a_file_is_refused(tmp_path: Path):
    path = write_mixed_csv(tmp_path / "focus" / "a.csv", [row("AWS", 10)])
    shutil.copyfile(path, tmp_path / "focus" / "b.csv")
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    assert str(caught.value).startswith(
        f"{tmp_path / 'focus' / 'b.csv'}: has exactly the content of {path} (sha256 "
    )
    assert "would count every line twice" in str(caught.value)
    assert_nothing_stored(tmp_path)


def test_a_file_listed_by_two_sources_is_refused(tmp_path: Path):
    path = write_mixed_csv(tmp_path / "focus" / "a.csv", [row("AWS", 10)])
    settings = config(
        tmp_path, {"name": "all", "path": "focus"}, {"name": "one", "path": "focus/a.csv"}
    )
    with pytest.raises(InputError, match=r"is listed by focus\.files entries 'all' and 'one'"):
        ingest_with(ingest_focus_files, settings)
    assert path.exists()
    assert_nothing_stored(tmp_path)


def test_rows_equal_in_every_column_are_kept(tmp_path: Path):
    """FOCUS has no row id: two equal charges are valid, only a repeated file is refused."""
    write_mixed_csv(tmp_path / "focus" / "a.csv", [row("AWS", 10, BilledCost="1.5")] * 2)
    (delivery,) = ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    assert sum(pq.read_metadata(path).num_rows for path in delivery.files) == 2


def invoiced(count: int, invoice: str = "INV-1") -> list[dict[str, str]]:
    return [row("AWS", 10, BilledCost=f"{n}.5", InvoiceId=invoice) for n in range(count)]


def current(tmp_path: Path) -> str | None:
    return RawStore(tmp_path / "warehouse" / "raw", "focus").current_id("focus", "2026-10")


def test_a_final_period_that_loses_more_than_a_tenth_is_stopped_unless_allowed(tmp_path: Path):
    path = write_mixed_csv(tmp_path / "focus" / "f.csv", invoiced(10))
    (first,) = ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    write_mixed_csv(path, invoiced(8))
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'focus'}: the new delivery ")
    assert "of focus billing period 2026-10 holds 8 lines (20% fewer), but the current final " in (
        message
    )
    assert "run once with `runcost run --allow-shrink 2026-10`" in message
    assert current(tmp_path) == first.delivery_id
    (allowed,) = ingest_with(
        ingest_focus_files, config(tmp_path, "focus"), allow_shrink=["focus/2026-10"]
    )
    assert current(tmp_path) == allowed.delivery_id != first.delivery_id


def test_an_open_period_may_shrink_and_an_emptied_file_keeps_the_period(tmp_path: Path):
    path = write_mixed_csv(tmp_path / "focus" / "f.csv", invoiced(10, invoice="NULL"))
    (first,) = ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    write_mixed_csv(path, invoiced(2, invoice="NULL"))
    (second,) = ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    assert second.delivery_id != first.delivery_id
    # a file that lost every row no longer shows the period: the stored period stays current
    write_mixed_csv(path, [row("AWS", 11)])
    deliveries = ingest_with(ingest_focus_files, config(tmp_path, "focus"))
    assert [(d.billing_period, d.delivery_id) for d in deliveries] == [
        ("2026-10", second.delivery_id),
        ("2026-11", deliveries[1].delivery_id),
    ]
