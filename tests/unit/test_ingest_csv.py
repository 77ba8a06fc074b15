"""gzip CSV deliveries, schema drift, and delivery-wide checks (currency, granularity, paths)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from test_ingest_aws import EXPORT, PERIOD, config_for, cur_table, raw_files, write_export

from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.aws.manifest import write_manifest
from pipeline.scenario.cur_csv import csv_cell
from schemas import aws_cur2

DATA = f"data/BILLING_PERIOD={PERIOD}"


def csv_bytes(table: pa.Table, *, extra: dict[str, str] | None = None) -> bytes:
    """A table as the CSV export writes it (JSON maps, ISO times), gzip-compressed."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([*table.column_names, *(extra or {})])
    types = [field.type for field in table.schema]
    for row in table.to_pylist():
        cells = [csv_cell(value, kind) for value, kind in zip(row.values(), types, strict=True)]
        writer.writerow([*cells, *(extra or {}).values()])
    return gzip.compress(text.getvalue().encode(), mtime=0)


def write_csv_export(root: Path, files: dict[str, bytes], *, listed: list[str] | None = None):
    data = root / DATA
    data.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (data / name).write_bytes(content)
    write_manifest(
        root / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json",
        export_name=EXPORT,
        bucket="billing-bucket",
        prefix="cur",
        billing_period=PERIOD,
        execution_id="exec-csv",
        data_keys=[f"{EXPORT}/{DATA}/{name}" for name in (listed or list(files))],
        columns=list(aws_cur2.COLUMNS),
    )
    return root


def test_csv_delivery_is_kept_and_converted_to_the_parquet_schema(tmp_path, caplog):
    table = cur_table(rows=4)
    root = write_csv_export(
        tmp_path / "exports" / EXPORT,
        {"a.csv.gz": csv_bytes(table.slice(0, 2)), "b.csv.gz": csv_bytes(table.slice(2, 2))},
    )

    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert [p.relative_to(delivery.folder).as_posix() for p in delivery.files] == [
        "converted/a.parquet",
        "converted/b.parquet",
    ]
    converted = pa.concat_tables([pq.read_table(path) for path in delivery.files])
    assert converted.schema.equals(aws_cur2.arrow_schema())
    assert converted.equals(table)  # maps are maps, rates stay strings, times are UTC
    assert converted.column("resource_tags").to_pylist()[3] == [("user_attempt_id", "a3")]
    assert converted.column("line_item_blended_rate").type == pa.string()
    assert (delivery.folder / "a.csv.gz").read_bytes() == (root / DATA / "a.csv.gz").read_bytes()
    record = json.loads((delivery.folder / "delivery.json").read_text())
    assert [(f["name"], f["rows"]) for f in record["converted"]] == [
        ("converted/a.parquet", 2),
        ("converted/b.parquet", 2),
    ]
    assert [f["name"] for f in record["files"]] == ["a.csv.gz", "b.csv.gz"]


def test_extra_columns_are_kept_in_raw_and_named_in_the_log(tmp_path, caplog):
    table = cur_table(rows=2)
    root = write_csv_export(
        tmp_path / "exports" / EXPORT,
        {"a.csv.gz": csv_bytes(table, extra={"line_item_new_thing": "x", "bill_other": "y"})},
    )

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert "a.csv.gz: 2 column(s) runcost does not read" in caplog.text
    assert "line_item_new_thing, bill_other" in caplog.text
    assert "line_item_new_thing" not in pq.read_schema(delivery.files[0]).names
    with gzip.open(delivery.folder / "a.csv.gz", "rt") as handle:
        assert "line_item_new_thing" in handle.readline()


def test_extra_parquet_columns_are_noted_and_the_file_kept_whole(tmp_path, caplog):
    table = cur_table(rows=2).append_column("capacity_reservation_status", pa.array(["a", "b"]))
    root = write_export(tmp_path / "exports" / EXPORT, {"x.parquet": table})
    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert "x.parquet: 1 column(s) runcost does not read" in caplog.text
    assert "capacity_reservation_status" in caplog.text
    assert "capacity_reservation_status" in pq.read_schema(delivery.files[0]).names


