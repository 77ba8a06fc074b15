"""Error types: each says what went wrong, where, and how to fix it."""

from __future__ import annotations


class RuncostError(Exception):
    """Base error. The CLI prints ``error: <message>`` and exits with ``exit_code``."""

    exit_code = 1


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
    ) -> None:
        self.failures = failures
        lines = []
        for name, columns, rows, total in failures:
            lines.append(f"check {name} failed: {total} row(s) break it; first rows:")
            lines.append("  " + " | ".join(columns))
            lines.extend("  " + " | ".join(str(value) for value in row) for row in rows[:5])
        lines.append("nothing was published; the previous snapshot stays current")
        if build_database:
            lines.append(f"the failed build is kept for inspection: duckdb {build_database}")
        super().__init__("\n".join(lines))


class ModelError(RuncostError):
    """A SQL model is malformed or failed to build."""
