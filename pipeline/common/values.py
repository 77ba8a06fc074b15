"""Small value checks shared by the runcost.toml section parsers."""

from __future__ import annotations

from typing import Any

from pipeline.common.errors import ConfigError


def string_list(value: Any, what: str) -> list[str]:
    """``value`` as a list of non-empty strings, or a ConfigError naming ``what``."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f'{what} must be a list of non-empty strings, such as ["a", "b"]')
    return value


def is_url(value: Any) -> bool:
    """True for an http:// or https:// URL."""
    return isinstance(value, str) and value.startswith(("http://", "https://"))
