"""The published snapshot's telemetry as the merge reads it: its key columns from the Parquet,
the whole table only when the merge keeps some of its rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.common.errors import InputError
from pipeline.telemetry.adapters import table
from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.merge import TABLES, merge
from pipeline.telemetry.published import PublishedTable

START = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)


def telemetry(attempt_ids: list[str], status: str = "succeeded") -> dict[str, pa.Table]:
    return {
        "attempts": table(
            "attempts",
            [
                {"attempt_id": name, "experiment_id": "e1", "status": status, "tags": {"t": "x"}}
                for name in attempt_ids
            ],
        ),
        "attempt_resources": table(
            "attempt_resources",
            [
                {"attempt_id": name, "resource_id": f"i-{name}", "started_at": START}
                for name in attempt_ids
            ],
        ),
        "attempt_events": table("attempt_events", []),
        "experiments": table("experiments", [{"experiment_id": "e1", "team": "nlp"}]),
    }


def published(folder: Path, tables: dict[str, pa.Table]) -> dict[str, PublishedTable]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, found in tables.items():
        pq.write_table(found, folder / f"{name}.parquet")
    return {name: PublishedTable(folder / f"{name}.parquet", name) for name in tables}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The published tables read whole, by name."""
    done: list[str] = []
    read = PublishedTable.read

    def counted(self: PublishedTable) -> pa.Table:
        done.append(self.name)
        return read(self)

    monkeypatch.setattr(PublishedTable, "read", counted)
    return done


def test_a_delivery_that_repeats_every_attempt_reads_only_the_published_keys(
    tmp_path: Path, reads: list[str]
) -> None:
    delivered = telemetry(["a1", "a2"], status="failed")
    merged = merge(
        [("published", published(tmp_path, telemetry(["a1", "a2"]))), ("delivery", delivered)]
    )
    assert reads == []
    for name in TABLES:
        assert merged[name].to_pylist() == delivered[name].to_pylist(), name


def test_published_attempts_the_delivery_leaves_out_are_read_and_kept(
    tmp_path: Path, reads: list[str]
) -> None:
    merged = merge(
        [
            ("published", published(tmp_path, telemetry(["a1", "a2", "a3"]))),
            ("delivery", telemetry(["a2"], status="failed")),
        ]
    )
    assert sorted(reads) == ["attempt_resources", "attempts"]
    attempts = merged["attempts"].to_pylist()
    assert [(row["attempt_id"], row["status"]) for row in attempts] == [
        ("a1", "succeeded"),
        ("a2", "failed"),
        ("a3", "succeeded"),
    ]
    assert [row["resource_id"] for row in merged["attempt_resources"].to_pylist()] == [
        "i-a1",
        "i-a2",
        "i-a3",
    ]


def test_a_snapshot_published_before_a_column_existed_reads_it_as_null(tmp_path: Path) -> None:
    """No tags column: every published attempt is its own canonical record; read whole, the
    table is canonical with empty tags."""
    old = telemetry(["a1", "a2"])
    old["attempts"] = old["attempts"].drop_columns(["tags", "artifact_uri"])
    tables = published(tmp_path, old)
    assert tables["attempts"].column("tags").null_count == 2
    assert tables["attempts"].read().schema == arrow_schema("attempts")
    merged = merge([("published", tables), ("delivery", telemetry(["a2"]))])
    assert [row["tags"] for row in merged["attempts"].to_pylist()] == [[], [("t", "x")]]


def test_a_conflict_with_a_published_attempt_names_both(tmp_path: Path) -> None:
    delivered = telemetry(["a1"])
    tags = pa.array(
        [[("source", "slurm"), ("source_native_id", "7")]],
        delivered["attempts"].schema.field("tags").type,
    )
    delivered["attempts"] = delivered["attempts"].set_column(
        delivered["attempts"].schema.get_field_index("tags"), "tags", tags
    )
    with pytest.raises(InputError, match=r"delivery: attempt id 'a1' .* already used by published"):
        merge([("published", published(tmp_path, telemetry(["a1"]))), ("delivery", delivered)])
