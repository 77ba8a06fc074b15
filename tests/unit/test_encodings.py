"""CSV billing files that are not UTF-8 (a copy saved as Latin-1) are named as encoding problems
of the delivered file, with the byte offset, the line and the fix; nothing reaches raw/."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from builders import ingest_with
from focus_world import row, write_mixed_csv
from test_ingest_aws import EXPORT, config_for, cur_table, raw_files
from test_ingest_csv import DATA, csv_bytes, write_csv_export
from test_ingest_focus import assert_nothing_stored
from test_ingest_focus import config as focus_config

from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.ingest.utf8 import first_invalid


def latin1_csv(rows: int, line: int) -> tuple[bytes, int]:
    """A CUR CSV (uncompressed) whose ``line`` (1 = header) holds 'café' in Latin-1, and the
    byte offset of the é."""
    lines = gzip.decompress(csv_bytes(cur_table(rows=rows))).split(b"\n")
    lines[line - 1] = lines[line - 1].replace(b"v", b"caf\xe9", 1)
    text = b"\n".join(lines)
    return text, text.index(b"\xe9")


@pytest.mark.parametrize(
    ("rows", "line"), [(3, 3), (400, 351)], ids=["in the header's block", "far in"]
)
def test_a_latin1_cur_csv_is_an_encoding_problem_of_the_named_file(
    tmp_path: Path, rows: int, line: int
) -> None:
    text, offset = latin1_csv(rows, line)
    root = write_csv_export(tmp_path / "exports" / EXPORT, {"part-0.csv.gz": gzip.compress(text)})
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    message = str(caught.value)
    assert message.startswith(
        f"{root / DATA / 'part-0.csv.gz'}: not UTF-8 text: byte offset {offset} (line {line}) "
        "holds byte 0xE9 ('é' in Latin-1), so the file was saved in another encoding"
    )
    assert "AWS writes CUR CSV in UTF-8: re-export it as UTF-8" in message
    assert ".ingest-staging" not in message and "header" not in message
    assert raw_files(tmp_path) == []


def test_a_utf8_bom_and_multibyte_text_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_bytes("\ufeffa,b\ncafé,€\n".encode())
    assert first_invalid(path, compressed=False) is None
    path.write_bytes("a,b\ncafé,€".encode()[:-1])  # the last character cut short
    assert first_invalid(path, compressed=False).offset == len("a,b\ncafé,".encode())


def test_a_latin1_focus_csv_is_an_encoding_problem(tmp_path: Path) -> None:
    path = write_mixed_csv(tmp_path / "focus" / "f.csv", [row("AWS", 10), row("AWS", 10)])
    text = path.read_bytes().replace(b"Virtual Machines", b"Machines virtuelles \xe9", 1)
    path.write_bytes(text)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, focus_config(tmp_path, "focus"))
    offset = text.index(bytes([0xE9]))
    assert str(caught.value).startswith(
        f"{path}: not UTF-8 text: byte offset {offset} (line 2) holds byte 0xE9"
    )
    assert "runcost reads FOCUS CSV as UTF-8 text: re-export it as UTF-8" in str(caught.value)
    assert_nothing_stored(tmp_path)
