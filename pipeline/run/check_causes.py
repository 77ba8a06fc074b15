"""Why a check failed when bad input is the cause: the delivery, file, row and column to fix,
said on the first line of CheckFailed's message (pipeline.common.errors). Each provider explains
the checks its own input can break (Provider.explains)."""

from __future__ import annotations

import duckdb

from pipeline.ingest.registry import PROVIDERS

Failure = tuple[str, list[str], list[tuple], int]


def failure_causes(con: duckdb.DuckDBPyConnection, failures: list[Failure]) -> dict[str, str]:
    """check name -> the input that breaks it, for the failed checks whose cause the built
    tables show; a check without a known cause is left out (its rows say the rest)."""
    causes: dict[str, str] = {}
    for name, columns, rows, _total in failures:
        explain = _EXPLAINED.get(name)
        if explain is None:
            continue
        try:
            cause = explain(con, [dict(zip(columns, row, strict=True)) for row in rows])
        except duckdb.Error:
            cause = None  # a table it reads is not in this database (another engine built it)
        if cause:
            causes[name] = cause
    return causes


_EXPLAINED = {
    name: explain for provider in PROVIDERS for name, explain in provider.explains.items()
}
