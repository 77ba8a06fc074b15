"""A delivered CUR Parquet file whose footer reads but a page of a column ingest does not decode
is corrupt: the build that reads it fails, and the run names the delivered file, the column and
the fix in one line, publishing nothing; the whole copy is read once the damaged one is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from damaged_pages import BAD_PAGE, break_page
from test_refusals import one_error, redeliver, world
from worlds import manifests, published_hashes, run_in_process

from pipeline.cli.app import main


@pytest.mark.parametrize("column", ["product_instance_type", "resource_tags"])
def test_a_corrupt_page_ingest_does_not_decode_is_named_with_the_fix(
    tmp_path: Path, template: Path, column: str
):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    data = redeliver(config, lambda table: table)
    whole = data.read_bytes()
    break_page(data, column)
    folder = warehouse / "raw/aws/runcost-cur/BILLING_PERIOD=2026-10/delivery=restated-1"

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    assert one_error(result.output) == (
        f"error: {data}: column {column} cannot be read through ({BAD_PAGE}), so the delivered "
        f"file is damaged (stored as delivered in {folder / data.name}, delivery restated-1 of "
        "runcost-cur 2026-10): re-deliver the file as AWS wrote it "
        f"(copy it again from the export's bucket and delete {folder}, or wait for the "
        "export's next delivery of the period, which replaces it) and run again; nothing was "
        "published; the current snapshot stays current"
    )
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    record = manifests(warehouse)[-1]
    assert record["status"] == "failed"
    assert record["error"].startswith(f"InputError: {data}: column {column} cannot be read")

    data.write_bytes(whole)  # the operator copies the file again and removes the damaged one
    shutil.rmtree(folder)
    assert run_in_process(config) == "published", "the whole copy is read"
    runs = manifests(warehouse)
    assert runs[-1]["totals"] == runs[0]["totals"]
