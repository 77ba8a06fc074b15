"""Tables for a terminal that never cut a value: a boxed table when it fits, records when not.

Every command prints its tables through print_table. The width is read when printing (so a
pipe respects COLUMNS; without it, 80 columns). When the table would not fit in the width
with every cell whole, the rows print as records, one `name = value` line per column (the
duckdb shell's `.mode line`): values are never shortened, wrapped or cut off. Headers and
titles wrap only between words (and after a hyphen), never inside one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

GAP = 2  # spaces between two columns
# where a header may break: at a space, or after a hyphen ("experiment-" / "only cost")
_HEADER_PARTS = re.compile(r"[^-]*-+|[^-]+")


@dataclass(frozen=True)
class Column:
    """One column of a table: its header and whether it holds numbers (right-aligned)."""

    name: str
    numeric: bool = False


class Terminal(Console):
    """A rich Console whose closed pipe raises BrokenPipeError (rich's own exits with 1), so
    the command's error handling can end quietly with 0 (`runcost sql ... | head -1`)."""

    def on_broken_pipe(self) -> None:
        """Stop writing, and let the command decide how to end."""
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


def terminal() -> Console:
    """A console for standard output at the width of now (COLUMNS, or the terminal's)."""
    return Terminal(highlight=False)


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
    width = table_width(widths)
    if width <= out.width:
        if len(title) > width:  # a title wider than a narrow table: its own line, not folded
            out.print(Text(title))
        out.print(_boxed(title if len(title) <= width else None, columns, rows, footer, widths))
        return "table"
    _print_records(out, title, columns, cells)
    return "records"


def table_width(widths: Sequence[int]) -> int:
    """Characters a table with these column widths takes: two spaces between columns."""
    return sum(widths) + GAP * (len(widths) - 1) if widths else 0


def header_parts(name: str) -> list[tuple[str, str]]:
    """The pieces a header may break into, each with what joins it to the one before: its
    words (a space), split after each hyphen (nothing)."""
    return [
        (part, " " if index == 0 else "")
        for word in name.split()
        for index, part in enumerate(_HEADER_PARTS.findall(word))
    ]


def _widths(columns: Sequence[Column], cells: Sequence[Sequence[str]]) -> list[int]:
    # every cell whole on one line; a header may wrap between its pieces
    widths = []
    for index, column in enumerate(columns):
        header = max((len(part) for part, _ in header_parts(column.name)), default=0)
        widths.append(max([header, *(len(row[index]) for row in cells)]))
    return widths


def _header(name: str, width: int) -> str:
    # greedy, between pieces only: rich would fold a word that does not fit mid-word
    lines: list[str] = []
    for part, joiner in header_parts(name):
        if lines and len(lines[-1]) + len(joiner) + len(part) <= width:
            lines[-1] += joiner + part
        else:
            lines.append(part)
    return "\n".join(lines)


def _boxed(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    footer: Sequence[str] | None,
    widths: list[int],
) -> Table:
    table = Table(
        title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0)
    )
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            Text(_header(column.name, width)),
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
