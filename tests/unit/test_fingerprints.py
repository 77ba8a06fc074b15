"""Fingerprints of a run's inputs: each part moves exactly when what it covers does."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
from builders import attempts_table, resources_table

from pipeline.run.fingerprints import (
    Fingerprints,
    Inputs,
    fingerprints,
    telemetry_files_digest,
    unread_telemetry,
)
from pipeline.telemetry.canonical import empty_table
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery

CLOCK = datetime(2026, 11, 20, 6, tzinfo=UTC)


def _delivery(
    tmp_path: Path, provider: str, period: str, delivered: datetime, name: str = "d"
) -> Delivery:
    folder = tmp_path / provider / period
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "part-0.parquet"
    data.write_bytes(b"rows of " + period.encode())
    body = {
        "delivered_at": delivered.isoformat(),
        "files": [{"name": data.name, "size": data.stat().st_size, "sha256": period * 2}],
    }
    (folder / DELIVERY_FILE).write_text(json.dumps(body), encoding="utf-8")
    return Delivery(provider, "export", period, f"{name}-{period}", folder, (data,), False)


def _telemetry(ended: datetime | None = datetime(2026, 10, 3, tzinfo=UTC)) -> dict[str, pa.Table]:
    start = datetime(2026, 10, 2, tzinfo=UTC)
    return {
        "attempts": attempts_table(
            [{"attempt_id": "a1", "experiment_id": "e1", "started_at": start, "ended_at": ended}]
        ),
        "attempt_resources": resources_table(
            [{"attempt_id": "a1", "resource_id": "i-1", "started_at": start, "ended_at": None}]
        ),
        "attempt_events": empty_table("attempt_events"),
        "experiments": empty_table("experiments"),
    }


def _prints(deliveries: list[Delivery], clock: datetime = CLOCK, **telemetry) -> Fingerprints:
    inputs = Inputs(deliveries, "config-1", None, "files-1", clock, settle_days=3)
    return fingerprints(inputs, _telemetry(**telemetry))


def test_equal_inputs_give_equal_fingerprints_and_nothing_moved(tmp_path: Path) -> None:
    deliveries = [_delivery(tmp_path, "aws", "2026-10", CLOCK - timedelta(days=10))]
    first, second = _prints(deliveries), _prints(deliveries)
    assert first == second and first.moved(second) == []
    assert first.moved(None) == ["no previous fingerprints"]
    assert Fingerprints.from_record(json.loads(json.dumps(first.record()))) == first


def test_a_new_delivery_moves_its_month_and_the_deliveries(tmp_path: Path) -> None:
    october = _delivery(tmp_path, "aws", "2026-10", CLOCK - timedelta(days=10))
    september = _delivery(tmp_path, "aws", "2026-09", CLOCK - timedelta(days=40))
    before = _prints([september, october])
    again = _delivery(tmp_path / "again", "aws", "2026-10", CLOCK - timedelta(days=1), "r1")
    after = _prints([september, again])
    assert after.moved(before) == ["deliveries", "2026-10 aws deliveries"]


def test_late_telemetry_moves_the_months_it_overlaps(tmp_path: Path) -> None:
    deliveries = [
        _delivery(tmp_path, "aws", "2026-09", CLOCK - timedelta(days=40)),
        _delivery(tmp_path, "aws", "2026-10", CLOCK - timedelta(days=10)),
    ]
    before = _prints(deliveries)
    after = _prints(deliveries, ended=datetime(2026, 10, 4, tzinfo=UTC))
    assert after.moved(before) == ["telemetry", "2026-10 telemetry"]


def test_an_interval_held_at_the_clock_puts_the_clock_in_the_fingerprint(tmp_path: Path) -> None:
    deliveries = [_delivery(tmp_path, "aws", "2026-10", CLOCK - timedelta(days=10))]
    ended = _prints(deliveries)
    assert ended.shared["clock"] == "nothing held at the clock"
    assert _prints(deliveries, clock=CLOCK + timedelta(days=1)).moved(ended) == []
    running = _prints(deliveries, ended=None)  # the resource's attempt never ended
    assert running.telemetry_until == "open"
    later = _prints(deliveries, clock=CLOCK + timedelta(days=1), ended=None)
    assert later.moved(running) == ["clock"]


def test_the_clock_moves_a_month_that_ends_and_a_gcp_delivery_that_settles(
    tmp_path: Path,
) -> None:
    gcp = [_delivery(tmp_path, "gcp", "2026-11-10", datetime(2026, 11, 10, tzinfo=UTC))]
    on = _prints(gcp, clock=datetime(2026, 11, 12, tzinfo=UTC))
    assert on.months["2026-11"]["clock"] == "open 0 settled"
    assert _prints(gcp, clock=datetime(2026, 11, 12, 20, tzinfo=UTC)).moved(on) == []
    settled = _prints(gcp, clock=datetime(2026, 11, 14, tzinfo=UTC))
    assert settled.moved(on) == ["2026-11 clock"]
    assert settled.months["2026-11"]["clock"] == "open 1 settled"
    # within two days of the month's end the clock itself is the part: every night builds
    near = _prints(gcp, clock=datetime(2026, 11, 30, 20, tzinfo=UTC))
    assert near.months["2026-11"]["clock"] == "2026-11-30T20:00:00+00:00"
    after = _prints(gcp, clock=datetime(2026, 12, 5, tzinfo=UTC))
    assert after.months["2026-11"]["clock"] == "ended 1 settled"


def test_unread_telemetry_stands_only_for_the_same_files(tmp_path: Path) -> None:
    deliveries = [_delivery(tmp_path, "aws", "2026-10", CLOCK - timedelta(days=10))]
    read = _prints(deliveries)
    same = Inputs(deliveries, "config-1", None, "files-1", CLOCK, settle_days=3)
    assert unread_telemetry(same, read) == read
    other = Inputs(deliveries, "config-1", None, "files-2", CLOCK, settle_days=3)
    assert unread_telemetry(other, read) is None
    adapters = Inputs(deliveries, "config-1", None, "adapters", CLOCK, settle_days=3)
    assert unread_telemetry(adapters, read) is None
    # the bytes moved but the rows did not: no change
    rewritten = replace(read, shared={**read.shared, "telemetry files": "other bytes"})
    assert _prints(deliveries).moved(rewritten) == []


def test_the_telemetry_files_digest_follows_the_bytes_of_canonical_files(tmp_path: Path) -> None:
    (tmp_path / "attempts.csv").write_text("attempt_id\na1\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not telemetry", encoding="utf-8")
    first = telemetry_files_digest(tmp_path, keep_published=True)
    (tmp_path / "notes.txt").write_text("edited", encoding="utf-8")
    assert telemetry_files_digest(tmp_path, keep_published=True) == first
    assert telemetry_files_digest(tmp_path, keep_published=False) != first
    (tmp_path / "attempts.csv").write_text("attempt_id\na2\n", encoding="utf-8")
    assert telemetry_files_digest(tmp_path, keep_published=True) != first
    assert telemetry_files_digest(None, keep_published=True) == "adapters"
