"""FOCUS: file sets in the FinOps Open Cost and Usage Specification, from any provider."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pipeline.ingest.focus import classification
from pipeline.ingest.focus.settings import KEYS, FocusSource, parse_focus
from pipeline.ingest.provider import IngestContext, Ingested, Provider

if TYPE_CHECKING:
    import duckdb

    from pipeline.warehouse.raw_store import Delivery


def _ingest(
    sources: tuple[FocusSource, ...], context: IngestContext, allow_shrink: Iterable[str]
) -> Ingested:
    from pipeline.ingest.focus.files import ingest_focus_files

    return Ingested(ingest_focus_files(sources, context, allow_shrink))


def _register(con: duckdb.DuckDBPyConnection, deliveries: list[Delivery]) -> None:
    from pipeline.ingest.focus.raw import register_focus

    register_focus(con, deliveries)


PROVIDER = Provider(
    name="focus",
    source_format="focus",
    section="focus",
    keys=KEYS,
    parse=parse_focus,
    sources=lambda sources: ["FOCUS files"] if sources else [],
    ingest=_ingest,
    register=_register,
    staging_models=("focus_line_items", "focus_line_profiles", "focus_cost_lines"),
    tag_column="Tags",
    fingerprint=lambda sources: (sources,),
    profile_sources=classification.profile_sources,
    macros=classification.MACROS,
)
