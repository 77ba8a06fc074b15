"""Inputs whose message once named the wrong thing or no fix: a NUL byte in attempts.csv, a
directory or a named pipe where a telemetry file belongs, a byte order mark in runcost.toml."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_telemetry_files import CONVENTION, attempt, load_error, write

from pipeline.config.loader import load_config

# --- a NUL byte in attempts.csv is blamed on attempts.csv, not on a file that names the attempt


def test_a_nul_byte_in_attempts_names_attempts_and_its_row(tmp_path: Path) -> None:
    rows = [attempt(f"att-{number}") for number in range(1, 7)]
    path = write(tmp_path, "attempts", "csv", rows)
    resources = [{"attempt_id": f"att-{number}", "resource_id": "i-1"} for number in range(1, 7)]
    write(tmp_path, "attempt_resources", "csv", resources)
    content = path.read_bytes()
    path.write_bytes(content.replace(b"att-6,", b"att-\x006,"))

    assert load_error(tmp_path) == (
        f"{path}: row 6, column attempt_id: 'att-\\x006' holds the control character U+0000; "
        "an id with one never matches the same id on the bill: write the id without it "
        f"{CONVENTION['csv']}"
    )


def test_nul_bytes_after_the_last_row_name_the_row_they_make(tmp_path: Path) -> None:
    """What a crash mid-write can leave: the file's tail filled with NUL bytes."""
    path = write(tmp_path, "attempts", "csv", [attempt("a1"), attempt("a2")])
    path.write_bytes(path.read_bytes() + b"\x00" * 4)

    assert load_error(tmp_path) == (
        f"{path}: 3 problems {CONVENTION['csv']}:\n"
        "  row 3, column attempt_id: '\\x00\\x00\\x00\\x00' holds the control character U+0000; "
        "an id with one never matches the same id on the bill: write the id without it\n"
        "  row 3, column experiment_id: is empty; experiment_id is required: fill it in or "
        "remove the row\n"
        "  row 3, column status: is empty; status is required: fill it in or remove the row"
    )


# --- a directory, a named pipe or a dangling link where a telemetry file belongs ----------------


def directory(path: Path) -> str:
    path.mkdir()
    return (
        "is a directory, not a file; runcost reads the {name} dataset from one regular file: "
        "remove or rename the directory and write the {name} rows to the file {file}"
    )


def named_pipe(path: Path) -> str:
    os.mkfifo(path)
    return (
        "is not a regular file (a named pipe, socket or device); runcost reads the {name} "
        "dataset from one regular file: write the {name} rows to a regular file {file} instead"
    )


def dangling_link(path: Path) -> str:
    path.symlink_to(path.parent / "gone.csv")
    return (
        f"is a symbolic link to {path.parent / 'gone.csv'}, which does not exist; runcost reads "
        "the {name} dataset from one regular file: point the link at the {name} file, or copy "
        "the file here"
    )


@pytest.mark.parametrize("make", [directory, named_pipe, dangling_link])
@pytest.mark.parametrize("name", ["attempts", "attempt_resources"])
def test_a_telemetry_path_that_is_not_a_file_says_what_it_is(tmp_path: Path, make, name: str):
    if name != "attempts":
        write(tmp_path, "attempts", "csv", [attempt("a1")])
    path = tmp_path / f"{name}.csv"
    expected = make(path).format(name=name, file=path.name)

    assert load_error(tmp_path) == f"{path}: {expected}"


# --- runcost.toml saved with a byte order mark -------------------------------------------------


def test_a_byte_order_mark_in_runcost_toml_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "runcost.toml"
    text = '[warehouse]\npath = "wh"\n\n[telemetry]\npath = "telemetry"\n'
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))

    config = load_config(path)

    assert config.warehouse == tmp_path / "wh"
    assert config.telemetry == tmp_path / "telemetry"
