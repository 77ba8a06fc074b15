"""A FOCUS file's column names: its version, duplicates, and the FOCUS column each one reads."""

from __future__ import annotations

import logging
from pathlib import Path

from pipeline.common.errors import InputError
from schemas import focus

log = logging.getLogger("runcost")

# the columns runcost adds to a FOCUS file's rows in raw/ (its file and row), never the file's
SOURCE_FILE, SOURCE_LINE = "runcost_source_file", "runcost_source_line"


def detect_version(names: list[str], path: Path) -> str:
    """The FOCUS version a column set belongs to (newest marker wins), or InputError."""
    found = {canonical(name) for name in names} | set(names)
    folded = {name.lower() for name in found}
    core = {name for name in focus.CORE if name.lower() in folded}
    if len(core) + len({"effectivecost", "listcost"} & folded) < focus.RECOGNISED_AT:
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise InputError(
            f"{path}: no FOCUS version recognised: the columns ({shown}) are not a FOCUS "
            "1.0-1.3 Cost and Usage column set (expected BilledCost, EffectiveCost, ListCost, "
            "BillingPeriodStart, ChargePeriodStart, BillingCurrency, ProviderName, ...). "
            "Export the data as FOCUS; an AWS CUR export goes under aws.exports"
        )
    for version, markers in focus.VERSION_MARKERS:
        if {marker.lower() for marker in markers} & {name.lower() for name in names}:
            return version
    return "1.0"


def check_names(names: list[str], path: Path) -> None:
    seen: dict[str, str] = {}
    for name in names:
        if not name.strip():
            raise InputError(f"{path}: a column has no name; every FOCUS column needs a header")
        if name.lower() in seen:
            raise InputError(
                f"{path}: columns {seen[name.lower()]!r} and {name!r} differ only in case; "
                "keep one of them"
            )
        seen[name.lower()] = name


def canonical(name: str) -> str:
    by_lower = {known.lower(): known for known in focus.KINDS}
    renamed = {old.lower(): new for old, new in focus.RENAMES.items()}
    return by_lower.get(name.lower()) or renamed.get(name.lower()) or name


def map_columns(names: list[str], path: Path) -> tuple[dict[str, str], list[str]]:
    """FOCUS name -> column in the file (case-insensitive, renames and fallbacks applied), and
    the rest."""
    mapping: dict[str, str] = {}
    for name in sorted(names, key=lambda item: item.lower() in {k.lower() for k in focus.RENAMES}):
        known = canonical(name)
        if known in focus.KINDS and known not in mapping:
            mapping[known] = name
    for name, source in focus.FALLBACKS.items():
        if name not in mapping and source in mapping:
            mapping[name] = mapping[source]
    used = set(mapping.values())
    extras = [name for name in names if name not in used and name not in (SOURCE_FILE, SOURCE_LINE)]
    if extras:
        log.info("%s: extra columns kept in raw/ but not read: %s", path, ", ".join(extras))
    return mapping, extras
