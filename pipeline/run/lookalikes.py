"""Bill tags that look like an attempt or experiment id but are not it: warned after a build."""

from __future__ import annotations

import logging

import duckdb

log = logging.getLogger("runcost")

# The unplaced lines' tags, each with the id it equals once control characters are dropped and
# the text is put in Unicode NFC (telemetry ids are NFC and hold no control character). Only the
# distinct tags of the lines attribution did not place are normalised, not every line's.
_LOOKALIKES = r"""
with tags as (
    select '{kind}' as kind, unplaced.{kind}_tag as tag, count(*) as lines,
        sum(unplaced.billed_cost) as billed_cost
    from attribution.unplaced_lines as unplaced
    where unplaced.{kind}_tag is not null
    group by unplaced.{kind}_tag
),
cleaned as (
    select *, nfc_normalize(regexp_replace(tag, '[\x00-\x1f\x7f]', '', 'g')) as clean
    from tags
)
select cleaned.kind, cleaned.tag, ids.id, cleaned.lines, cleaned.billed_cost
from cleaned
inner join (select distinct {kind}_id as id from staging.attempts) as ids on cleaned.clean = ids.id
where cleaned.tag <> cleaned.clean
"""


def warn_lookalike_tags(con: duckdb.DuckDBPyConnection) -> None:
    """Warn about billing lines left unplaced because their attempt or experiment tag differs
    from a known id only in a control character or in Unicode normalisation."""
    rows = con.execute(
        " union all ".join(
            f"({_LOOKALIKES.format(kind=kind)})" for kind in ("attempt", "experiment")
        )
        + " order by all"
    ).fetchall()
    for kind, tag, known, lines, billed in rows:
        differs = (
            "a control character"
            if any(ord(char) < 32 or ord(char) == 127 for char in tag)
            else "Unicode normalisation (NFD against NFC)"
        )
        log.warning(
            "%d cost line(s) (billed %s) carry the %s tag %s, which differs from %s %r only in "
            "%s, so they were not placed on it; fix the tag where the resources are tagged "
            "(lines already billed keep the tag they were billed with)",
            lines,
            format(billed.normalize(), "f"),
            kind,
            ascii(tag),
            kind,
            known,
            differs,
            extra={"stage": "build"},
        )
