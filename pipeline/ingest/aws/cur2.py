"""AWS CUR ingest: download each new delivery, check and convert it, store it in raw/aws/."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.common.errors import InputError
from pipeline.ingest.aws.convert import (
    convert_all,
    file_format,
    needs_conversion,
    unreadable_footer,
)
from pipeline.ingest.aws.plan import Planned, periods, plan
from pipeline.ingest.aws.settings import AwsSettings
from pipeline.ingest.aws.validate import (
    check_columns,
    check_delivery,
    check_magic,
    check_period,
    note_extra_columns,
)
from pipeline.ingest.aws.values import DataFile, check_distinct_files, check_values
from pipeline.ingest.export_source import ExportSource, LocalExportSource, SourceFile
from pipeline.ingest.provider import IngestContext, scratch_folder
from pipeline.ingest.redelivery import check_shrink
from pipeline.warehouse.raw_store import Delivery, RawStore, safe_name, sha256_file

log = logging.getLogger("runcost")

PROVIDER = "aws"
CONVERTED = "converted"

__all__ = ["Delivery", "ExportSource", "LocalExportSource", "SourceFile", "ingest_aws_exports"]


@dataclass
class _Staged:
    """A new delivery downloaded, checked and converted in the staging folder."""

    planned: Planned
    folder: Path
    files: list[dict[str, object]]
    converted: list[dict[str, object]]
    data: list[Path]  # the Parquet files queries will read


def ingest_aws_exports(
    settings: AwsSettings, context: IngestContext, allow_shrink: Iterable[str] = ()
) -> list[Delivery]:
    """Ingest every new delivery of the [aws] exports into raw/aws/; return the current ones.

    ``allow_shrink``: periods whose re-delivery may empty or shrink them this once.
    """
    store = RawStore(context.warehouse / "raw", PROVIDER)
    sources = open_sources(settings)
    with scratch_folder(context.warehouse) as staging:
        return _ingest(context, store, sources, staging, tuple(allow_shrink))


def _ingest(
    context: IngestContext,
    store: RawStore,
    sources: list[ExportSource],
    staging: Path,
    allow_shrink: tuple[str, ...],
) -> list[Delivery]:
    # Download, check and convert everything first: an error leaves raw/ exactly as it was.
    staged: list[_Staged] = []
    shown: dict[tuple[str, str], str] = {}
    for source in sources:
        found = periods(source)
        # an S3 prefix with no object is a wrong bucket, prefix or export name; a local folder
        # may be made before the first delivery (night one: estimates from telemetry alone)
        empty_s3 = str(source.location).startswith("s3://") and not found
        if empty_s3 and not source.list_files(""):
            raise InputError(
                f"{source.location}: the export holds no files; aws.exports must name the "
                "export's own folder or prefix (<prefix>/<export-name>, holding data/ and "
                "metadata/): check the bucket, prefix and export name, and that AWS has "
                "delivered it"
            )
        for period in found:
            planned = plan(source, period, store)
            if planned is None or _is_older(store, planned):
                continue
            key = (source.export_name, planned.period)
            shown[key] = planned.delivery_id
            if store.has_delivery(*key, planned.delivery_id):
                store.verify(*key, planned.delivery_id)
            elif planned.known:
                raise InputError(f"{planned.where}: raw/ was modified: its delivery is missing")
            else:
                staged.append(_stage(planned, staging / f"{len(staged):04d}", context))
    kept = [key for key in store.periods() if key not in shown]
    kept_ids = {key: store.current_delivery_id(*key) for key in kept}
    for (export, period), delivery_id in kept_ids.items():
        if delivery_id is not None:
            store.verify(export, period, delivery_id, full=False)
    for item in staged:  # every check passes before the first commit
        planned = item.planned
        check_shrink(
            store, planned.source.export_name, planned.period, planned.delivery_id, item.data,
            planned.where, allow_shrink,
        )  # fmt: skip

    new = set()
    for item in staged:
        planned = item.planned
        export = planned.source.export_name
        record = {
            "source_location": planned.source.location,
            "execution_id": planned.execution_id,
            "delivered_at": planned.delivered_at.isoformat() if planned.delivered_at else None,
            "manifest": None,
            "manifest_source": None,
        }
        if planned.manifest is not None:
            key, file, _content = planned.manifest
            record["manifest"] = Path(key).name
            record["manifest_source"] = {"key": key, "etag": file.etag, "size": file.size}
        store.commit(
            export, planned.period, planned.delivery_id, item.folder, item.files,
            item.converted, record,
        )  # fmt: skip
        store.set_current(export, planned.period, planned.delivery_id)
        new.add((export, planned.period))
    # What the source shows now is current (a no-op when it already is), so a run that crashed
    # between storing a delivery and switching to it recovers on the next run.
    for (export, period), delivery_id in shown.items():
        store.set_current(export, period, delivery_id)
    store.prune(context.raw_retention_days)

    current = {**{key: value for key, value in kept_ids.items() if value}, **shown}
    return [
        store.load(export, period, current[(export, period)], new=(export, period) in new)
        for export, period in sorted(current)
    ]


def open_sources(settings: AwsSettings) -> list[ExportSource]:
    """One source per aws.exports entry: a local folder or s3://bucket/prefix/export-name."""
    sources: list[ExportSource] = []
    names: dict[str, str] = {}
    for location in settings.exports:
        source = _open_source(location, settings)
        if source.export_name in names:
            raise InputError(
                f"{location}: has the same export name {source.export_name!r} as "
                f"{names[source.export_name]}; both would be stored in "
                f"raw/aws/{source.export_name}/, so rename one of the folders"
            )
        names[source.export_name] = location
        sources.append(source)
    return sources


