"""GCP NDJSON extracts typed by Arrow's JSON reader, block by block, into a scratch Parquet file.

A BigQuery extract job writes one JSON object per line, every leaf of its column's JSON type
(FLOAT a number, NUMERIC a number or text, RECORD an object, REPEATED a list) and TIMESTAMP as
'2026-10-12 10:00:00 UTC'. Such a file is read here in blocks of BLOCK bytes against the
export's schema, strictly: any other file (a blank line, text where the export has a number, an
epoch timestamp, a line that is not one JSON object, bytes that are not UTF-8, a column outside
the export) is decoded row by row by gcp/ndjson.py read_ndjson, which types what it can exactly as
here and names the row and column of what it cannot. Both store the same rows, but for a
NUMERIC written as a JSON number of more than 17 digits, which the row decoder reads through a
float and this reader keeps whole.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from pipeline.ingest.gcp.ndjson import export_schema, read_ndjson
from schemas import gcp_billing

# bytes of JSON per Arrow block (about 3,400 export rows): the reader parses blocks ahead on
# every thread, 0.35 GB of RSS at this size for a 1M-row file against 0.87 GB at 16 MB, for the
# same CPU
BLOCK = 1 << 22
_CHUNK = 1 << 24  # bytes read at a time to look at every line's first byte
# rows per row group of the scratch file: a block's 3,400 rows each cost 9.5 s of Parquet writing
# for the 1M-row extract's scratch file and parts together
ROW_GROUP = 65_536
# the timestamps typed here, as the extract writes them (anything else: the row decoder)
_TIME = r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?( UTC|Z)?$"
_EXTRACT_TIME = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$"
# Arrow's reader does not refuse these; the row decoder does (pyarrow type errors, not bad data)
_NOT_TYPED = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


class _Untyped(Exception):
    """A block the reader cannot type strictly: the file goes to the row decoder."""


def write_typed(
    path: Path,
    partition_columns: tuple[str, ...],
    target: Path,
    split: Callable[[Iterator[pa.RecordBatch], list[str]], None] | None = None,
    undo: Callable[[], None] | None = None,
) -> tuple[list[str], list[int] | None]:
    """Write ``path``'s rows typed by the export schema to the Parquet file ``target``: the
    columns the file has (any other of ``target`` is NULL), and the file line of each row when
    rows are not simply lines 1..n (None).

    ``split``, when given, is handed the typed batches (of those columns) as they are written,
    when the block reader reads the file's columns from its first line, the usual case: the
    rows are split by day as they are typed rather than read back from ``target`` (1.0-1.4 CPU s
    per 1M rows). ``undo`` is called should the file need another reading after all."""
    rows = _object_lines(path)
    first = _first_keys(path) if rows else None
    if first is not None:
        known = [name for name, _ in gcp_billing.DETAILED] + list(partition_columns)
        # the columns the first line names, the usual case (Arrow's reader refuses a line naming
        # another); then every column, should a later line name one the first leaves out
        for names in ([name for name in known if name in first], known):
            streamed = split if set(names) <= first else None
            try:
                columns = _write_blocks(path, names, target, rows, first, streamed)
            except _NOT_TYPED:
                columns = None
            if columns is not None:
                return columns, None
            if streamed is not None and undo is not None:
                undo()
    table, lines = read_ndjson(path, partition_columns)
    pq.write_table(table, target)
    return table.column_names, lines


def _first_keys(path: Path) -> set[str] | None:
    with path.open("rb") as handle:
        try:
            record = json.loads(handle.readline())
        except ValueError:
            return None
    return set(record) if isinstance(record, dict) else None


def _object_lines(path: Path) -> int:
    """How many lines ``path`` has when it is UTF-8 and every line starts with '{' (so Arrow's
    reader sees one object per line, never a bare value); 0 otherwise."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines, ends_line, size = 0, True, 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            try:
                if not chunk.isascii() or decoder.getstate()[0]:
                    decoder.decode(chunk)
            except UnicodeDecodeError:
                return 0
            if ends_line and chunk[:1] != b"{":
                return 0
            ends_line = chunk.endswith(b"\n")
            # every newline but a chunk's last byte is followed by '{' within the chunk
            found = chunk.count(b"\n")
            if found - chunk.count(b"\n{") != int(ends_line):
                return 0
            newlines += found
            size += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return 0
    return newlines + (0 if ends_line or not size else 1)


def _write_blocks(
    path: Path,
    names: list[str],
    target: Path,
    rows: int,
    first: set[str],
    split: Callable[[Iterator[pa.RecordBatch], list[str]], None] | None,
) -> list[str] | None:
    """Read the columns ``names``: those the file has, or None when the file needs the row
    decoder after all."""
    schema = export_schema(names)
    text = [
        pa.field(field.name, pa.string() if pa.types.is_timestamp(field.type) else field.type)
        for field in schema
    ]
    options = pj.ParseOptions(explicit_schema=pa.schema(text), unexpected_field_behavior="error")
    reader = pj.open_json(path, pj.ReadOptions(block_size=BLOCK), options)
    valued: set[str] = set()
    counted = [0]

    def typed_batches() -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        with pq.ParquetWriter(target, schema) as writer:
            for batch in _batches(reader):
                typed = _typed(batch, schema)
                if typed is None:
                    raise _Untyped
                pending.append(typed)
                counted[0] += typed.num_rows
                valued.update(name for name in names if typed[name].null_count < len(typed))
                if sum(item.num_rows for item in pending) >= ROW_GROUP:
                    # one batch of a row group's rows (the blocks' few thousand each cost the
                    # split a sort and many small slices apiece)
                    group = pa.concat_batches(pending)
                    writer.write_batch(group)
                    pending = []
                    yield group
            if pending:
                group = pa.concat_batches(pending)
                writer.write_batch(group)
                yield group

    try:
        if split is None:
            for _typed_batch in typed_batches():
                pass
        else:
            split(typed_batches(), schema.names)
    except _Untyped:
        return None
    if counted[0] != rows:  # two objects on one line
        return None
    # a column null on every row is the file's when the first line names it, and not when no
    # line does; named on a later line only, the row decoder tells
    unsure = [name for name in names if name not in valued and name not in first]
    if unsure and _names_any(path, [json.dumps(name).encode() for name in unsure]):
        return None
    return [name for name in names if name in valued or name in first]


def _names_any(path: Path, quoted: list[bytes]) -> bool:
    """Whether any of the byte strings ``quoted`` occurs in the file."""
    overlap = max(len(item) for item in quoted) - 1
    tail = b""
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            window = tail + chunk
            if any(item in window for item in quoted):
                return True
            tail = window[-overlap:]
    return False


def _batches(reader: pj.JSONStreamingReader) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return


def _typed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch | None:
    """The batch with its timestamps typed (UTC), or None for a timestamp of another form."""
    arrays = []
    for field in schema:
        array = batch.column(field.name)
        if pa.types.is_timestamp(field.type):
            if pc.all(pc.match_substring_regex(array, _EXTRACT_TIME)).as_py() is not False:
                # the extract job's own form: its first 19 characters are the UTC time (a
                # slice, not the regular expression below: 0.42 CPU s per 1M values against
                # 0.2; strptime would take February 30 for March 2)
                naive = pc.utf8_slice_codeunits(array, 0, 19)
                arrays.append(pc.cast(naive, pa.timestamp("us")).cast(field.type))
                continue
            if pc.all(pc.match_substring_regex(array, _TIME)).as_py() is False:
                return None
            naive = pc.replace_substring_regex(array, "( UTC|Z)$", "")
            array = pc.cast(naive, pa.timestamp("us")).cast(field.type)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
