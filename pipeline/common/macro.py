"""A macro: a rule written once, expanded into a model's SQL where the model calls it
(pipeline.dag.macros holds the rules and does the expanding)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.common.errors import ModelError

# a table's alias, or a struct column of one (held_slices.part)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


_WORD = re.compile(r"^'[a-z_][a-z0-9_]*'$")


@dataclass(frozen=True)
class Macro:
    """``parameters`` are expressions (each substituted in parentheses); ``relations`` name the
    parameters that are a table's alias instead, substituted as the bare name; ``words`` those
    that are part of a column's name, written as a string ('line') and substituted bare."""

    name: str
    parameters: tuple[str, ...]
    body: str
    relations: tuple[str, ...] = ()
    words: tuple[str, ...] = ()

    def expand(self, arguments: list[str], where: str) -> str:
        if not self.parameters and [value.strip() for value in arguments] == [""]:
            arguments = []  # a call without arguments: name()
        if len(arguments) != len(self.parameters):
            raise ModelError(
                f"{where}: {self.name}() takes {len(self.parameters)} arguments "
                f"({', '.join(self.parameters)}), got {len(arguments)}"
            )
        values = {}
        for name, value in zip(self.parameters, arguments, strict=True):
            value = value.strip()
            if name in self.relations and not _IDENTIFIER.match(value):
                raise ModelError(
                    f"{where}: {self.name}() takes the alias of a table as {name}, "
                    f"such as cost_lines; got {value!r}"
                )
            if name in self.words:
                if not _WORD.match(value):
                    raise ModelError(
                        f"{where}: {self.name}() takes part of a column's name as {name}, "
                        f"written as a string such as 'line'; got {value!r}"
                    )
                values[name] = value.strip("'")
                continue
            values[name] = value if name in self.relations else f"({value})"
        return self.body.format(**values)


def relation_columns(name: str, columns: Iterable[str]) -> Macro:
    """`name(relation)`: the relation's ``columns``, for a select list or a group by."""
    return Macro(
        name,
        ("relation",),
        ", ".join(f"{{relation}}.{column}" for column in columns),
        relations=("relation",),
    )


def same_columns(name: str, columns: Iterable[str]) -> Macro:
    """`name(left, right)`: two relations' rows equal on each of ``columns`` (a join condition)."""
    return Macro(
        name,
        ("left", "right"),
        "(" + " and ".join(f"{{left}}.{column} = {{right}}.{column}" for column in columns) + ")",
        relations=("left", "right"),
    )
