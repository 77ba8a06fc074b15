"""FOCUS file sets: read each file, split it by billing period, store the periods in raw/focus/."""

from __future__ import annotations

import glob
import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipeline.common.duck import connect
from pipeline.common.errors import InputError
from pipeline.ingest.focus.read import read_focus_file
from pipeline.ingest.focus.settings import DATA_SUFFIXES, FocusSource
from pipeline.ingest.provider import IngestContext, scratch_folder
from pipeline.ingest.redelivery import check_shrink, invoiced
from pipeline.ingest.value_rules import check_distinct_files
from pipeline.warehouse.raw_store import Delivery, RawStore, sha256_file

log = logging.getLogger("runcost")

PROVIDER = "focus"
# Part of every delivery id: a change to how files are read stores the periods afresh.
READER_VERSION = "2"


@dataclass
class _Period:
    """The parts of one billing period of one source, staged as Parquet."""

    parts: list[tuple[Path, str, str]] = field(default_factory=list)  # (part, relative, sha256)
    versions: set[str] = field(default_factory=set)
    rows: int = 0


def ingest_focus_files(
    sources: tuple[FocusSource, ...], context: IngestContext, allow_shrink: Iterable[str] = ()
) -> list[Delivery]:
    """Ingest every configured FOCUS file set into raw/focus/<name>/; return current deliveries.

    ``allow_shrink``: billing periods (YYYY-MM, or NAME/YYYY-MM) whose files may hold far fewer
    rows than the stored period this once (redelivery.py).
    """
    if not sources:
        return []
    store = RawStore(context.warehouse / "raw", PROVIDER)
    with scratch_folder(context.warehouse, "focus-") as staging:
        # DuckDB reads and types the files within memory_limit, spilling beside the staging
        staging.mkdir(parents=True)
        con = connect(settings=context.duckdb_limits(staging / ".spill"))
        try:
            return _ingest(sources, context, store, con, staging, tuple(allow_shrink))
        finally:
            con.close()


def _ingest(
    sources: tuple[FocusSource, ...],
    context: IngestContext,
    store: RawStore,
    con: duckdb.DuckDBPyConnection,
    staging: Path,
    allow_shrink: tuple[str, ...],
) -> list[Delivery]:
    # Read and check every file first: an error leaves raw/ exactly as it was.
    staged: dict[tuple[str, str], _Period] = {}
    listed = {source.name: list_files(source) for source in sources}
    _check_listed_once(listed)
    for source in sources:
        for number, (path, relative) in enumerate(listed[source.name]):
            digest = sha256_file(path)
            scratch = staging / ".typed" / f"{source.name}-{number:05d}.parquet"
            scratch.parent.mkdir(exist_ok=True)

            def part(period: str, name: str = source.name, number: int = number) -> Path:
                # written where the delivery is staged, by the pass that types and checks
                return staging / name / period / f"part-{number:05d}.parquet"

            read = read_focus_file(con, path, relative, source.provider_name, scratch, part)
            periods = list(read.periods)
            for period in periods:
                item = staged.setdefault((source.name, period), _Period())
                item.parts.append((part(period), relative, digest))
                item.versions.add(read.version)
            log.info(
                "%s: FOCUS %s, %d rows, billing periods %s",
                path,
                read.version,
                read.rows,
                ", ".join(periods) or "none",
            )

    shown: dict[tuple[str, str], str] = {}
    new: set[tuple[str, str]] = set()
    by_name = {source.name: source for source in sources}
    for (name, period), item in sorted(staged.items()):  # every check before the first commit
        shown[(name, period)] = _delivery_id(period, by_name[name], item)
        check_shrink(
            store, name, period, shown[(name, period)], [part for part, _r, _d in item.parts],
            by_name[name].pattern, allow_shrink, lambda files: invoiced(files, "InvoiceId"),
            "the provider",
        )  # fmt: skip
    for (name, period), item in sorted(staged.items()):
        source = by_name[name]
        delivery_id = shown[(name, period)]
        if store.has_delivery(name, period, delivery_id):
            store.verify(name, period, delivery_id)
            continue
        folder = staging / ".deliveries" / name / period
        folder.mkdir(parents=True)
        files = []
        for part, relative, _digest in item.parts:
            part.rename(folder / part.name)
            files.append({"name": part.name, "source": relative, "etag": None})
        record = {
            "source_location": source.pattern,
            "focus_versions": sorted(item.versions),
            "provider_name_override": source.provider_name,
            "sources": [
                {"file": relative, "sha256": digest} for _part, relative, digest in item.parts
            ],
            "reader_version": READER_VERSION,
            "delivered_at": None,
        }
        store.commit(name, period, delivery_id, folder, files, [], record)
        new.add((name, period))
    for (name, period), delivery_id in shown.items():
        store.set_current(name, period, delivery_id)

    # Periods no longer in the files stay as stored (an export may rotate old months out).
    kept = [key for key in store.periods() if key[0] in by_name and key not in shown]
    current = dict(shown)
    for export, period in kept:
        delivery_id = store.current_delivery_id(export, period)
        if delivery_id is not None:
            store.verify(export, period, delivery_id, full=False)
            current[(export, period)] = delivery_id
    store.prune(context.raw_retention_days)
    return [
        store.load(export, period, current[(export, period)], new=(export, period) in new)
        for export, period in sorted(current)
    ]


