"""A stored delivery file with a page that does not decode, named when the build reads it: the
delivered CUR file that ingest stored as delivered, and a GCP or FOCUS file damaged in raw/."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from damaged_pages import BAD_PAGE, break_page
from focus_world import write_azure_parquet
from test_gcp_files import config as gcp_config
from test_gcp_files import row, write_ndjson
from test_ingest_aws import EXPORT, PERIOD, config_for, cur_table, write_export
from test_ingest_focus import config as focus_config

from pipeline.common.duck import connect
from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.ingest.gcp.ndjson import read_ndjson
from pipeline.run.sources import TELEMETRY_TABLES, register_sources
from pipeline.telemetry.canonical import empty_table
from pipeline.warehouse.raw_store import Delivery
from pipeline.warehouse.undecodable import name_undecodable

UNCHANGED = "nothing was published; the current snapshot stays current"


def read_every_source(deliveries: list[Delivery]) -> None:
    """What the build does with the stored files: register them and read them through."""
    con = connect()
    register_sources(con, deliveries, {name: empty_table(name) for name in TELEMETRY_TABLES})
    for view in ("raw.aws_cur2", "raw.gcp_billing", "raw.focus_billing"):
        try:
            con.execute(f"select * from {view}").fetchall()
        except duckdb.Error as error:
            name_undecodable(con, error)
            raise


def aws(tmp_path: Path) -> tuple[list[Delivery], Path]:
    """A delivered file whose page of a column ingest does not decode is corrupt."""
    root = tmp_path / "exports" / EXPORT
    write_export(root, {"x.parquet": cur_table(rows=50)})
    delivered = root / f"data/BILLING_PERIOD={PERIOD}/x.parquet"
    break_page(delivered, "product_instance_type")
    return ingest_with(ingest_aws_exports, config_for(tmp_path, root)), delivered


def gcp(tmp_path: Path) -> tuple[list[Delivery], Path]:
    rows = [row(cost=index + 1) for index in range(50)]  # distinct: a repeated row is refused
    table, _lines = read_ndjson(write_ndjson(tmp_path / "rows.json", rows), ())
    path = tmp_path / "gcp" / "a.parquet"
    path.parent.mkdir()
    pq.write_table(table, path)
    return ingest_with(ingest_gcp_files, gcp_config(tmp_path, "gcp/*.parquet")), path


def focus(tmp_path: Path) -> tuple[list[Delivery], Path]:
    path = write_azure_parquet(tmp_path / "focus" / "a.parquet")
    return ingest_with(ingest_focus_files, focus_config(tmp_path, "focus/a.parquet")), path


def test_a_delivered_cur_file_is_named_with_its_column_and_the_fix(tmp_path: Path) -> None:
    deliveries, delivered = aws(tmp_path)
    (delivery,) = deliveries
    (stored,) = delivery.files

    with pytest.raises(InputError) as caught:
        read_every_source(deliveries)

    assert str(caught.value) == (
        f"{delivered}: column product_instance_type cannot be read through ({BAD_PAGE}), so the "
        f"delivered file is damaged (stored as delivered in {stored}, delivery exec-0001 of "
        f"{EXPORT} {PERIOD}): re-deliver the file as AWS wrote it (copy it again from the "
        f"export's bucket and delete {delivery.folder}, or wait for the export's next delivery "
        f"of the period, which replaces it) and run again; {UNCHANGED}"
    )


# currency: the first column of the stored GCP files read, by register_sources itself
STORED = {"gcp": (gcp, "currency"), "focus": (focus, "BilledCost")}


@pytest.mark.parametrize("provider", list(STORED))
def test_a_stored_file_damaged_in_raw_is_named_as_raw_modified(tmp_path: Path, provider: str):
    """GCP and FOCUS files are decoded whole at ingest; a page that fails later was damaged in
    raw/ after storing (its sha256 tells), which raw/'s own message names with the recovery."""
    ingest, column = STORED[provider]
    deliveries, _source = ingest(tmp_path)
    (delivery,) = deliveries
    stored = delivery.files[0]
    break_page(stored, column)

    with pytest.raises(InputError) as caught:
        read_every_source(deliveries)

    folder = delivery.folder
    assert str(caught.value) == (
        f"{stored}: raw/ was modified: the file no longer matches its recorded sha256 (see "
        f"{folder / 'delivery.json'}); deliveries in raw/ are immutable. To recover, restore the "
        f"folder from a backup, or delete {folder} and run again with the export folder that "
        "still holds this delivery, so it is copied afresh"
    )


@pytest.mark.parametrize("provider", list(STORED))
def test_a_file_stored_damaged_is_named_with_its_source(tmp_path: Path, provider: str):
    """The stored file matches its record but does not decode: runcost wrote it so."""
    ingest, column = STORED[provider]
    deliveries, _source = ingest(tmp_path)
    (delivery,) = deliveries
    stored = delivery.files[0]
    break_page(stored, column)
    record_path = delivery.folder / "delivery.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    (entry,) = [item for item in record["files"] if item["name"] == stored.name]
    entry["sha256"] = hashlib.sha256(stored.read_bytes()).hexdigest()
    record_path.write_text(json.dumps(record), encoding="utf-8")

    with pytest.raises(InputError) as caught:
        read_every_source(deliveries)

    assert str(caught.value) == (
        f"{stored} (delivery {delivery.delivery_id} of {delivery.export} "
        f"{delivery.billing_period}, written from {entry['source']}): column {column} cannot be "
        f"read through ({BAD_PAGE}), so runcost stored it damaged (a disk or memory fault): "
        f"delete {delivery.folder} and run again with the export's files still holding the "
        f"period, so it is stored afresh; {UNCHANGED}"
    )


def test_whole_files_or_an_error_of_the_sql_leave_the_error_as_it_is(tmp_path: Path) -> None:
    deliveries, _source = gcp(tmp_path)
    con = connect()
    register_sources(con, deliveries, {name: empty_table(name) for name in TELEMETRY_TABLES})
    # every file decodes: the build's own error stands
    assert name_undecodable(con, duckdb.InvalidInputException("x")) is None
    break_page(deliveries[0].files[0], "cost")
    # an error of the SQL is never a file's: no file is read to look
    assert name_undecodable(con, duckdb.BinderException("no column x")) is None
    with pytest.raises(InputError, match="raw/ was modified"):
        name_undecodable(con, duckdb.InvalidInputException("x"))
    # a build of given tables has no registered files
    assert name_undecodable(connect(), duckdb.InvalidInputException("x")) is None