def test_daily_lines_warn_that_only_tags_can_attribute_them(tmp_path, caplog):
    table = cur_table(rows=2)
    day = datetime(2026, 10, 2, tzinfo=UTC)
    for name in ("line_item_usage_start_date", "line_item_usage_end_date"):
        index = table.schema.get_field_index(name)
        moment = day if name.endswith("start_date") else day.replace(day=3)
        column = pa.array([moment] * 2, type=aws_cur2.ARROW_TYPES["timestamp"])
        table = table.set_column(index, name, column)
    root = write_export(tmp_path / "exports" / EXPORT, {"x.parquet": table})

    with caplog.at_level(logging.WARNING, logger="runcost"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, root, resource_time=False))
    assert "DAILY" not in caplog.text  # without resource_time a daily export is fine

    (tmp_path / "warehouse").rename(tmp_path / "old-warehouse")
    with caplog.at_level(logging.WARNING, logger="runcost"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert f"{EXPORT}-Manifest.json: its lines cover whole days (a DAILY export)" in caplog.text
    assert "only tags can attribute it" in caplog.text
    assert "TIME_GRANULARITY=HOURLY" in caplog.text


# Bad input: each names the object, and nothing is written to raw/ (nor anywhere else).
def _mixed_currencies(root: Path) -> None:
    table = cur_table(rows=2)
    index = table.schema.get_field_index("line_item_currency_code")
    table = table.set_column(index, "line_item_currency_code", pa.array(["USD", "EUR"]))
    write_export(root, {"x.parquet": table})


def _column_count_changes(root: Path) -> None:
    lines = gzip.decompress(csv_bytes(cur_table(rows=3))).decode().splitlines()
    lines[2] = lines[2].rsplit(",", 1)[0]  # the second data row lost its last cell
    write_csv_export(root, {"cut.csv.gz": gzip.compress(("\n".join(lines) + "\n").encode())})


def _truncated_parquet(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table(rows=3)})
    path = root / DATA / "x.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _size_differs(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table()})
    manifest = root / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json"
    body = json.loads(manifest.read_text())
    body["dataFiles"] = [{"key": body["dataFiles"][0], "size": 12}]
    manifest.write_text(json.dumps(body))


def _manifest_entry(entry: str):
    def build(root: Path) -> None:
        write_export(root, {"x.parquet": cur_table()})
        manifest = root / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json"
        body = json.loads(manifest.read_text())
        body["dataFiles"].append(entry)
        manifest.write_text(json.dumps(body))

    return build


def _csv_map_not_json(root: Path) -> None:
    text = gzip.decompress(csv_bytes(cur_table(rows=1))).decode()
    text = text.replace('"{""user_attempt_id"":""a0""}"', "General", 1)
    write_csv_export(root, {"bad.csv.gz": gzip.compress(text.encode())})


def _csv_bad_number(root: Path) -> None:
    rows = list(csv.reader(io.StringIO(gzip.decompress(csv_bytes(cur_table(rows=3))).decode())))
    rows[3][rows[0].index("line_item_unblended_cost")] = "12,50 USD (a value this long is kept)"
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    write_csv_export(root, {"bad.csv.gz": gzip.compress(text.getvalue().encode())})


BAD = {
    "mixed currencies": (
        _mixed_currencies,
        ["Manifest.json: billing period 2026-10 has lines in several currencies ('EUR', 'USD'",
         "conversions are not supported"],
    ),
    "csv column count changes": (
        _column_count_changes,
        ["cut.csv.gz: cannot read it as a CUR CSV export", "re-deliver it"],
    ),
    "truncated parquet": (
        _truncated_parquet,
        ["x.parquet: not a Parquet file (it is cut short: the Parquet footer is missing)"],
    ),
    "manifest size differs": (
        _size_differs,
        ["Manifest.json: lists s3://billing-bucket/", "with 12 bytes, but", "x.parquet has"],
    ),
    "manifest entry with ..": (
        _manifest_entry(f"s3://billing-bucket/cur/data/{EXPORT}/{DATA}/../../../../escaped.parquet"),
        ["Manifest.json: lists s3://", "contains '..'", "nothing was written"],
    ),
    "manifest entry with an absolute path": (
        _manifest_entry("/tmp/escaped.parquet"),
        ["Manifest.json: lists /tmp/escaped.parquet, an absolute path", "nothing was written"],
    ),
    "csv map cell that is not json": (
        _csv_map_not_json,
        ["bad.csv.gz: cannot read it as a CUR CSV export"],
    ),
    "csv money that is not a number": (
        _csv_bad_number,
        ["bad.csv.gz: line 4, column line_item_unblended_cost: "
         "'12,50 USD (a value this long is kept)' is refused"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_names_the_object_and_writes_nothing(tmp_path, case):
    build, expected = BAD[case]
    root = tmp_path / "exports" / EXPORT
    build(root)
    good = write_export(tmp_path / "good" / "a-first-export", {"g.parquet": cur_table()})
    before = sorted(p for p in tmp_path.rglob("*") if "warehouse" not in p.parts)

    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, config_for(tmp_path, good, root))

    for words in expected:
        assert words in str(error.value)
    assert raw_files(tmp_path) == []
    assert sorted(p for p in tmp_path.rglob("*") if "warehouse" not in p.parts) == before
    assert sorted(p.name for p in (tmp_path / "warehouse").iterdir()) == []
