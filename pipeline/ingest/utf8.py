"""CSV billing files must be UTF-8: find the first byte that is not, and say so by file and line.

Only called after reading failed, so a good file pays nothing. The offset counts bytes of the
text as read (after gunzip for a .gz file), from 0.
"""

from __future__ import annotations

import codecs
import gzip
from dataclasses import dataclass
from pathlib import Path

from pipeline.common.errors import InputError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class NotUtf8:
    """Where a file stops being UTF-8: byte offset, line (from 1) and the bytes found there."""

    offset: int
    line: int
    found: bytes


def first_invalid(path: Path, compressed: bool) -> NotUtf8 | None:
    """The first byte of ``path`` (gunzipped when ``compressed``) that is not UTF-8, or None."""
    opener = gzip.open if compressed else open
    tail, base, lines = b"", 0, 1  # undecoded bytes carried over, their offset, lines before
    with opener(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            data = tail + chunk
            try:
                _text, consumed = codecs.utf_8_decode(data, "strict", False)
            except UnicodeDecodeError as error:
                before = data[: error.start]
                return NotUtf8(
                    base + error.start, lines + before.count(b"\n"), data[error.start :][:4]
                )
            lines += data[:consumed].count(b"\n")
            base += consumed
            tail = data[consumed:]
    return NotUtf8(base, lines, tail) if tail else None


def check_utf8(path: Path, compressed: bool, where: str, who: str) -> None:
    """Refuse ``path`` (named ``where`` in the message) if it is not UTF-8; ``who`` says who
    expects UTF-8 (for the message)."""
    bad = first_invalid(path, compressed)
    if bad is None:
        return
    shown = f"byte 0x{bad.found[0]:02X}" if bad.found else "a cut-off character"
    text = bad.found[:1].decode("latin-1") if bad.found else ""
    guess = f" ({text!r} in Latin-1)" if text and text.isprintable() else ""
    raise InputError(
        f"{where}: not UTF-8 text: byte offset {bad.offset} (line {bad.line}) holds {shown}"
        f"{guess}, so the file was saved in another encoding (Latin-1 or Windows-1252), but "
        f"{who}: re-export it as UTF-8 (or convert the copy, e.g. `iconv -f latin1 -t utf-8`) "
        "and run again; nothing was stored in raw/, so the corrected file is read afresh"
    )
