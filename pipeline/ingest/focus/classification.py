"""How FOCUS rows are classified: a FOCUS file carries the profile's columns under their own
names, but the few its staging view computes; and a row's unit (the rules its staging models
call, expanded by pipeline.dag.macros as every rule)."""

from __future__ import annotations

from pipeline.common.macro import Macro

# The profile columns staging.focus_line_profiles computes from a FOCUS file's own columns (the
# provider from provider_name); a FOCUS profile's other columns are the file's.
_FOCUS_COMPUTED = (
    "provider",
    "provider_line_type",
    "instance_type",
    "resource_class",
    "source_format",
)


def profile_sources(profile_columns: tuple[str, ...]) -> tuple[str, ...]:
    """The profile columns a FOCUS file carries itself: all but those its view computes."""
    return tuple(column for column in profile_columns if column not in _FOCUS_COMPUTED)


# A FOCUS row's unit in lower case, its consumed unit before its pricing unit: usage seconds read
# hours from it (staging.focus_cost_lines), the resource class its kind (focus_line_profiles).
FOCUS_UNIT = Macro(
    "focus_unit",
    ("relation",),
    "lower(coalesce({relation}.consumed_unit, {relation}.pricing_unit, ''))",
    relations=("relation",),
)

MACROS = (FOCUS_UNIT,)
