"""Bill tags holding a control character, which no attempt or experiment id holds: warned after a
build, naming the first such line's file, row and tag key."""

from __future__ import annotations

import logging
from decimal import Decimal

import duckdb

from pipeline.dag.macros import expand_macros
from pipeline.ingest.registry import PROVIDERS
from pipeline.run.carry import in_months
from pipeline.telemetry.conversion import ID_CONTROLS, control_character

log = logging.getLogger("runcost")

# How each source format names the column its tags come from (the key is the tag's own).
TAG_COLUMNS = {provider.source_format: provider.tag_column for provider in PROVIDERS}

# The lines whose attribution tag of one kind holds a control character: how many, what they
# were billed, and the first by file and row, with the key its tag was read under and the known id
# the tag names once the control characters are dropped (NULL when none). Telemetry refuses ids
# holding one, so such a tag never matches. Every line's tags are searched: 1.0 CPU s for both
# kinds at 10M lines (load 9 on 2 CPUs); leaving out first the tags that name a known id (which
# hold none) took 1.25. The key is found as the tag was read (nfc_text).
_CONTROL_TAGS = r"""
with flagged as (
    select
        cost_lines.source_delivery,
        cost_lines.source_file,
        cost_lines.source_line,
        cost_lines.source_format,
        cost_lines.{kind}_tag as tag,
        list_filter(
            map_keys(cost_lines.tags),
            lambda tag_key: nfc_text(cost_lines.tags[tag_key]) = cost_lines.{kind}_tag
        )[1] as tag_key,
        cost_lines.billed_cost
    from normalized.cost_lines as cost_lines
    where regexp_matches(cost_lines.{kind}_tag, '{controls}') and {built}
),

first_line as (
    select * from flagged order by source_delivery, source_file, source_line limit 1
)

select
    deliveries.export_name,
    deliveries.billing_period,
    first_line.source_delivery,
    first_line.source_file,
    first_line.source_line,
    first_line.source_format,
    first_line.tag_key,
    first_line.tag,
    (
        select min(known.id) from ({known}) as known(id)
        where known.id = nfc_normalize(regexp_replace(first_line.tag, '{controls}', '', 'g'))
    ) as known_id,
    (select count(*) from flagged) as lines,
    (select sum(flagged.billed_cost) from flagged) as billed_cost
from first_line
left join raw.billing_deliveries as deliveries
    on first_line.source_delivery = deliveries.delivery_id
"""
# the ids a tag of each kind may name (as tag_matches reads them)
_KNOWN = {
    "attempt": "select attempts.attempt_id from staging.attempts as attempts",
    "experiment": "select attempts.experiment_id from staging.attempts as attempts union "
    "select experiments.experiment_id from staging.experiments as experiments",
}


def warn_lookalike_tags(
    con: duckdb.DuckDBPyConnection, built: tuple[str, ...] | None = None
) -> None:
    """Warn about billing lines whose attempt or experiment tag holds a control character, in
    the billing months the night built (``built``; None: every month): a carried month's lines
    were warned about the night it was built.

    Warned, not refused: the tag is on a billed line, which the bill keeps as billed, so a refusal
    would stop every later run (and anyone able to tag a resource could stop them); the line is
    placed as an untagged line is, and its cost stays in the totals.
    """
    for kind in ("attempt", "experiment"):
        sql = _CONTROL_TAGS.format(
            kind=kind,
            controls=ID_CONTROLS,
            known=_KNOWN[kind],
            built=in_months("cost_lines.billing_period", built),
        )
        row = con.execute(expand_macros(sql, "look-alike tags")).fetchone()
        if row is not None:
            log.warning("%s", _message(kind, *row), extra={"stage": "build"})


def _message(
    kind: str,
    export: str | None,
    period: str | None,
    delivery: str,
    source_file: str,
    source_line: int,
    source_format: str,
    tag_key: str | None,
    tag: str,
    known_id: str | None,
    lines: int,
    billed_cost: Decimal,
) -> str:
    column = TAG_COLUMNS.get(source_format, "tags")
    where = f"{column}[{tag_key!r}]" if tag_key else column
    names = f"; without it the tag names {kind} {known_id!r}" if known_id else ""
    billed = format(billed_cost.normalize(), "f")
    if str(source_file).startswith("converted/"):  # a CUR CSV's line 1 is its header
        place = f"the CSV converted to {source_file}: line {source_line + 2}"
    else:
        place = f"{source_file}: row {source_line + 1}"
    delivery_of = f"{export} {period} (delivery {delivery}), " if export else ""
    return (
        f"{delivery_of}{place}, column {where}: the {kind} tag {tag!a} holds "
        f"the control character {control_character(tag)}, which no {kind} id holds, so the "
        f"line is not placed by its tag{names} ({lines} line(s), billed {billed}, carry "
        f"{kind} tags with control characters; the first is named); remove the character "
        "where the resources are tagged (lines already billed keep the tag they were billed "
        "with)"
    )