def _open_source(location: str, settings: AwsSettings) -> ExportSource:
    if location.startswith("s3://"):
        from pipeline.ingest.aws.s3_source import S3ExportSource  # boto3 only when S3 is used

        return S3ExportSource(location, endpoint_url=settings.endpoint_url, region=settings.region)
    if "://" in location:
        scheme = location.split("://", 1)[0]
        raise InputError(
            f"{location}: reading {scheme}:// locations is not supported; list an s3:// URI "
            "or a local copy of the export in aws.exports"
        )
    root = Path(location)
    if not root.is_dir():
        raise InputError(
            f"{location}: no such folder; aws.exports must name a local copy of a CUR export "
            "(the folder that holds data/ and metadata/) or an s3://bucket/prefix/export URI"
        )
    if not any(child.is_dir() for child in root.iterdir()):
        raise InputError(
            f"{location}: not a CUR 2.0 export folder (no data/BILLING_PERIOD=YYYY-MM/ "
            "inside); point aws.exports at the export's own folder, <prefix>/<export-name>"
        )
    return LocalExportSource(root)


def _is_older(store: RawStore, planned: Planned) -> bool:
    """A delivery older than the period's current one is never applied over it."""
    export = planned.source.export_name
    current = store.current_delivery_id(export, planned.period)
    if current is None or current == planned.delivery_id or planned.delivered_at is None:
        return False
    current_at = store.delivered_at(export, planned.period, current)
    if current_at is None or planned.delivered_at >= current_at:
        return False
    log.warning(
        "%s: delivery %s (delivered %s) is older than the current delivery %s of %s "
        "(delivered %s); ignored, the newer one stays current",
        planned.where,
        planned.delivery_id,
        planned.delivered_at.isoformat(),
        current,
        planned.period,
        current_at.isoformat(),
    )
    return True


def _stage(planned: Planned, folder: Path, context: IngestContext) -> _Staged:
    """Download every file of a delivery, check it, and convert CSV and legacy CUR to Parquet."""
    source = planned.source
    folder.mkdir(parents=True)
    files: list[dict[str, object]] = []
    downloaded: list[DataFile] = []
    parquet: list[tuple[Path, str]] = []
    to_convert: list[tuple[Path, Path, str]] = []
    for name, file in planned.files:
        target = folder / safe_name(name)
        if not target.resolve().is_relative_to(folder.resolve()):
            raise InputError(f"{source.describe(file.key)}: not a safe file name for raw/")
        where = source.describe(file.key)
        target.parent.mkdir(parents=True, exist_ok=True)
        source.download(file, target)
        size = target.stat().st_size
        if size != file.size:
            raise InputError(
                f"{where}: downloaded {size} bytes, but the object has {file.size} bytes; "
                "the delivery changed while it was read: run again"
            )
        # Without a manifest the id is made of sha256 sums: the copy must still match. The sum
        # is computed once: for this, for the check of repeated files and for delivery.json
        digest = sha256_file(target)
        local = isinstance(source, LocalExportSource) and planned.manifest is None
        if local and digest != source.fingerprint(file):
            raise InputError(
                f"{where}: the file changed while it was being ingested; "
                "run again once the export has finished writing"
            )
        files.append({"name": name, "source": where, "etag": file.etag, "sha256": digest})
        downloaded.append(DataFile(target, where))
        if name.endswith(".parquet"):
            check_magic_file(target, where)
        if needs_conversion(target, where):
            converted = Path(CONVERTED) / f"{name.rsplit('.', 2)[0]}.parquet"
            converted_path = folder / safe_name(converted.as_posix())
            converted_path.parent.mkdir(parents=True, exist_ok=True)
            to_convert.append((target, converted_path, where))
        else:
            _check_parquet(target, where, planned.period, context)
            parquet.append((target, where))

    check_distinct_files(downloaded, [str(item["sha256"]) for item in files])

    def check(schema: pa.Schema, where: str) -> None:
        check_columns(schema, where, context)

    results = convert_all(to_convert, check)
    converted_entries: list[dict[str, object]] = []
    for (original, _target, where), result in zip(to_convert, results, strict=True):
        check_period(result.path, pq.read_metadata(result.path), where, planned.period)
        note_extra_columns(list(result.extras), where)
        converted_entries.append(
            {"name": result.path.relative_to(folder).as_posix(), "from": original.name}
        )
    if to_convert and parquet:
        raise InputError(
            f"{planned.where}: the delivery mixes Parquet and CSV (or legacy CUR) files; a "
            "delivery holds one format, so re-deliver it"
        )
    data_files = [result.path for result in results] or [path for path, _ in parquet]
    checked = [
        DataFile(result.path, where, True)
        for (_s, _t, where), result in zip(to_convert, results, strict=True)
    ]
    may_round = check_values(checked or [DataFile(path, where) for path, where in parquet])
    check_delivery(data_files, planned.where, planned.period, context, may_round)
    if planned.manifest is not None:
        key, _file, content = planned.manifest
        if content is not None:
            (folder / safe_name(Path(key).name)).write_bytes(content)
    return _Staged(planned, folder, files, converted_entries, data_files)


def check_magic_file(path: Path, where: str) -> None:
    """A .parquet file must be whole Parquet (magic bytes at both ends)."""
    with path.open("rb") as handle:
        check_magic(handle, path.stat().st_size, where)


def _check_parquet(path: Path, where: str, period: str, context: IngestContext) -> None:
    """Check one CUR 2.0 Parquet file from its footer only: format, columns, types, period."""
    if file_format(path) != "parquet":
        check_magic_file(path, where)
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as error:
        raise unreadable_footer(where, error) from error
    check_columns(schema, where, context)
    check_period(path, parquet.metadata, where, period)
    note_extra_columns(list(schema.names), where)
