"""Refusals that once said too little: a failed check whose cause is in the bill says the
delivery, file, rows and column to fix; a run that failed is recorded failed."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner
from test_refusals import one_error, redeliver, world
from worlds import manifests, published_hashes

from pipeline.cli.app import main

PARENT = "i-0a2b4c6d8e0f10061"  # the EC2 instance the scenario's EKS pods split


def parent_without_resource_id(table: pa.Table) -> pa.Table:
    """The parent instance's own lines lose line_item_resource_id; its pods' split rows keep
    naming it."""
    column = "line_item_resource_id"
    cells = [None if cell == PARENT else cell for cell in table.column(column).to_pylist()]
    index = table.schema.get_field_index(column)
    return table.set_column(index, table.schema.field(column), pa.array(cells, pa.string()))


def test_null_resource_ids_on_split_parents_name_the_rows_and_the_fix(
    tmp_path: Path, template: Path
):
    config, warehouse = world(tmp_path, template)
    pointer = (warehouse / "CURRENT").read_text(encoding="utf-8")
    before = published_hashes(warehouse)
    data = redeliver(config, parent_without_resource_id)

    result = CliRunner().invoke(main, ["run", "--config", str(config)])

    assert result.exit_code == 1
    first = result.output[result.output.index("error: ") :].splitlines()[0]
    delivery = re.search(r"\(delivery ([^)]+)\)", first)
    assert delivery is not None, first
    assert first == (
        "error: check split_cost_matches_instance failed: 3 row(s) break it, because 9 EC2 "
        "instance line(s) of those hours have no resource id, so the split cost rows find no "
        f"instance line to add up to: runcost-cur 2026-10 (delivery {delivery[1]}), "
        f"{data.name}, rows 923, 924, 925, 944, 945 and 4 more, column "
        'line_item_resource_id is empty. Enable "Include resource IDs" in the CUR export '
        "(split cost allocation data needs them) and let AWS re-deliver the period, or "
        "re-deliver the file as AWS wrote it; first rows:"
    )
    assert one_error(result.output)
    assert "nothing was published; the previous snapshot stays current" in result.output
    assert (warehouse / "CURRENT").read_text(encoding="utf-8") == pointer
    assert published_hashes(warehouse) == before
    assert manifests(warehouse)[-1]["status"] == "failed_checks"
