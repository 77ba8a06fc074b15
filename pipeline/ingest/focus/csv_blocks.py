"""A FOCUS CSV typed block by block, each distinct text once.

Arrow's reader hands each block's columns dictionary-encoded (a bill repeats its dates, names,
units and most amounts); DuckDB types a block's distinct texts with the row pass's own SQL
(focus/write.py plan: the same casts, the same flags); Arrow writes the typed dictionaries as
each billing period's Parquet part, rows in file order. A block holding a value a check may
refuse, or a file Arrow or DuckDB cannot read through, is left to the row pass (focus/read.py),
which refuses it with the first bad row named: the parts this pass wrote are removed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.common.duck import optimizer_disabled
from pipeline.ingest.focus.write import Plan
from pipeline.ingest.unreadable import is_the_machine

_VALUES = "focus_block_values"
_FLAGGED, _PERIOD, _ROUNDS = "runcost_flagged", "runcost_period", "runcost_rounds"
# Arrow parses 1 MiB blocks (dictionary-encoded, a 16 MiB block costs twice the CPU per row);
# they are typed ROWS rows at a time (one DuckDB query) and written in row groups of GROUP_ROWS
BLOCK_BYTES = 1 << 20
ROWS = 1 << 18
GROUP_ROWS = 122_880
_TEXT = pa.dictionary(pa.int32(), pa.string())


class Unsure(Exception):
    """A block holds a value a check may refuse, or the file does not read through: the row
    pass decides."""


@dataclass(frozen=True)
class Written:
    """The rows written, the billing periods (YYYY-MM, sorted) and whether any amount may carry
    more than 10 decimal places (the rounding note then reads the parts)."""

    rows: int
    periods: tuple[str, ...]
    may_round: bool


@dataclass(frozen=True)
class Columns:
    """A part's columns, in order: the row number's and the file name's (name, value), each
    typed FOCUS column (name, the file's column, None for a constant such as a configured
    ProviderName), then the extra columns, kept as text."""

    line: str
    file: tuple[str, str]
    typed: tuple[tuple[str, str | None], ...]
    extras: tuple[str, ...]

    def names(self) -> list[str]:
        return [self.line, self.file[0], *(name for name, _ in self.typed), *self.extras]


def write_csv(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    names: list[str],
    null_text: list[str],
    plan: Plan,
    columns: Columns,
    part: Callable[[str], Path],
) -> Written:
    """Write ``path``'s rows typed by ``plan`` as ``part(period)`` for each billing period, or
    raise Unsure with no part left behind. The machine's errors (memory, a full disk) pass."""
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        written = _write(con, path, names, null_text, plan, columns, part, writers)
    except (pa.ArrowException, OSError, duckdb.Error, Unsure) as error:
        _close(writers, part, remove=True)
        if is_the_machine(error):
            raise
        raise Unsure from error
    except BaseException:
        _close(writers, part, remove=True)
        raise
    _close(writers, part, remove=False)
    return written


def _write(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    names: list[str],
    null_text: list[str],
    plan: Plan,
    columns: Columns,
    part: Callable[[str], Path],
    writers: dict[str, pq.ParquetWriter],
) -> Written:
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=BLOCK_BYTES),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, _TEXT),
            null_values=null_text,
            strings_can_be_null=True,
        ),
    )
    query = _query(plan)
    used = sorted({column for _name, column in columns.typed if column is not None})
    required = [column for name, column in columns.typed if column and name in plan.required]
    line, may_round = 0, False
    for block in _blocks(reader):
        if any(_has_null(block.column(column)) for column in required):
            raise Unsure  # an empty required value: the row pass names its row
        con.register(_VALUES, _distinct(block, used))
        try:
            # footer statistics leave NaN out: never let them fold a NaN test to false
            with optimizer_disabled(con, "statistics_propagation"):
                typed = con.sql(query).to_arrow_table()
        finally:
            con.unregister(_VALUES)
        if pc.any(typed[_FLAGGED]).as_py():
            raise Unsure
        may_round = may_round or bool(pc.any(typed[_ROUNDS]).as_py())
        rows = _rows(block, typed, columns, line)
        periods = _on(block.column(dict(columns.typed)["BillingPeriodStart"]), typed[_PERIOD])
        found = pc.unique(periods).to_pylist()
        for period in found:
            _writer(writers, period, part, rows.schema, columns.line).write_table(
                rows if len(found) == 1 else rows.filter(pc.equal(periods, period)),
                row_group_size=GROUP_ROWS,
            )
        line += block.num_rows
    return Written(line, tuple(sorted(writers)), may_round)


