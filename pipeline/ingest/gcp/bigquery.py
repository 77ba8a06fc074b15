"""GCP billing export ingest from BigQuery: re-read each changed daily partition into raw/gcp/."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from google.cloud import bigquery

from pipeline.common.errors import InputError
from pipeline.ingest.gcp.bigquery_client import (
    job_project,
    make_client,
    make_read_client,
    query,
    translated,
)
from pipeline.ingest.gcp.bigquery_storage import stream_partition
from pipeline.ingest.gcp.bigquery_table import ExportTable, inspect_table
from pipeline.ingest.gcp.partitions import (
    Fingerprint,
    fetch_sql,
    fingerprints,
    partition_fingerprint,
    scan_range,
)
from pipeline.ingest.gcp.settings import GcpSettings
from pipeline.ingest.gcp.values import check_partition, is_final
from pipeline.ingest.provider import IngestContext, scratch_folder
from pipeline.ingest.redelivery import check_shrink
from pipeline.warehouse.raw_store import DELIVERY_FILE, Delivery, RawStore

log = logging.getLogger("runcost")

PROVIDER = "gcp"
DATA_FILE = "data.parquet"
MAX_READS = 3  # reads of one partition before "it keeps changing" fails the run


@dataclass(frozen=True)
class _Staged:
    """One partition read whole, checked, and written to the staging folder."""

    table: ExportTable
    day: date
    fingerprint: Fingerprint
    reads: int
    folder: Path

    @property
    def delivery_id(self) -> str:
        return self.fingerprint.delivery_id(self.table.columns)


@dataclass
class GcpIngest:
    """The current GCP deliveries, and what this run checked and re-read (for the manifest)."""

    deliveries: list[Delivery] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)

    def manifest(self) -> dict[str, Any]:
        """manifest.json inputs.gcp: per table, the window and each partition's fingerprint."""
        refetched = [
            f"{table['table']}${item['partition']}"
            for table in self.tables
            for item in table["partitions"]
            if item["refetched"]
        ]
        return {"tables": self.tables, "refetched": refetched}


def ingest_gcp_tables(
    settings: GcpSettings,
    context: IngestContext,
    today: date | None = None,
    allow_shrink: Iterable[str] = (),
) -> GcpIngest:
    """Fingerprint the recent daily partitions of every gcp.tables entry, re-read the new and
    changed ones whole, check them, and make them current in raw/gcp/ only once every one was
    read and checked. ``allow_shrink``: partitions (YYYY-MM-DD, or TABLE/YYYY-MM-DD) that may
    hold far fewer rows than the stored partition this once (redelivery.py)."""
    if not settings.tables:
        return GcpIngest()
    store = RawStore(context.warehouse / "raw", PROVIDER)
    with scratch_folder(context.warehouse) as staging:
        return _ingest(
            settings,
            context,
            store,
            staging,
            today or datetime.now(UTC).date(),
            tuple(allow_shrink),
        )


