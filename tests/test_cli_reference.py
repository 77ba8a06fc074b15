"""docs/cli.md holds every command's --help as it prints at 80 columns, checked against the CLI.

The blocks between `<!-- [[[help runcost ...]]] -->` and `<!-- [[[end]]] -->` are generated;
the prose around them is kept. After changing a command's options or help text, rewrite them:

    RUNCOST_WRITE_DOCS=1 pytest -n 0 tests/test_cli_reference.py
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli.app import main

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
# click caps help at 80 columns (78 of text): any terminal as wide or wider prints these bytes
COLUMNS = "80"
BLOCK = re.compile(
    r"(?P<start><!-- \[\[\[help (?P<command>runcost[a-z -]*)\]\]\] -->\n)"
    r".*?(?P<end><!-- \[\[\[end\]\]\] -->)",
    re.S,
)
REWRITE = "RUNCOST_WRITE_DOCS"


def commands() -> list[str]:
    """`runcost` and each of its commands, as the reference names them."""
    return ["runcost", *(f"runcost {name}" for name in sorted(main.commands))]


def help_text(command: str) -> str:
    """What `COLUMNS=80 <command> --help` prints."""
    args = [*command.split()[1:], "--help"]
    result = CliRunner().invoke(main, args, prog_name="runcost", env={"COLUMNS": COLUMNS})
    assert result.exit_code == 0, result.output
    return result.output


def block(command: str) -> str:
    return f"<!-- [[[help {command}]]] -->\n```text\n{help_text(command)}```\n<!-- [[[end]]] -->"


def generated(text: str) -> str:
    """``text`` with every block holding its command's live help; missing commands appended."""
    text = BLOCK.sub(lambda found: block(found["command"]), text)
    documented = {found["command"] for found in BLOCK.finditer(text)}
    for command in commands():
        if command not in documented:
            text = text.rstrip("\n") + f"\n\n## {command}\n\n{block(command)}\n"
    return text


def test_every_command_is_in_the_reference() -> None:
    documented = [found["command"] for found in BLOCK.finditer(REFERENCE.read_text("utf-8"))]
    assert sorted(documented) == commands(), (
        f"docs/cli.md documents {sorted(documented)}, the CLI has {commands()}; rewrite it with "
        f"{REWRITE}=1 pytest -n 0 tests/test_cli_reference.py"
    )


def test_the_reference_is_the_live_help() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    live = generated(text)
    if os.environ.get(REWRITE) == "1" and live != text:
        REFERENCE.write_text(live, encoding="utf-8")
        text = live
    assert text == live, (
        "docs/cli.md differs from the commands' --help; rewrite it with "
        f"{REWRITE}=1 pytest -n 0 tests/test_cli_reference.py"
    )


def test_help_does_not_depend_on_the_terminal_when_it_is_80_columns_or_wider() -> None:
    wide = CliRunner().invoke(main, ["sql", "--help"], prog_name="runcost", env={"COLUMNS": "200"})
    assert wide.output == help_text("runcost sql")
    assert max(len(line) for line in wide.output.splitlines()) <= int(COLUMNS)
