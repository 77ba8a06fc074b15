"""The HTML report: SQL aggregates over the published marts, drawn as one self-contained page."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.report.page import render
from pipeline.warehouse.access import open_snapshot

DEFAULT_REPORT_NAME = "runcost-report.html"


def write_report(database: Path, output: Path) -> Path:
    """Render the report from a published database into ``output`` (written, then renamed)."""
    con = open_snapshot(database)
    try:
        html = render(con, source=database.name, snapshots=database.parent / "snapshots")
    finally:
        con.close()
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.partial")
    temporary.write_text(html, encoding="utf-8")
    os.replace(temporary, output)
    return output