def _ingest(
    settings: GcpSettings,
    context: IngestContext,
    store: RawStore,
    staging: Path,
    today: date,
    allow_shrink: tuple[str, ...],
) -> GcpIngest:
    clients: dict[str, bigquery.Client] = {}
    read_client = None
    staged: list[_Staged] = []
    result = GcpIngest()
    # Read everything first: an error leaves raw/ exactly as it was.
    for table_id in settings.tables:
        project = job_project(settings, table_id)
        if project not in clients:
            clients[project] = make_client(settings, project)
        client = clients[project]
        if read_client is None:  # after make_client, whose error names the credentials' fix
            read_client = make_read_client(settings)
        table = inspect_table(client, table_id)
        stored = _stored(store, table_id)
        first, last = scan_range(settings, sorted(stored), today)
        remote = fingerprints(client, table_id, first, last)
        partitions = []
        for day, fingerprint in sorted(remote.items()):
            known = stored.get(day)
            status = "new" if known is None else "changed"
            if known is not None and known[1] == fingerprint:
                status = "unchanged"
                reads, delivery_id = 0, known[0]
            else:
                folder = staging / f"{len(staged):04d}"
                item = _read_partition(client, table, day, fingerprint, folder, read_client)
                staged.append(item)
                fingerprint, reads, delivery_id = item.fingerprint, item.reads, item.delivery_id
            partitions.append(
                {
                    "partition": day.isoformat(),
                    **fingerprint.as_record(),
                    "status": status,
                    "refetched": reads > 0,
                    "reads": reads,
                    "delivery_id": delivery_id,
                }
            )
        for day in sorted(set(stored) - set(remote)):
            if first <= day <= last:
                log.warning(
                    "%s: partition %s is stored in raw/ but BigQuery no longer has it (partition "
                    "expiration?); the stored copy stays current",
                    table_id,
                    day,
                )
        result.tables.append(
            {
                "table": table_id,
                "kind": table.kind,
                "window": [first.isoformat(), last.isoformat()],
                "partitions": partitions,
            }
        )
        log.info(
            "%s (%s export): %d partitions from %s to %s, %d re-read",
            table_id,
            table.kind,
            len(partitions),
            first,
            last,
            sum(item["refetched"] for item in partitions),
        )

    now = datetime(today.year, today.month, today.day, tzinfo=UTC)
    for item in staged:  # every check passes before the first commit
        table_id, data = item.table.table_id, item.folder / DATA_FILE
        check_partition(data, f"{table_id}${item.day:%Y%m%d}")
        check_shrink(
            store, table_id, item.day.isoformat(), item.delivery_id, [data], table_id,
            allow_shrink, lambda stored: is_final(stored, now, context.settle_days),
            "Google", "partition",
        )  # fmt: skip
    for item in staged:
        export, period = item.table.table_id, item.day.isoformat()
        if store.has_delivery(export, period, item.delivery_id):
            store.verify(export, period, item.delivery_id)  # stored by a run that then died
            continue
        record = {
            "source_location": f"bigquery://{export}",
            "table_kind": item.table.kind,
            "partition": period,
            "fingerprint": item.fingerprint.as_record(),
            "columns": list(item.table.columns),
            "reads": item.reads,
        }
        files = [{"name": DATA_FILE, "source": f"{export}${item.day:%Y%m%d}", "etag": None}]
        store.commit(export, period, item.delivery_id, item.folder, files, [], record)
    for item in staged:
        store.set_current(item.table.table_id, item.day.isoformat(), item.delivery_id)
    store.prune(context.raw_retention_days)

    new = {(item.table.table_id, item.day.isoformat()) for item in staged}
    for export, period in store.periods():
        if export not in settings.tables:
            continue
        delivery_id = store.current_delivery_id(export, period)
        if delivery_id is not None:
            if (export, period) not in new:
                store.verify(export, period, delivery_id, full=False)
            result.deliveries.append(
                store.load(export, period, delivery_id, new=(export, period) in new)
            )
    return result


def _stored(store: RawStore, table_id: str) -> dict[date, tuple[str, Fingerprint | None]]:
    """The current delivery of each stored partition of one table, and its fingerprint."""
    found: dict[date, tuple[str, Fingerprint | None]] = {}
    for export, period in store.periods():
        if export != table_id:
            continue
        delivery_id = store.current_delivery_id(export, period)
        if delivery_id is None:
            continue
        store.verify(export, period, delivery_id, full=False)
        path = store.delivery_folder(export, period, delivery_id) / DELIVERY_FILE
        record = json.loads(path.read_text(encoding="utf-8"))
        found[date.fromisoformat(period)] = (
            delivery_id,
            Fingerprint.from_record(record.get("fingerprint")),
        )
    return found


def _read_partition(
    client: bigquery.Client,
    table: ExportTable,
    day: date,
    before: Fingerprint,
    folder: Path,
    read_client: Any = None,
) -> _Staged:
    """Read one partition whole; read it again while its fingerprint moves under the read."""
    seen = [before]
    for reads in range(1, MAX_READS + 1):
        folder.mkdir(parents=True, exist_ok=True)
        if read_client is not None:  # Arrow batches streamed to Parquet, never whole in memory
            count = stream_partition(read_client, table, day, client.project, folder / DATA_FILE)
        else:
            with translated(client, table.table_id):
                rows = query(
                    client,
                    fetch_sql(table.table_id, table.columns),
                    {"partition": day},
                    table.table_id,
                ).to_arrow(create_bqstorage_client=False)
            pq.write_table(rows, folder / DATA_FILE)
            count = rows.num_rows
            del rows
        after = partition_fingerprint(client, table.table_id, day)
        if after == seen[-1] and count == after.rows:
            return _Staged(table, day, after, reads, folder)
        (folder / DATA_FILE).unlink()
        log.warning(
            "%s: partition %s changed while it was read (%d rows before, %d after); reading "
            "it again",
            table.table_id,
            day,
            seen[-1].rows,
            after.rows,
        )
        seen.append(after)
    counts = " -> ".join(str(item.rows) for item in seen)
    raise InputError(
        f"{table.table_id}: partition {day} kept changing while it was read ({MAX_READS} reads; "
        f"rows {counts}; latest export_time {seen[-1].max_export_time}): the billing export is "
        "still loading this day; nothing was stored, so run again once the load has finished "
        "(schedule the nightly run a few hours after the export's daily load)"
    )
