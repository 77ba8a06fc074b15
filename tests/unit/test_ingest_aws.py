"""AWS CUR 2.0 ingest: deliveries copied into raw/aws/, current.json, and bad inputs refused."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import ingest_with

from pipeline.common.errors import InputError
from pipeline.config.loader import Config
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.aws.manifest import write_manifest
from pipeline.ingest.aws.settings import AwsSettings
from schemas import aws_cur2

EXPORT = "ml-cur"
PERIOD = "2026-10"


def cur_table(
    period: str = PERIOD,
    rows: int = 3,
    drop: tuple[str, ...] = (),
    retype: dict[str, pa.DataType] | None = None,
) -> pa.Table:
    """A small CUR 2.0 table with the real Arrow types (MAP columns, UTC timestamps)."""
    start = datetime.strptime(period + "-01", "%Y-%m-%d").replace(tzinfo=UTC)
    samples = {
        "string": lambda i: f"v{i}",
        "double": lambda i: float(i) + 0.5,
        "timestamp": lambda i: start,
        "map_string": lambda i: [("user_attempt_id", f"a{i}")],
        "map_double": lambda i: [("edp", -0.1)],
    }
    arrays, fields = [], []
    for field in aws_cur2.arrow_schema():
        if field.name in drop:
            continue
        kind = dict(aws_cur2.COLUMNS)[field.name]
        kind_type = (retype or {}).get(field.name, field.type)
        if kind_type != field.type:
            values = [json.dumps({"user_attempt_id": f"a{i}"}) for i in range(rows)]
        elif field.name == "line_item_currency_code":
            values = ["USD"] * rows  # one currency per period, as AWS bills
        elif field.name == "bill_invoice_id":
            values = [""] * rows  # not invoiced yet: an open period, which may shrink
        else:
            values = [samples[kind](i) for i in range(rows)]
        arrays.append(pa.array(values, type=kind_type))
        fields.append(pa.field(field.name, kind_type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_export(
    root: Path,
    tables: dict[str, pa.Table],
    *,
    period: str = PERIOD,
    execution_id: str | None = "exec-0001",
    subfolder: str = "",
    listed: list[str] | None = None,
) -> Path:
    """Write an export folder in the S3 layout; with a manifest unless execution_id is None."""
    data = root / "data" / f"BILLING_PERIOD={period}" / subfolder
    data.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        pq.write_table(table, data / name)
    if execution_id is not None:
        folder = f"{EXPORT}/data/BILLING_PERIOD={period}/" + (f"{subfolder}/" if subfolder else "")
        write_manifest(
            root / "metadata" / f"BILLING_PERIOD={period}" / f"{EXPORT}-Manifest.json",
            export_name=EXPORT,
            bucket="billing-bucket",
            prefix="cur/data",  # a prefix with its own "data" folder must not confuse the mapping
            billing_period=period,
            execution_id=execution_id,
            data_keys=[folder + name for name in (listed or list(tables))],
            columns=list(aws_cur2.COLUMNS),
        )
    return root


def config_for(tmp_path: Path, *locations: Path | str, resource_time: bool = True) -> Config:
    return Config(
        path=None,
        warehouse=tmp_path / "warehouse",
        providers={"aws": AwsSettings(exports=tuple(str(location) for location in locations))},
        resource_time=resource_time,
    )


def raw_files(tmp_path: Path) -> list[str]:
    raw = tmp_path / "warehouse" / "raw"
    return sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*")) if raw.exists() else []


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def export(tmp_path: Path) -> Path:
    return write_export(
        tmp_path / "exports" / EXPORT,
        {
            f"{EXPORT}-00001.snappy.parquet": cur_table(),
            f"{EXPORT}-00002.snappy.parquet": cur_table(rows=2),
        },
    )


def test_manifest_delivery_is_copied_with_delivery_json_and_checksums(tmp_path, export):
    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, export))

    period_dir = tmp_path / "warehouse/raw/aws" / EXPORT / f"BILLING_PERIOD={PERIOD}"
    folder = period_dir / "delivery=exec-0001"
    assert delivery.provider == "aws"
    assert (delivery.export, delivery.billing_period, delivery.delivery_id) == (
        EXPORT,
        PERIOD,
        "exec-0001",
    )
    assert delivery.folder == folder
    assert delivery.new is True
    names = [f"{EXPORT}-00001.snappy.parquet", f"{EXPORT}-00002.snappy.parquet"]
    assert delivery.files == tuple(folder / name for name in names)
    assert (folder / f"{EXPORT}-Manifest.json").read_bytes() == (
        export / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json"
    ).read_bytes()

    record = json.loads((folder / "delivery.json").read_text())
    assert record["export"] == EXPORT
    assert record["billing_period"] == PERIOD
    assert record["delivery_id"] == "exec-0001"
    assert record["execution_id"] == "exec-0001"
    assert record["source_location"] == str(export)
    assert record["manifest"] == f"{EXPORT}-Manifest.json"
    assert datetime.fromisoformat(record["ingested_at"]).tzinfo is not None
    source_dir = export / "data" / f"BILLING_PERIOD={PERIOD}"
    assert [(f["name"], f["size"], f["sha256"], f["rows"]) for f in record["files"]] == [
        (name, (source_dir / name).stat().st_size, sha256(source_dir / name), rows)
        for name, rows in zip(names, [3, 2], strict=True)
    ]
    current = json.loads((period_dir / "current.json").read_text())
    assert current["delivery_id"] == "exec-0001"
    assert current["replaces"] is None
    # Nothing half-written is left beside it.
    assert sorted(p.name for p in period_dir.iterdir()) == ["current.json", "delivery=exec-0001"]


def test_each_delivered_file_is_read_once_for_its_sha256(tmp_path, export, monkeypatch):
    """The sum delivery.json records is the one the check of repeated files compared."""
    from pipeline.ingest import value_rules
    from pipeline.ingest.aws import cur2 as aws_cur2
    from pipeline.warehouse import raw_store

    hashed: list[str] = []

    def counted(path: Path) -> str:
        hashed.append(path.name)
        return sha256(path)

    for module in (aws_cur2, value_rules, raw_store):
        monkeypatch.setattr(module, "sha256_file", counted)
    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, export))
    assert sorted(hashed) == sorted(path.name for path in delivery.files)
    record = json.loads((delivery.folder / "delivery.json").read_text())
    assert [item["sha256"] for item in record["files"]] == [sha256(p) for p in delivery.files]


def test_reingest_copies_nothing_and_returns_the_same(tmp_path, export):
    config = config_for(tmp_path, export)
    [first] = ingest_with(ingest_aws_exports, config)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "warehouse").rglob("*")}

    [second] = ingest_with(ingest_aws_exports, config)

    assert second == dataclasses.replace(first, new=False)
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "warehouse").rglob("*")} == before


def test_second_delivery_becomes_current_and_the_old_one_is_kept(tmp_path, export):
    config = config_for(tmp_path, export)
    ingest_with(ingest_aws_exports, config)
    write_export(
        export, {f"{EXPORT}-00001.snappy.parquet": cur_table(rows=5)}, execution_id="exec-0002"
    )
    (export / "data" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-00002.snappy.parquet").unlink()

    [delivery] = ingest_with(ingest_aws_exports, config)

    period_dir = tmp_path / "warehouse/raw/aws" / EXPORT / f"BILLING_PERIOD={PERIOD}"
    assert delivery.delivery_id == "exec-0002"
    assert delivery.new is True
    assert delivery.files == (period_dir / "delivery=exec-0002" / f"{EXPORT}-00001.snappy.parquet",)
    assert pq.read_metadata(delivery.files[0]).num_rows == 5
    assert (period_dir / "delivery=exec-0001" / "delivery.json").is_file()
    current = json.loads((period_dir / "current.json").read_text())
    assert (current["delivery_id"], current["replaces"]) == ("exec-0002", "exec-0001")


def test_a_run_that_crashed_before_switching_recovers(tmp_path, export):
    config = config_for(tmp_path, export)
    ingest_with(ingest_aws_exports, config)
    write_export(export, {"new.parquet": cur_table()}, execution_id="exec-0002")
    ingest_with(ingest_aws_exports, config)
    period_dir = tmp_path / "warehouse/raw/aws" / EXPORT / f"BILLING_PERIOD={PERIOD}"
    # As if the run had stopped after storing exec-0002 but before current.json named it, and
    # had left a half-copied temp folder behind.
    current = json.loads((period_dir / "current.json").read_text())
    (period_dir / "current.json").write_text(json.dumps({**current, "delivery_id": "exec-0001"}))
    (period_dir / ".tmp-delivery=exec-0003-x").mkdir()

    [delivery] = ingest_with(ingest_aws_exports, config)

    assert (delivery.delivery_id, delivery.new) == ("exec-0002", False)
    assert json.loads((period_dir / "current.json").read_text())["delivery_id"] == "exec-0002"


def test_period_no_longer_in_the_source_stays_current(tmp_path, export):
    config = config_for(tmp_path, export)
    ingest_with(ingest_aws_exports, config)
    write_export(
        export,
        {"next.parquet": cur_table(period="2026-11")},
        period="2026-11",
        execution_id="exec-nov",
    )
    for folder in ("data", "metadata"):
        for path in sorted((export / folder / f"BILLING_PERIOD={PERIOD}").iterdir()):
            path.unlink()
        (export / folder / f"BILLING_PERIOD={PERIOD}").rmdir()

    deliveries = ingest_with(ingest_aws_exports, config)

    assert [(d.billing_period, d.delivery_id, d.new) for d in deliveries] == [
        ("2026-10", "exec-0001", False),
        ("2026-11", "exec-nov", True),
    ]


def test_folder_without_manifest_warns_and_is_read(tmp_path, caplog):
    root = write_export(
        tmp_path / "exports" / EXPORT, {"part-1.parquet": cur_table()}, execution_id=None
    )
    data_dir = root / "data" / f"BILLING_PERIOD={PERIOD}"

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert str(data_dir) in caplog.text
    assert "no manifest" in caplog.text
    listing = [
        [
            "part-1.parquet",
            (data_dir / "part-1.parquet").stat().st_size,
            sha256(data_dir / "part-1.parquet"),
        ]
    ]
    expected_id = hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]
    assert delivery.delivery_id == expected_id
    assert [p.name for p in delivery.files] == ["part-1.parquet"]
    record = json.loads((delivery.folder / "delivery.json").read_text())
    assert (record["manifest"], record["execution_id"]) == (None, None)


def test_create_new_mode_takes_the_newest_subfolder(tmp_path, caplog):
    root = tmp_path / "exports" / EXPORT
    write_export(
        root, {"a.parquet": cur_table(rows=1)}, execution_id=None, subfolder="20261002T010000Z-old"
    )
    write_export(
        root, {"b.parquet": cur_table(rows=4)}, execution_id=None, subfolder="20261003T010000Z-new"
    )

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))

    assert "20261003T010000Z-new" in caplog.text
    assert [p.relative_to(delivery.folder).as_posix() for p in delivery.files] == [
        "20261003T010000Z-new/b.parquet"
    ]
    assert pq.read_metadata(delivery.files[0]).num_rows == 4


def test_create_new_manifest_entries_map_onto_the_subfolder(tmp_path):
    root = write_export(
        tmp_path / "exports" / EXPORT,
        {f"{EXPORT}-00001.snappy.parquet": cur_table()},
        execution_id="abc-123",
        subfolder="20261003T010000Z-abc-123",
    )
    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert delivery.delivery_id == "abc-123"
    assert (
        delivery.files[0].read_bytes()
        == (
            root
            / "data"
            / f"BILLING_PERIOD={PERIOD}"
            / "20261003T010000Z-abc-123"
            / f"{EXPORT}-00001.snappy.parquet"
        ).read_bytes()
    )


def test_resource_id_may_be_missing_when_resource_time_is_off(tmp_path):
    root = write_export(
        tmp_path / "e" / EXPORT, {"x.parquet": cur_table(drop=("line_item_resource_id",))}
    )
    [delivery] = ingest_with(ingest_aws_exports, config_for(tmp_path, root, resource_time=False))
    assert delivery.delivery_id == "exec-0001"


def test_raw_modified_is_detected_with_a_recovery_hint(tmp_path, export):
    config = config_for(tmp_path, export)
    [delivery] = ingest_with(ingest_aws_exports, config)
    delivery.files[0].write_bytes(delivery.files[0].read_bytes()[:-1] + b"X")

    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, config)

    message = str(error.value)
    assert str(delivery.files[0]) in message
    assert "raw/ was modified" in message
    assert "sha256" in message
    assert f"delete {delivery.folder}" in message


def test_export_folders_with_the_same_name_are_refused(tmp_path, export):
    other = write_export(tmp_path / "other" / EXPORT, {"x.parquet": cur_table()})
    with pytest.raises(InputError, match=r"same export name 'ml-cur'.*rename one of the folders"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, export, other))
    assert raw_files(tmp_path) == []


# Each bad input: the message names the file and the fix, and raw/ stays untouched.
def _missing_column(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table(drop=("line_item_resource_id",))})


def _not_parquet(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table()})
    target = root / "data" / f"BILLING_PERIOD={PERIOD}" / "x.parquet"
    target.write_bytes(gzip.compress(b"bill_bill_type,bill_billing_entity\nAnniversary,AWS\n"))


def _manifest_lists_missing_file(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table()}, listed=["x.parquet", "gone.parquet"])


def _invalid_manifest_json(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table()})
    (root / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json").write_text(
        '{"dataFiles": ['
    )


def _map_column_wrong_type(root: Path) -> None:
    write_export(root, {"x.parquet": cur_table(retype={"resource_tags": pa.string()})})


def _timestamp_column_wrong_type(root: Path) -> None:
    table = cur_table()
    index = table.schema.get_field_index("line_item_usage_start_date")
    as_text = pa.array([value.isoformat() for value in table.column(index).to_pylist()])
    table = table.set_column(index, "line_item_usage_start_date", as_text)
    write_export(root, {"x.parquet": table})


def _wrong_billing_period(root: Path) -> None:
    write_export(root, {"ok.parquet": cur_table(), "sep.parquet": cur_table(period="2026-09")})


BAD_INPUTS = {
    "missing required column": (
        _missing_column,
        [
            "x.parquet: column line_item_resource_id is missing",
            'enable "Include resource IDs" (INCLUDE_RESOURCES)',
            "attribution.resource_time = false",
        ],
    ),
    "not parquet": (
        _not_parquet,
        ["x.parquet: not a Parquet file (it is gzip-compressed", "must use Format=PARQUET"],
    ),
    "manifest lists a missing file": (
        _manifest_lists_missing_file,
        [f"{EXPORT}-Manifest.json: lists s3://billing-bucket/", "gone.parquet does not exist"],
    ),
    "invalid manifest json": (
        _invalid_manifest_json,
        [f"{EXPORT}-Manifest.json: manifest is not valid JSON", "remove the broken manifest"],
    ),
    "map column of the wrong type": (
        _map_column_wrong_type,
        ["x.parquet: column resource_tags has type string", "map<string, string>"],
    ),
    "timestamp column of the wrong type": (
        _timestamp_column_wrong_type,
        ["x.parquet: column line_item_usage_start_date has type string", "as a timestamp"],
    ),
    "file of another billing period": (
        _wrong_billing_period,
        ["sep.parquet: its rows are for billing period 2026-09", "BILLING_PERIOD=2026-10"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, case):
    build, expected = BAD_INPUTS[case]
    root = tmp_path / "exports" / EXPORT
    build(root)
    # A good export listed first must not be written either: validation runs before any copy.
    good = write_export(tmp_path / "good" / "a-first-export", {"g.parquet": cur_table()})

    with pytest.raises(InputError) as error:
        ingest_with(ingest_aws_exports, config_for(tmp_path, good, root))

    message = str(error.value)
    for words in expected:
        assert words in message
    assert raw_files(tmp_path) == []


def test_bad_input_after_an_earlier_ingest_leaves_raw_unchanged(tmp_path, export):
    config = config_for(tmp_path, export)
    ingest_with(ingest_aws_exports, config)
    before = raw_files(tmp_path)
    write_export(
        export,
        {"bad.parquet": cur_table(retype={"product": pa.string()})},
        execution_id="exec-0002",
    )

    with pytest.raises(InputError, match="column product has type string"):
        ingest_with(ingest_aws_exports, config)

    assert raw_files(tmp_path) == before


def test_folder_that_is_not_an_export_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"not a CUR 2\.0 export folder"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, tmp_path / "empty"))
    with pytest.raises(InputError, match="no such folder"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, tmp_path / "absent"))
