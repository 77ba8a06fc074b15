"""The macros of FOCUS 1.3 split cost allocation on a cost line: its columns, their absence on the
lines of other sources, and the tags a line is attributed by (expanded by pipeline.dag.macros)."""

from __future__ import annotations

from pipeline.common.macro import Macro, relation_columns

# The FOCUS 1.3 columns a cost line carries, with their types: what a 1.3 file delivers (NULL on
# every other line), and origin_resource_id, the ResourceId of an allocated row whose resource_id
# is the AllocatedResourceId it was allocated to (staging.focus_cost_lines).
ALLOCATED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("allocated_method_id", "varchar"),
    ("allocated_method_details", "varchar"),
    ("allocated_resource_id", "varchar"),
    ("allocated_resource_name", "varchar"),
    ("allocated_tags", "map(varchar, varchar)"),
    ("origin_resource_id", "varchar"),
    ("service_provider_name", "varchar"),
    ("host_provider_name", "varchar"),
    ("contract_applied", "varchar"),
)

# The columns of a relation, in ALLOCATED_COLUMNS order, for a select list.
FOCUS_ALLOCATION_COLUMNS = relation_columns(
    "focus_allocation_columns", (name for name, _kind in ALLOCATED_COLUMNS)
)

# The same columns on a source that has none of them (AWS CUR 2.0, the Google Cloud export),
# typed so its lines union with a FOCUS file's.
NO_FOCUS_ALLOCATION = Macro(
    "no_focus_allocation",
    (),
    ", ".join(f"cast(null as {kind}) as {name}" for name, kind in ALLOCATED_COLUMNS),
)

# The tags a line is attributed by: its tags, with an allocated row's AllocatedTags over them (the
# allocated value wins on a key both hold). The keys are filtered before the maps are joined, so
# no key is ever duplicated: Spark's map_concat refuses duplicate keys unless a session setting
# allows them, and DuckDB's keeps the last; this is the same on both without one.
ATTRIBUTION_TAGS = Macro(
    "attribution_tags",
    ("tags", "allocated_tags"),
    "(case when {allocated_tags} is null then {tags} "
    "else map_concat(map_from_entries(list_filter(map_entries({tags}), "
    "lambda tag_entry: not list_contains(map_keys({allocated_tags}), tag_entry.key))), "
    "{allocated_tags}) end)",
)

ALLOCATED_MACROS = (FOCUS_ALLOCATION_COLUMNS, NO_FOCUS_ALLOCATION, ATTRIBUTION_TAGS)
