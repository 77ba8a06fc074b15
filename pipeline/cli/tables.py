"""Tables for a terminal that never cut a value: a boxed table when it fits, records when not.

Every command prints its tables through print_table. The width is read when printing (so a
pipe respects COLUMNS; without it, 80 columns). When the table would not fit in the width
with every cell whole, the rows print as records, one `name = value` line per column (the
duckdb shell's `.mode line`): values are never shortened, wrapped or cut off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class Column:
    """One column of a table: its header and whether it holds numbers (right-aligned)."""

    name: str
    numeric: bool = False


def terminal() -> Console:
    """A console for standard output at the width of now (COLUMNS, or the terminal's)."""
    return Console(highlight=False)


def print_table(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    footer: Sequence[str] | None = None,
    console: Console | None = None,
) -> str:
    """Print ``rows`` (cells already as text) whole; return the layout used ("table"/"records")."""
    out = console or terminal()
    cells = [list(row) for row in rows] + ([list(footer)] if footer else [])
    widths = _widths(columns, cells)
    if table_width(widths) <= out.width:
        out.print(_boxed(title, columns, rows, footer, widths))
        return "table"
    _print_records(out, title, columns, cells)
    return "records"


def table_width(widths: Sequence[int]) -> int:
    """Characters a table with these column widths takes: a space either side of each cell
    but the outer ones, and a one-character rule between columns ("a | b" without rules)."""
    return sum(widths) + 3 * len(widths) - 3 if widths else 0


def _widths(columns: Sequence[Column], cells: Sequence[Sequence[str]]) -> list[int]:
    # every cell whole on one line; a header may wrap at its spaces
    widths = []
    for index, column in enumerate(columns):
        header = max((len(word) for word in column.name.split()), default=0)
        widths.append(max([header, *(len(row[index]) for row in cells)]))
    return widths


def _boxed(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str] | None,
    widths: list[int],
) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            column.name,
            justify="right" if column.numeric else "left",
            min_width=width,
            max_width=width,
            overflow="fold",  # never an ellipsis; the width above fits every cell anyway
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    if footer:
        table.add_section()
        table.add_row(*(Text(cell) for cell in footer), style="bold")
    return table


def _print_records(
    out: Console, title: str, columns: Sequence[Column], cells: Sequence[Sequence[str]]
) -> None:
    width = max((len(column.name) for column in columns), default=0)
    out.print(Text(f"{title}: one block per row (a table would be wider than {out.width} columns)"))
    for row in cells:
        out.print()
        for column, cell in zip(columns, row, strict=True):
            # soft wrap: the terminal may wrap a long line, nothing here cuts it
            out.print(Text(f"{column.name.rjust(width)} = {cell}"), soft_wrap=True)
