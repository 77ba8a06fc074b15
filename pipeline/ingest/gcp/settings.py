"""The [gcp] section of runcost.toml: BigQuery export tables and export files (docs/gcp*.md)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from pipeline.common.errors import ConfigError
from pipeline.common.values import is_url, string_list


@dataclass(frozen=True)
class GcpSettings:
    """[gcp]: the BigQuery billing export tables to read, and how (docs/gcp-bigquery.md)."""

    tables: tuple[str, ...] = ()  # full ids: project.dataset.gcp_billing_export_[resource_]v1_...
    billing_project: str | None = None  # runs (and pays for) the queries; default: each table's
    window_days: int = 10
    start_date: date | None = None  # the first run backfills from here
    api_endpoint: str | None = None  # a local endpoint (tests); anonymous credentials then
    files: tuple[str, ...] = ()  # BigQuery extract files (NDJSON or Parquet), folders or globs
    read_api: str = "auto"  # "storage" (Storage Read API), "rest" (query result pages) or "auto"
    storage_api_endpoint: str | None = None  # a local Storage Read API host:port (tests)


READ_APIS = ("auto", "storage", "rest")
KEYS = frozenset(
    {
        "files",
        "tables",
        "billing_project",
        "window_days",
        "start_date",
        "api_endpoint",
        "read_api",
        "storage_api_endpoint",
    }
)


def _parse_gcp_files(section: dict[str, Any], base: Path, where: str) -> tuple[str, ...]:
    """gcp.files: BigQuery extract files (NDJSON or Parquet), folders or globs; relative to base."""
    files = string_list(section.get("files", []), f"{where}: gcp.files")
    return tuple(
        str(Path(item).expanduser())
        if Path(item).expanduser().is_absolute()
        else str(base / Path(item).expanduser())
        for item in files
    )


_TABLE_ID = re.compile(r"(?P<project>[a-z][a-z0-9.:-]*[a-z0-9])\.(?P<dataset>\w+)\.(?P<table>\w+)")
_PROJECT_ID = re.compile(r"[a-z][a-z0-9.:-]*[a-z0-9]")
_EXPORT_TABLE = re.compile(r"gcp_billing_export_(?:resource_)?v1_(?P<account>\w+)")


def parse_gcp(section: dict[str, Any], base: Path, where: str) -> GcpSettings:
    """Validate [gcp]; credentials never come from here (Application Default Credentials)."""
    tables = string_list(section.get("tables", []), f"{where}: gcp.tables")
    accounts: dict[str, str] = {}
    for table in tables:
        if not _TABLE_ID.fullmatch(table):
            raise ConfigError(
                f"{where}: gcp.tables: {table!r} is not a full table id; name each export table "
                'as "project.dataset.table", such as '
                '"my-project.billing.gcp_billing_export_resource_v1_01338E_BE3FD6_363B4C"'
            )
        name = table.rsplit(".", 1)[1]
        match = _EXPORT_TABLE.fullmatch(name)
        if match is None:
            continue
        other = accounts.setdefault(match["account"], table)
        if other != table:
            raise ConfigError(
                f"{where}: gcp.tables lists {other} and {table}: the standard and detailed "
                f"exports of billing account {match['account']} hold the same costs, so reading "
                "both would count every cost twice; keep one (the detailed export, "
                "gcp_billing_export_resource_v1_..., has resource names)"
            )
    if len(set(tables)) != len(tables):
        raise ConfigError(f"{where}: gcp.tables lists a table twice")
    billing_project = section.get("billing_project")
    if billing_project is not None and (
        not isinstance(billing_project, str) or not _PROJECT_ID.fullmatch(billing_project)
    ):
        raise ConfigError(
            f'{where}: gcp.billing_project must be a project id, such as "my-billing-project" '
            "(the project that runs and pays for runcost's queries)"
        )
    window = section.get("window_days", 10)
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= 400:
        raise ConfigError(
            f"{where}: gcp.window_days must be a whole number of days from 1 to 400 (how many "
            "recent daily partitions are checked for late rows every run; default 10)"
        )
    start = section.get("start_date")
    if isinstance(start, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", start):
        with contextlib.suppress(ValueError):  # such as month 13: refused below
            start = date.fromisoformat(start)
    if start is not None and (not isinstance(start, date) or hasattr(start, "hour")):
        raise ConfigError(
            f'{where}: gcp.start_date must be a date, YYYY-MM-DD, such as "2026-01-01" '
            "(the first run reads every daily partition from that day on)"
        )
    endpoint = section.get("api_endpoint")
    if endpoint is not None and not is_url(endpoint):
        raise ConfigError(
            f"{where}: gcp.api_endpoint must be an http:// or https:// URL, such as "
            '"http://127.0.0.1:9050" (a local BigQuery endpoint; leave it out for Google\'s)'
        )
    read_api = section.get("read_api", "auto")
    if read_api not in READ_APIS:
        raise ConfigError(
            f'{where}: gcp.read_api must be "auto" (the Storage Read API when '
            'google-cloud-bigquery-storage is installed, else REST), "storage" or "rest"'
        )
    storage = section.get("storage_api_endpoint")
    if storage is not None and (
        not isinstance(storage, str) or not re.fullmatch(r"127\.0\.0\.1:\d+|localhost:\d+", storage)
    ):
        raise ConfigError(
            f"{where}: gcp.storage_api_endpoint must be a local host:port, such as "
            '"127.0.0.1:9060" (a local Storage Read API endpoint, plaintext gRPC; leave it out '
            "for Google's)"
        )
    return GcpSettings(
        tables=tuple(tables),
        read_api=read_api,
        storage_api_endpoint=storage,
        billing_project=billing_project,
        window_days=window,
        start_date=start,
        api_endpoint=endpoint,
        files=_parse_gcp_files(section, base, where),
    )
