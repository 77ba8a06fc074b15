"""Delivery semantics: restated old periods, older deliveries ignored, superseded ones retained."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
from builders import ingest_with
from test_ingest_aws import EXPORT, PERIOD, config_for, cur_table, write_export

from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.warehouse.raw_store import RawStore


def manifest_path(root, period=PERIOD):
    return root / "metadata" / f"BILLING_PERIOD={period}" / f"{EXPORT}-Manifest.json"


def test_a_later_delivery_of_an_older_period_replaces_only_that_period(tmp_path):
    root = tmp_path / "exports" / EXPORT
    write_export(root, {"oct.parquet": cur_table()}, execution_id="oct-1")
    write_export(root, {"nov.parquet": cur_table(period="2026-11")}, period="2026-11",
                 execution_id="nov-1")  # fmt: skip
    config = config_for(tmp_path, root)
    ingest_with(ingest_aws_exports, config)
    (root / "data" / f"BILLING_PERIOD={PERIOD}" / "oct.parquet").unlink()
    write_export(root, {"oct-restated.parquet": cur_table(rows=7)}, execution_id="oct-2")

    deliveries = ingest_with(ingest_aws_exports, config)

    assert [(d.billing_period, d.delivery_id, d.new) for d in deliveries] == [
        ("2026-10", "oct-2", True),
        ("2026-11", "nov-1", False),
    ]
    assert pq.read_metadata(deliveries[0].files[0]).num_rows == 7


def test_an_older_delivery_is_ignored_with_a_note(tmp_path, caplog):
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": cur_table()})
    config = config_for(tmp_path, root)
    [current] = ingest_with(ingest_aws_exports, config)
    # A copy of an older refresh lands (say, a replication lag): its manifest is a day older.
    write_export(root, {"a.parquet": cur_table(rows=1)}, execution_id="exec-0000")
    day_before = (datetime.now(UTC) - timedelta(days=1)).timestamp()
    os.utime(manifest_path(root), (day_before, day_before))

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config)

    assert delivery == dataclasses.replace(current, new=False)
    assert "delivery exec-0000 (delivered " in caplog.text
    assert "is older than the current delivery exec-0001 of 2026-10" in caplog.text
    assert "ignored, the newer one stays current" in caplog.text
    assert not (current.folder.parent / "delivery=exec-0000").exists()


def test_an_older_create_new_refresh_is_ignored(tmp_path, caplog):
    root = tmp_path / "exports" / EXPORT
    write_export(root, {"x.parquet": cur_table()}, execution_id="new",
                 subfolder="20261005T000000Z-new")  # fmt: skip
    config = config_for(tmp_path, root)
    ingest_with(ingest_aws_exports, config)
    for path in sorted((root / "data").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    manifest_path(root).unlink()
    write_export(root, {"x.parquet": cur_table(rows=1)}, execution_id="old",
                 subfolder="20261001T000000Z-old")  # fmt: skip

    with caplog.at_level(logging.WARNING, logger="runcost"):
        [delivery] = ingest_with(ingest_aws_exports, config)

    assert (delivery.delivery_id, delivery.new) == ("new", False)
    assert "delivery old (delivered 2026-10-01T00:00:00+00:00) is older" in caplog.text


def test_superseded_deliveries_stay_until_the_retention_removes_them(tmp_path):
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": cur_table()})
    config = config_for(tmp_path, root)
    [first] = ingest_with(ingest_aws_exports, config)
    write_export(root, {"a.parquet": cur_table(rows=2)}, execution_id="exec-0002")
    [second] = ingest_with(ingest_aws_exports, config)
    assert first.folder.is_dir()  # default retention: 90 days
    current = json.loads((second.folder.parent / "current.json").read_text())
    assert list(current["superseded"]) == ["exec-0001"]

    store = RawStore(tmp_path / "warehouse" / "raw", "aws")
    assert store.prune(90, now=datetime.now(UTC) + timedelta(days=89)) == []
    assert store.prune(90, now=datetime.now(UTC) + timedelta(days=91)) == [first.folder]

    assert not first.folder.exists()
    assert second.folder.is_dir()
    assert store.prune(0, now=datetime.now(UTC) + timedelta(days=10_000)) == []  # never current


def test_zero_retention_removes_the_superseded_delivery_at_once(tmp_path):
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": cur_table()})
    config = dataclasses.replace(config_for(tmp_path, root), raw_retention_days=0)
    [first] = ingest_with(ingest_aws_exports, config)
    write_export(root, {"a.parquet": cur_table(rows=2)}, execution_id="exec-0002")

    [second] = ingest_with(ingest_aws_exports, config)

    assert not first.folder.exists()
    assert [p.name for p in second.folder.parent.glob("delivery=*")] == ["delivery=exec-0002"]
