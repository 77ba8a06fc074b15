"""GCP NDJSON extracts typed by Arrow's JSON reader in blocks: the same rows as the row decoder,
which takes every file the block reader cannot type strictly; days split in bounded batches."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from test_gcp_files import config, row

from pipeline.ingest.gcp import days as gcp_days
from pipeline.ingest.gcp import ndjson_blocks as gcp_ndjson_blocks
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.ingest.gcp.ndjson import read_ndjson
from schemas import gcp_billing

PARTITION = gcp_days.PARTITION_COLUMNS


def extract_row(number: int = 0, **overrides: Any) -> dict[str, Any]:
    """One row as a BigQuery extract job writes it: FLOAT as numbers, TIMESTAMP as text."""
    record = row(
        cost=0.35 + number,
        usage={"amount": 3600.0, "unit": "seconds", "amount_in_pricing_units": 1},
        credits=[{"name": "Promo", "amount": -0.175, "type": "PROMOTION"}],
        export_time=f"2026-10-{12 + number % 3} 16:04:05.123456 UTC",
        price={"effective_price": "0.350000001", "list_price": 0.5},
        tags=[{"key": "k", "value": "v", "inherited": True, "namespace": None}],
        adjustment_info=None,
    )
    record.update(overrides)
    return record


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def typed(path: Path, tmp_path: Path) -> tuple[pa.Table, list[int] | None]:
    target = tmp_path / "typed.parquet"
    names, lines = gcp_ndjson_blocks.write_typed(path, PARTITION, target)
    return pq.read_table(target, columns=names), lines


def expected(path: Path) -> pa.Table:
    table, _lines = read_ndjson(path, PARTITION)
    return table


def no_row_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any) -> None:
        raise AssertionError("the row decoder was used")

    monkeypatch.setattr(gcp_ndjson_blocks, "read_ndjson", refuse)


def test_an_extract_is_typed_by_blocks_as_the_row_decoder_types_it(tmp_path, monkeypatch):
    rows = [
        extract_row(0),
        extract_row(1, usage_start_time="2026-10-12T11:00:00Z", cost=1),
        extract_row(2, usage_end_time="2026-10-12T12:00:00.250", labels=[], credits=None),
        extract_row(3, cost=math.nan, price=None, partition_date="2026-10-31"),
    ]
    path = write_lines(tmp_path / "a.json", [json.dumps(item) for item in rows])
    want = expected(path)
    monkeypatch.setattr(gcp_ndjson_blocks, "BLOCK", 1024)  # several blocks
    no_row_decoder(monkeypatch)
    table, lines = typed(path, tmp_path)
    assert lines is None
    assert table.schema.names == want.schema.names
    assert "adjustment_info" in table.schema.names, "null on every row, named on the first line"
    assert "subscription" not in table.schema.names, "never named"
    for name in want.schema.names:
        assert table.schema.field(name).type == want.schema.field(name).type, name
    assert table.to_pylist()[:3] == want.to_pylist()[:3]
    assert math.isnan(table.column("cost")[3].as_py())
    assert table.column("partition_date").to_pylist() == [None, None, None, "2026-10-31"]


def test_a_column_a_later_line_names_is_read_by_blocks_too(tmp_path, monkeypatch):
    """An extract may leave out a null field: the first line does not name every column."""
    rows = [extract_row(0), extract_row(1, seller_name="Marketplace seller")]
    path = write_lines(tmp_path / "a.json", [json.dumps(item) for item in rows])
    want = expected(path)
    no_row_decoder(monkeypatch)
    table, lines = typed(path, tmp_path)
    assert lines is None
    assert table.equals(want)
    assert table.column("seller_name").to_pylist() == [None, "Marketplace seller"]


ROW_DECODER = {
    # the file: (its lines, the row of each table row as the file counts it)
    "a blank line": (["", "{}"], [1, 3]),
    "text where the export has a number": (['{"cost": "1.5"}'], [1, 2]),
    "an epoch timestamp": (['{"export_time": 1791820800}'], [1, 2]),
    "a timestamp with an offset": (['{"export_time": "2026-10-12T10:00:00+02:00"}'], [1, 2]),
    "a boolean as text": (['{"tags": [{"key": "k", "inherited": "true"}]}'], [1, 2]),
    "a column outside the export": (['{"new_column": 1}'], [1, 2]),
    "a column named with null on a later line only": (['{"seller_name": null}'], [1, 2]),
}


@pytest.mark.parametrize("case", list(ROW_DECODER), ids=list(ROW_DECODER))
def test_a_file_the_blocks_cannot_type_strictly_takes_the_row_decoder(tmp_path, case):
    extra, rows = ROW_DECODER[case]
    first = json.dumps({k: v for k, v in extract_row().items() if k != "seller_name"})
    path = write_lines(tmp_path / "a.json", [first, *extra])
    table, lines = typed(path, tmp_path)
    assert table.equals(expected(path))
    assert lines == rows


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["null"], "row 1: not a JSON object"),  # Arrow's reader crashes on a file of null
        ([json.dumps(extract_row()), "null"], "row 2: not a JSON object"),
        ([json.dumps(extract_row()) + " " + json.dumps(extract_row())], "row 1: not JSON"),
        (['{"cost": 1, "cost": "x"}'], "row 1, column cost: 'x' is refused"),
        (
            [json.dumps(extract_row(export_time="2026-02-30 10:00:00 UTC"))],
            "row 1, column export_time: '2026-02-30 10:00:00 UTC' is refused",
        ),
    ],
    ids=["null", "null later", "two objects on a line", "a key twice", "february 30"],
)
def test_lines_that_are_not_one_export_object_are_refused_by_the_row_decoder(
    tmp_path, lines, message
):
    path = write_lines(tmp_path / "a.json", lines)
    with pytest.raises(Exception) as caught:
        typed(path, tmp_path)
    assert message in str(caught.value)


def test_days_are_split_in_bounded_batches_keeping_the_file_order(tmp_path, monkeypatch):
    rows = [extract_row(number, cost=number / 4) for number in range(40)]
    write_lines(tmp_path / "export" / "a.json", [json.dumps(item) for item in rows])
    monkeypatch.setattr(gcp_days, "BUFFERED", 5)
    monkeypatch.setattr("pipeline.ingest.gcp.files.BATCH", 3)
    # the block reader's rows are split as they are typed: a few rows at a time
    monkeypatch.setattr(gcp_ndjson_blocks, "BLOCK", 1024)
    monkeypatch.setattr(gcp_ndjson_blocks, "ROW_GROUP", 3)
    deliveries = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    assert [d.billing_period for d in deliveries] == ["2026-10-12", "2026-10-13", "2026-10-14"]
    for offset, delivery in enumerate(deliveries):
        (part,) = delivery.files
        assert pq.read_metadata(part).num_row_groups > 1, "written a few rows at a time"
        costs = pq.read_table(part).column("cost").to_pylist()
        assert costs == [number / 4 for number in range(offset, 40, 3)]
        assert pq.read_schema(part) == pq.read_schema(deliveries[0].files[0])
    assert set(pq.read_schema(deliveries[0].files[0]).names) <= set(gcp_billing.TYPES)


def test_rows_split_before_a_block_needing_the_row_decoder_are_split_once(tmp_path, monkeypatch):
    # the blocks before the last are typed and split by day; the last line (a timestamp with an
    # offset) sends the file to the row decoder, whose rows replace every part written so far
    rows = [extract_row(number, cost=number / 4) for number in range(40)]
    rows.append(extract_row(40, cost=10, export_time="2026-10-12T16:04:05+00:00"))
    write_lines(tmp_path / "export" / "a.json", [json.dumps(item) for item in rows])
    monkeypatch.setattr(gcp_days, "BUFFERED", 5)
    monkeypatch.setattr(gcp_ndjson_blocks, "BLOCK", 1024)
    monkeypatch.setattr(gcp_ndjson_blocks, "ROW_GROUP", 3)
    deliveries = ingest_with(ingest_gcp_files, config(tmp_path, "export"))
    costs = {
        delivery.billing_period: [
            cost for part in delivery.files for cost in pq.read_table(part)["cost"].to_pylist()
        ]
        for delivery in deliveries
    }
    assert costs == {
        "2026-10-12": [number / 4 for number in range(0, 40, 3)] + [10],
        "2026-10-13": [number / 4 for number in range(1, 40, 3)],
        "2026-10-14": [number / 4 for number in range(2, 40, 3)],
    }
