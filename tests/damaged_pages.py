"""A Parquet file with a corrupt page and a whole footer: the footer checks pass, the page does
not decode."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

# DuckDB's error reading the page header break_page writes
BAD_PAGE = "Variable-length int over 10 bytes."


def break_page(path: Path, column: str) -> None:
    """Overwrite the header of the first page of ``column`` in the first row group (of every
    leaf of a nested column), leaving the footer whole."""
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    starts = [
        meta.dictionary_page_offset or meta.data_page_offset
        for meta in (chunk.column(index) for index in range(chunk.num_columns))
        if meta.path_in_schema.split(".")[0] == column
    ]
    if not starts:
        raise AssertionError(f"{path} has no column {column}")
    content = bytearray(path.read_bytes())
    for start in starts:
        content[start : start + 16] = b"\xab" * 16
    path.write_bytes(bytes(content))