def _blocks(reader: pacsv.CSVStreamingReader) -> Iterator[pa.Table]:
    """The reader's batches gathered ROWS rows or more at a time (the last fewer), each column's
    chunks on one dictionary."""
    waiting: list[pa.RecordBatch] = []
    count = 0
    for batch in itertools.chain(reader, [None]):
        if batch is not None:
            waiting.append(batch)
            count += batch.num_rows
            if count < ROWS:
                continue
        if waiting:
            yield pa.Table.from_batches(waiting).unify_dictionaries()
        waiting, count = [], 0


def _query(plan: Plan) -> str:
    """DuckDB SQL over a block's distinct texts (a column per file column, NULL-padded to one
    length; every flag reads one column, so a row of them mixes columns harmlessly): each
    typed column, whether any value is flagged, each BillingPeriodStart's period, and whether
    any amount may carry more than 10 decimal places."""
    typed = [f"{expression} as {name}" for name, expression in plan.typed]
    helpers = [f"{text} as {helper}" for helper, text in plan.texts]
    flagged = " or ".join(f"coalesce({flag}, false)" for flag in plan.flags) or "false"
    rounds = (
        " or ".join(f"coalesce({name} <> round({name}, 10), false)" for name in plan.may_round)
        or "false"
    )
    kept = f" exclude ({', '.join(helper for helper, _ in plan.texts)})" if plan.texts else ""
    return (
        f"select *{kept}, {flagged} as {_FLAGGED}, strftime(BillingPeriodStart, '%Y-%m') "
        f"as {_PERIOD}, {rounds} as {_ROUNDS} from (select {', '.join([*typed, *helpers])} "
        f"from {_VALUES})"
    )


def _distinct(block: pa.Table, used: list[str]) -> pa.Table:
    """The distinct texts of ``used``'s columns in ``block``, NULL-padded to one length."""
    texts = [block.column(column).chunk(0).dictionary for column in used]
    length = max((len(values) for values in texts), default=0) or 1
    return pa.table(
        [
            pa.concat_arrays([values, pa.nulls(length - len(values), pa.string())])
            for values in texts
        ],
        names=used,
    )


def _rows(block: pa.Table, typed: pa.Table, columns: Columns, line: int) -> pa.Table:
    """The block as its part's rows: each typed column the typed dictionary on the block's
    indices."""
    count = block.num_rows
    arrays: list[pa.Array | pa.ChunkedArray] = [
        pa.array(np.arange(line, line + count, dtype=np.int64)),
        _constant(pa.array([columns.file[1]], pa.string()), count),
    ]
    for name, column in columns.typed:
        if column is None:
            arrays.append(_constant(typed[name].slice(0, 1).combine_chunks(), count))
        else:
            arrays.append(_on(block.column(column), typed[name]))
    arrays += [block.column(column) for column in columns.extras]
    return pa.Table.from_arrays(arrays, names=columns.names())


def _on(texts: pa.ChunkedArray, typed: pa.ChunkedArray) -> pa.ChunkedArray:
    """``typed`` (a value for each of the texts' dictionary, then padding) on the texts'
    indices, chunk by chunk (joining the chunks' indices costs more than writing them)."""
    dictionary = typed.slice(0, len(texts.chunk(0).dictionary)).combine_chunks()
    return pa.chunked_array(
        [pa.DictionaryArray.from_arrays(chunk.indices, dictionary) for chunk in texts.chunks],
        pa.dictionary(pa.int32(), dictionary.type),
    )


def _has_null(texts: pa.ChunkedArray) -> bool:
    return bool(texts.null_count or texts.chunk(0).dictionary.null_count)


def _constant(value: pa.Array, count: int) -> pa.DictionaryArray:
    """The one value of ``value`` on ``count`` rows, as a dictionary of one."""
    return pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), count), value)


def _writer(
    writers: dict[str, pq.ParquetWriter],
    period: str,
    part: Callable[[str], Path],
    schema: pa.Schema,
    line: str,
) -> pq.ParquetWriter:
    if period not in writers:
        target = part(period)
        target.parent.mkdir(parents=True, exist_ok=True)
        # a row's number is the one before it plus one: delta-encoded, not a dictionary
        writers[period] = pq.ParquetWriter(
            target,
            schema,
            compression="zstd",
            use_dictionary=[name for name in schema.names if name != line],
            column_encoding={line: "DELTA_BINARY_PACKED"},
        )
    return writers[period]


def _close(
    writers: dict[str, pq.ParquetWriter], part: Callable[[str], Path], *, remove: bool
) -> None:
    """Close every part's writer (``remove``: and delete the part)."""
    try:
        for writer in writers.values():
            writer.close()
    finally:
        if remove:
            for period in writers:
                part(period).unlink(missing_ok=True)