def _check_listed_once(listed: dict[str, list[tuple[Path, str]]]) -> None:
    """Each file once over all sources, and no two files with one content: either would count
    its rows twice. FOCUS defines no row id, so rows equal in every column are not refused (two
    equal charges are valid FOCUS); a whole file repeated is (docs/operations.md)."""
    owner: dict[Path, str] = {}
    for name, files in listed.items():
        for path, _relative in files:
            resolved = path.resolve()
            if resolved in owner and owner[resolved] != name:
                raise InputError(
                    f"{path}: is listed by focus.files entries {owner[resolved]!r} and {name!r}, "
                    "so its rows would be counted twice: narrow one pattern so each file "
                    "belongs to one entry, and run again"
                )
            owner[resolved] = name
    check_distinct_files(
        [(path, str(path)) for files in listed.values() for path, _relative in files],
        "FOCUS files never hold the same rows twice",
        "remove the copy from the folder (or narrow the focus.files pattern)",
    )


def list_files(source: FocusSource) -> list[tuple[Path, str]]:
    """The data files of a source, sorted, each with its name relative to the source's folder."""
    pattern = source.pattern
    base = Path(pattern)
    if base.is_dir():
        found = [
            path
            for path in base.rglob("*")
            if path.is_file()
            and path.name.lower().endswith(DATA_SUFFIXES)
            and not any(part.startswith(".") for part in path.relative_to(base).parts)
        ]
    elif base.is_file():
        found, base = [base], base.parent
    else:
        matched = [Path(item) for item in glob.glob(pattern, recursive=True)]
        found = [path for path in matched if path.is_file()]
        skipped = [path for path in found if not path.name.lower().endswith(DATA_SUFFIXES)]
        if skipped:
            log.info(
                "%s: %d files are not CSV or Parquet and are skipped, e.g. %s",
                pattern,
                len(skipped),
                skipped[0],
            )
        found = [path for path in found if path not in skipped]
        base = _glob_base(pattern)
    if not found:
        raise InputError(
            f"{pattern}: focus.files entry {source.name!r} matches no CSV (.csv, .csv.gz) or "
            "Parquet file; check the path or glob in runcost.toml"
        )
    return [(path, _relative(path, base)) for path in sorted(found)]


def _glob_base(pattern: str) -> Path:
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if any(char in part for char in "*?["):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.name


def _delivery_id(period: str, source: FocusSource, item: _Period) -> str:
    body = json.dumps(
        [READER_VERSION, source.provider_name, period, sorted((r, d) for _p, r, d in item.parts)]
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]
