"""The [focus] section of runcost.toml: FOCUS file sets, each a named source."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.common.errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_GLOB = re.compile(r"[*?\[]")
DATA_SUFFIXES = (".csv", ".csv.gz", ".parquet")
KEYS = frozenset({"files"})


@dataclass(frozen=True)
class FocusSource:
    """One FOCUS file set: a path, folder or glob, its source name, and an optional provider."""

    name: str
    pattern: str  # absolute path or glob
    provider_name: str | None = None


def parse_focus(section: Any, base: Path, where: str) -> tuple[FocusSource, ...]:
    """Validate [focus] files: each a path or glob, or a table {path, name, provider_name}."""
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: [focus] must be a table")
    unknown = sorted(set(section) - {"files"})
    if unknown:
        raise ConfigError(f"{where}: unknown key focus.{unknown[0]}; allowed in [focus]: files")
    files = section.get("files", [])
    if not isinstance(files, list):
        raise ConfigError(f'{where}: focus.files must be a list, such as ["focus/*.csv"]')
    sources: list[FocusSource] = []
    names: dict[str, str] = {}
    for number, item in enumerate(files, start=1):
        what = f"{where}: focus.files[{number}]"
        entry = {"path": item} if isinstance(item, str) else item
        if not isinstance(entry, dict) or set(entry) - {"path", "name", "provider_name"}:
            raise ConfigError(
                f'{what}: must be a path or glob ("focus/aws/*.parquet") or a table '
                '{ path = "...", name = "...", provider_name = "..." }'
            )
        path = entry.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError(f"{what}: path must be a non-empty string (a file, folder or glob)")
        if "://" in path:
            raise ConfigError(
                f"{what}: {path} is not a local path; copy the FOCUS files to a local folder "
                "(reading FOCUS files from object storage is not supported)"
            )
        pattern = _absolute(path, base)
        name = entry.get("name", _default_name(path))
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{what}: name {name!r} must be letters, digits, '.', '_' or '-' (it names "
                'the folder raw/focus/<name>/); set name = "..."'
            )
        if name in names:
            raise ConfigError(
                f"{what}: source name {name!r} is already used by {names[name]}; give one of "
                'them its own name: { path = "...", name = "..." }'
            )
        names[name] = path
        provider = entry.get("provider_name")
        if provider is not None and (not isinstance(provider, str) or not provider.strip()):
            raise ConfigError(f'{what}: provider_name must be a non-empty string, such as "AWS"')
        sources.append(FocusSource(name, pattern, provider))
    return tuple(sources)


def _absolute(path: str, base: Path) -> str:
    candidate = Path(path).expanduser()
    return str(candidate if candidate.is_absolute() else base / candidate)


def _default_name(path: str) -> str:
    """The last path part without glob characters: a data file's stem, else the folder's name."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    parts = [part for part in parts if part not in ("/", ".")]
    globbed = False
    while parts and _GLOB.search(parts[-1]):
        parts.pop()
        globbed = True
    if not parts:
        return "focus"
    last = parts[-1]
    if not globbed and last.lower().endswith(DATA_SUFFIXES):
        last = last.split(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9._-]", "_", last).lstrip("._-") or "focus"
