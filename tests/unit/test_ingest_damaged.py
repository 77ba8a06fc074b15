"""Files that cannot be read through, for every provider: a corrupt Parquet page, a gzip stream
cut short or failing its CRC, an NDJSON extract cut mid-row or not UTF-8. Each is one message
naming the file and how to get a whole copy; nothing is stored in raw/."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from builders import ingest_with
from damaged_pages import BAD_PAGE, break_page
from focus_world import write_azure_parquet, write_mixed_csv
from test_gcp_files import config as gcp_config
from test_gcp_files import row, write_ndjson
from test_ingest_aws import EXPORT, PERIOD, config_for, cur_table, write_export
from test_ingest_csv import csv_bytes, write_csv_export
from test_ingest_focus import config as focus_config

from pipeline.common.errors import InputError
from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.focus.files import ingest_focus_files
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.ingest.gcp.ndjson import read_ndjson

DATA = f"data/BILLING_PERIOD={PERIOD}"
AFRESH = (
    "nothing of this delivery was stored in raw/ and the current snapshot is unchanged, so the "
    "corrected copy is read afresh on the next run"
)
CUR_FIX = (
    "re-deliver the file as AWS wrote it (copy it again from the export's bucket, or wait for "
    "the export's next delivery of the period, which replaces it) and run again; " + AFRESH
)
FOCUS_FIX = (
    "copy the file again from the export, or export it again (the export's next delivery of "
    "the period replaces it) and run again; " + AFRESH
)
CUT_SHORT = "Compressed file ended before the end-of-stream marker was reached"


def cur_parquet_page(root: Path) -> Path:
    write_export(root, {"x.parquet": cur_table(rows=50)})
    path = root / DATA / "x.parquet"
    break_page(path, "line_item_unblended_cost")
    return path


def cur_parquet_footer(root: Path) -> Path:
    """The magic bytes at both ends are whole; the footer between them is not."""
    write_export(root, {"x.parquet": cur_table(rows=50)})
    path = root / DATA / "x.parquet"
    content = bytearray(path.read_bytes())
    footer = len(content) - 8 - int.from_bytes(content[-8:-4], "little")
    content[footer : footer + 16] = b"\xab" * 16
    path.write_bytes(bytes(content))
    return path


def cur_gzip(cut: Callable[[bytes], bytes]) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        write_csv_export(root, {"a.csv.gz": cut(csv_bytes(cur_table(rows=50)))})
        return root / DATA / "a.csv.gz"

    return build


def scramble(content: bytes) -> bytes:
    """Bytes in the middle of the deflate stream changed: it still inflates, to wrong text."""
    middle = len(content) // 2
    return (
        content[:middle]
        + bytes(byte ^ 0x55 for byte in content[middle : middle + 50])
        + (content[middle + 50 :])
    )


CUR = {
    "parquet page": (cur_parquet_page, BAD_PAGE),
    "parquet footer": (cur_parquet_footer, BAD_PAGE),
    "gzip cut short": (cur_gzip(lambda content: content[: len(content) // 2]), CUT_SHORT),
    "gzip damaged": (cur_gzip(scramble), "CRC check failed"),
}


@pytest.mark.parametrize("case", list(CUR))
def test_a_cur_file_that_cannot_be_read_through_is_named_with_the_fix(tmp_path: Path, case):
    build, detail = CUR[case]
    root = tmp_path / "exports" / EXPORT
    path = build(root)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    message = str(caught.value)
    if case == "parquet footer":
        assert message == (
            f"{path}: not a Parquet file (its footer cannot be read: Couldn't deserialize "
            f"thrift: {BAD_PAGE}); if it is Parquet, the copy is damaged or truncated: " + CUR_FIX
        )
    elif case == "gzip damaged":  # the CRC values in the message are the file's own
        assert message.startswith(f"{path}: cannot be read through (CRC check failed 0x")
        assert message.endswith(f"), so the copy is damaged or cut short: {CUR_FIX}")
    else:
        assert message == (
            f"{path}: cannot be read through ({detail}), so the copy is damaged or cut "
            f"short: {CUR_FIX}"
        )
    assert not list((tmp_path / "warehouse").rglob("delivery.json"))


def gcp_parquet(tmp_path: Path) -> Path:
    table, _lines = read_ndjson(write_ndjson(tmp_path / "rows.json", [row()] * 50), ())
    path = tmp_path / "gcp" / "a.parquet"
    path.parent.mkdir()
    pq.write_table(table, path)
    break_page(path, "cost")
    return path


def test_a_gcp_parquet_file_with_a_corrupt_page_is_named(tmp_path: Path):
    path = gcp_parquet(tmp_path)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, gcp_config(tmp_path, "gcp/*.parquet"))
    assert str(caught.value) == (
        f"{path}: not a readable Parquet file (Couldn't deserialize thrift: {BAD_PAGE} "
        "Deserializing page header failed.), so the copy is damaged or cut short, or not "
        "Parquet: extract the table again with destination_format PARQUET (or copy the file "
        f"again) and run again; {AFRESH}"
    )
    assert not list((tmp_path / "warehouse").rglob("*.parquet"))


def test_a_gcp_ndjson_extract_cut_mid_row_is_named(tmp_path: Path):
    path = write_ndjson(tmp_path / "gcp" / "a.json", [row(), row(cost=0.5), row(cost=0.7)])
    content = path.read_bytes()
    path.write_bytes(content[: len(content) - 40])
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, gcp_config(tmp_path, "gcp/*.json"))
    assert str(caught.value) == (
        f"{path}: row 3: cut short (not JSON: Expecting ':' delimiter), so the copy is damaged "
        "or truncated: extract the export table again (or copy the file again) and run again; "
        + AFRESH
    )


def test_a_gcp_ndjson_extract_that_is_not_utf8_names_its_line(tmp_path: Path):
    path = write_ndjson(tmp_path / "gcp" / "a.json", [row(), row()])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b"Compute", b"Comp\xe9te"))
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_gcp_files, gcp_config(tmp_path, "gcp/*.json"))
    offset = len(lines[0]) + lines[1].index(b"Compute") + 4
    assert str(caught.value) == (
        f"{path}: not UTF-8 text: byte offset {offset} (line 2) holds byte 0xE9 ('é' in "
        "Latin-1), so the file was saved in another encoding (Latin-1 or Windows-1252), but "
        "BigQuery extract jobs write NDJSON in UTF-8: re-export it as UTF-8 (or convert the "
        "copy, e.g. `iconv -f latin1 -t utf-8`) and run again; nothing was stored in raw/, so "
        "the corrected file is read afresh"
    )


def focus_parquet(tmp_path: Path) -> Path:
    path = write_azure_parquet(tmp_path / "focus" / "a.parquet")
    break_page(path, "BilledCost")
    return path


def focus_gzip(tmp_path: Path) -> Path:
    plain = write_mixed_csv(tmp_path / "focus" / "a.csv")
    content = gzip.compress(plain.read_bytes(), mtime=0)
    plain.unlink()
    path = tmp_path / "focus" / "a.csv.gz"
    path.write_bytes(content[: len(content) // 2])
    return path


FOCUS = {"parquet page": (focus_parquet, BAD_PAGE), "gzip cut short": (focus_gzip, CUT_SHORT)}


@pytest.mark.parametrize("case", list(FOCUS))
def test_a_focus_file_that_cannot_be_read_through_is_named(tmp_path: Path, case):
    build, detail = FOCUS[case]
    path = build(tmp_path)
    with pytest.raises(InputError) as caught:
        ingest_with(ingest_focus_files, focus_config(tmp_path, f"focus/{path.name}"))
    assert str(caught.value) == (
        f"{path}: cannot be read through ({detail}), so the copy is damaged or cut short: "
        + FOCUS_FIX
    )
    assert not list((tmp_path / "warehouse").rglob("delivery.json"))
