"""Error types: each says what went wrong, where, and how to fix it."""

from __future__ import annotations

import re

# user:password@ (or a token@) in a URL: never echoed in a message or a run record
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@")


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ***."""
    return _URL_CREDENTIALS.sub(r"\1***@", text)


class RuncostError(Exception):
    """Base error. The CLI prints ``error: <message>`` and exits with ``exit_code``.

    Its text never shows credentials written into a URL (an endpoint_url with user:password@).
    """

    exit_code = 1

    def __str__(self) -> str:
        return redact_urls(super().__str__())


class ConfigError(RuncostError):
    """runcost.toml has an unknown key, a bad value, or is missing."""


class InputError(RuncostError):
    """A billing export or telemetry file cannot be used as delivered."""


class CheckFailed(RuncostError):
    """An invariant in sql/checks returned rows; nothing was published."""

    def __init__(
        self,
        failures: list[tuple[str, list[str], list[tuple], int]],
        build_database: str | None = None,
        causes: dict[str, str] | None = None,
    ) -> None:
        """``causes``: check name -> the input that breaks it (file, row, column, fix)."""
        self.failures = failures
        lines = []
        for name, columns, rows, total in failures:
            cause = f", because {causes[name]}" if causes and name in causes else ""
            lines.append(f"check {name} failed: {total} row(s) break it{cause}; first rows:")
            lines.append("  " + " | ".join(columns))
            lines.extend("  " + " | ".join(str(value) for value in row) for row in rows[:5])
        lines.append("nothing was published; the previous snapshot stays current")
        if build_database:
            lines.append(f"the failed build is kept for inspection: duckdb {build_database}")
        super().__init__("\n".join(lines))


class ModelError(RuncostError):
    """A SQL model is malformed or failed to build."""
