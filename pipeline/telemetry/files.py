"""Telemetry files (CSV, JSON lines, Parquet) in one folder -> validated canonical Arrow tables."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re
from pathlib import Path

import pandera.errors
import polars as pl
import pyarrow as pa

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import (
    DATASETS,
    REQUIRED,
    ROW,
    ROWS_SHOWN,
    Problem,
    coerce,
    empty_table,
    polars_schema,
    show,
    to_arrow,
)
from pipeline.telemetry.gpus import attempt_gpu_problems, resource_gpu_problems
from pipeline.telemetry.plausible import unknown_experiments

log = logging.getLogger("runcost")

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
# Stated in every message that names rows, so the number can be found in the file.
ROW_CONVENTION = {
    "csv": "rows are data rows counted from 1; the header line is not counted",
    "jsonl": "rows are JSON records counted from 1; blank lines are not counted",
    "parquet": "rows are counted from 1",
}
PROBLEMS_SHOWN = 20


def load_telemetry(folder: Path, now: dt.datetime | None = None) -> dict[str, pa.Table]:
    """Read, validate and coerce the telemetry files of a folder into canonical Arrow tables.

    Returns exactly the keys attempts, attempt_resources, attempt_events and experiments, each
    with every canonical column in canonical order (see schemas/); an optional dataset with no
    file is an empty table. Raises InputError naming file, row, column and the fix; warns about
    attempts of experiments the experiments file does not list. ``now``: the clock no time may
    run past by more than a day (default: now).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            f"{folder}: telemetry folder not found; point telemetry.path at a folder holding "
            f"{_accepted('attempts')}"
        )
    paths = find_files(folder)
    frames = {name: read_dataset(path, name, now) for name, path in paths.items()}
    for child in ("attempt_resources", "attempt_events"):
        if child in frames:
            _check_attempt_ids(frames[child], paths[child], frames["attempts"], paths["attempts"])
    attempts_path = paths["attempts"]
    raise_problems(
        attempts_path, SUFFIXES[attempts_path.suffix], attempt_gpu_problems(frames["attempts"])
    )
    if "attempt_resources" in frames:
        path = paths["attempt_resources"]
        found = resource_gpu_problems(frames["attempt_resources"], frames["attempts"])
        raise_problems(path, SUFFIXES[path.suffix], found)
    if "experiments" in frames:
        _warn_unknown_experiments(
            frames["attempts"], attempts_path, paths["experiments"], frames["experiments"]
        )
    # each frame is dropped once it is Arrow: loading 3.3M attempts and 6.7M resources peaked
    # at 4,654-4,664 MB with every frame held to the end, 4,137-4,289 MB this way
    tables = {}
    for name in DATASETS:
        frame = frames.pop(name, None)
        tables[name] = empty_table(name) if frame is None else to_arrow(frame, name)
    return tables


def _accepted(name: str) -> str:
    names = [f"{name}{suffix}" for suffix in SUFFIXES]
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def _refuse_not_a_file(path: Path, name: str) -> None:
    """A directory, a named pipe or a dangling link where the dataset's file belongs."""
    if path.is_file() or not (path.exists() or path.is_symlink()):
        return
    if path.is_dir():
        what = "is a directory, not a file"
        fix = f"remove or rename the directory and write the {name} rows to the file {path.name}"
    elif path.exists():
        what = "is not a regular file (a named pipe, socket or device)"
        fix = f"write the {name} rows to a regular file {path.name} instead"
    else:
        what = f"is a symbolic link to {path.readlink()}, which does not exist"
        fix = f"point the link at the {name} file, or copy the file here"
    raise InputError(
        f"{path}: {what}; runcost reads the {name} dataset from one regular file: {fix}"
    )


def find_files(folder: Path) -> dict[str, Path]:
    """Dataset name -> its one file in the folder; attempts is required, the others optional."""
    found: dict[str, Path] = {}
    for name in DATASETS:
        paths = [folder / f"{name}{suffix}" for suffix in SUFFIXES]
        for path in paths:
            _refuse_not_a_file(path, name)
        paths = [path for path in paths if path.is_file()]
        if len(paths) > 1:
            names = " and ".join(path.name for path in paths)
            raise InputError(
                f"{folder}: {name} has {len(paths)} files ({names}); keep one of them "
                "(a dataset is one file)"
            )
        if paths:
            found[name] = paths[0]
    if "attempts" not in found:
        raise InputError(
            f"{folder}: no attempts file; write the attempts (one row per attempt) to "
            f"{_accepted('attempts')} in this folder"
        )
    return found


def read_dataset(path: Path, name: str, now: dt.datetime | None = None) -> pl.DataFrame:
    """One telemetry file -> a validated frame of the canonical columns plus ROW (row numbers)."""
    fmt = SUFFIXES[path.suffix]
    if path.stat().st_size == 0:
        raise InputError(
            f"{path}: the file is empty (0 bytes), which is what a failed or unfinished write "
            "leaves, not a dataset with no rows; write the file again (a dataset with no rows "
            f"is a CSV file holding only its header line: {','.join(REQUIRED[name])})"
        )
    raw = read_raw(path, fmt)
    if raw.width == 1 and raw.height == 0:
        # An empty file (no header, no records) is an empty dataset.
        raw = pl.DataFrame(schema={ROW: pl.Int64, **dict.fromkeys(REQUIRED[name], pl.String)})
    check_columns(raw, name, path)
    coerced = coerce(raw, name, now)
    problems = coerced.problems + validate(coerced.frame, name, coerced.unreadable)
    raise_problems(path, fmt, problems)
    return coerced.frame


def read_raw(path: Path, fmt: str) -> pl.DataFrame:
    """The file as polars: CSV and JSON lines as text columns, Parquet as stored; plus ROW."""
    try:
        if fmt == "jsonl":
            return read_json_lines(path)
        if fmt == "csv":
            if path.stat().st_size == 0:
                return pl.DataFrame(schema={ROW: pl.Int64})
            frame = pl.read_csv(path, infer_schema=False, row_index_name=ROW, row_index_offset=1)
        else:
            frame = pl.read_parquet(path, row_index_name=ROW, row_index_offset=1)
    except (pl.exceptions.PolarsError, OSError) as error:
        fix = {
            "csv": "as CSV ({}); write CSV with one header line of column names",
            "jsonl": "as JSON lines ({}); write one JSON object per line",
            "parquet": "as Parquet ({}); write the file again as Parquet",
        }[fmt]
        raise InputError(f"{path}: cannot read the file " + fix.format(error)) from None
    return frame.with_columns(pl.col(ROW).cast(pl.Int64))


def read_json_lines(path: Path) -> pl.DataFrame:
    """JSON lines -> one String column per key (nested values as JSON text) plus ROW."""
    data = path.read_bytes()
    if not data.strip():
        return pl.DataFrame(schema={ROW: pl.Int64})
    try:
        keys = list(pl.read_ndjson(io.BytesIO(data), infer_schema_length=None).columns)
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError):
        # polars cannot infer a schema (a bad line, or nested values of different shapes);
        # find the bad line for the message, or collect the keys when every line is fine.
        keys = _json_keys(data, path)
    frame = pl.read_ndjson(
        io.BytesIO(data),
        schema={key: pl.String for key in keys} or None,
        row_index_name=ROW,
        row_index_offset=1,
    )
    return frame.with_columns(pl.col(ROW).cast(pl.Int64))


def _json_keys(data: bytes, path: Path) -> list[str]:
    keys: dict[str, None] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"{path}: line {number} is not valid JSON ({error.msg} at column "
                f"{error.colno}); write one JSON object per line"
            ) from None
        except UnicodeDecodeError:
            raise InputError(
                f"{path}: line {number} is not UTF-8; save the file as UTF-8"
            ) from None
        if not isinstance(record, dict):
            raise InputError(
                f"{path}: line {number} is a JSON {type(record).__name__}, not an object; "
                'write one JSON object per line, e.g. {"attempt_id": "a1", ...}'
            )
        keys.update(dict.fromkeys(record))
    return list(keys)


def check_columns(raw: pl.DataFrame, name: str, path: Path) -> None:
    """Required columns are present; only attempts may have extra columns (they become tags)."""
    columns = [column for column in raw.columns if column != ROW]
    for column in columns:
        original = re.sub(r"_duplicated_\d+$", "", column)
        if original != column and original in columns:
            raise InputError(f"{path}: column {original} appears twice; keep one of them")
    missing = [column for column in REQUIRED[name] if column not in columns]
    if missing:
        near = [c for c in columns if c.strip().lower() in missing and c not in missing]
        hint = f"; column names are exact: found {', '.join(map(repr, near))}" if near else ""
        raise InputError(
            f"{path}: column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} missing; {name} needs the columns "
            f"{', '.join(REQUIRED[name])} (found: {', '.join(columns) or 'no columns'}){hint}"
        )
    if name == "attempts":
        return
    allowed = polars_schema(name)
    extra = [column for column in columns if column not in allowed]
    if extra:
        raise InputError(
            f"{path}: column{'s' if len(extra) > 1 else ''} {', '.join(extra)} "
            f"{'are' if len(extra) > 1 else 'is'} not in {name}; the allowed columns are "
            f"{', '.join(allowed)}: rename or remove {'them' if len(extra) > 1 else 'it'}"
        )


def validate(
    frame: pl.DataFrame, name: str, unreadable: dict[str, pl.Series] | None = None
) -> list[Problem]:
    """Problems the dataset's pandera model finds in a coerced frame, with file row numbers.

    A value that could not be read is NULL in the frame and already reported; `unreadable`
    (column -> rows) keeps it from being reported again as empty.
    """
    unreadable = unreadable or {}
    model = DATASETS[name]
    try:
        model.validate(frame.drop(ROW), lazy=True)
    except pandera.errors.SchemaErrors as errors:
        failures = errors.failure_cases
    else:
        return []
    rows = frame.get_column(ROW)
    problems: list[Problem] = []
    for (column, check), group in failures.group_by("column", "check", maintain_order=True):
        indices = group.get_column("index").drop_nulls().unique(maintain_order=True)
        if check == "not_nullable" and column in unreadable:
            indices = indices.filter(~unreadable[str(column)].gather(indices))
            if indices.len() == 0:
                continue
        if check == "field_uniqueness":
            problems.extend(_duplicates(frame, str(column)))
            continue
        if indices.len() == 0:
            # Not about rows (say a wrong dtype): a bug in coercion, reported as pandera says.
            problems.append(Problem((), str(column), f"fails {check}: {group.row(0)}"))
            continue
        found = []
        for index in indices.head(ROWS_SHOWN).to_list():
            if check == "ended_at_not_before_started_at":
                started, ended = frame[index, "started_at"], frame[index, "ended_at"]
                text = (
                    f"ended_at {show(ended)} is before started_at {show(started)}; fix the "
                    "times (an interval cannot end before it starts)"
                )
                found.append(Problem((rows[index],), "ended_at", text))
            else:
                text = _explain(str(check), str(column), frame[index, column])
                found.append(Problem((rows[index],), str(column), text))
        if indices.len() > ROWS_SHOWN:
            last = found[-1]
            found[-1] = Problem(last.rows, last.column, last.text, indices.len() - ROWS_SHOWN)
        problems.extend(found)
    return problems


def _explain(check: str, column: str, value: object) -> str:
    if check == "not_nullable" or check.startswith("str_contains("):
        return f"is empty; {column} is required: fill it in or remove the row"
    if check.startswith("isin("):
        allowed = re.findall(r"'([^']*)'", check)
        return f"{show(value)} is not a valid {column}; use one of {', '.join(allowed)}"
    if check.startswith("greater_than_or_equal_to("):
        return f"{show(value)} is negative; write 0 or more"
    return f"{show(value)} fails the check {check}"


def _duplicates(frame: pl.DataFrame, column: str) -> list[Problem]:
    groups = (
        frame.filter(pl.col(column).is_duplicated())
        .group_by(column, maintain_order=True)
        .agg(pl.col(ROW))
    )
    fix = {
        "attempt_id": "each attempt needs its own attempt_id (a retry is a new attempt with a new "
        "id): keep one of the rows or give the other a new attempt_id",
        "experiment_id": "keep one row per experiment",
    }[column]
    problems = [
        _at_rows(rows, column, f"{show(value)} appears more than once; {fix}")
        for value, rows in groups.head(ROWS_SHOWN).iter_rows()
    ]
    if groups.height > ROWS_SHOWN:
        problems.append(Problem((), column, f"{groups.height - ROWS_SHOWN} more repeated values"))
    return problems


def _at_rows(rows: list[int], column: str, text: str) -> Problem:
    shown = tuple(rows[:ROWS_SHOWN])
    return Problem(shown, column, text, more=len(rows) - len(shown))


def _check_attempt_ids(
    frame: pl.DataFrame, path: Path, attempts: pl.DataFrame, attempts_path: Path
) -> None:
    unknown = (
        frame.join(attempts.select("attempt_id"), on="attempt_id", how="anti")
        .group_by("attempt_id", maintain_order=True)
        .agg(pl.col(ROW))
    )
    problems = [
        _at_rows(
            rows,
            "attempt_id",
            f"attempt {show(attempt_id)} is not in {attempts_path.name}; add the attempt to "
            f"{attempts_path.name} or remove the row(s)",
        )
        for attempt_id, rows in unknown.head(ROWS_SHOWN).iter_rows()
    ]
    if unknown.height > ROWS_SHOWN:
        problems.append(
            Problem((), "attempt_id", f"{unknown.height - ROWS_SHOWN} more unknown attempt ids")
        )
    raise_problems(path, SUFFIXES[path.suffix], problems)


def _warn_unknown_experiments(
    attempts: pl.DataFrame, path: Path, experiments_path: Path, experiments: pl.DataFrame
) -> None:
    """An attempt of an experiment the delivered experiments file does not list: its cost is
    placed, but no team, quality metric or threshold applies to it (warned: the file may list
    only the experiments that have them)."""
    unknown = unknown_experiments(attempts, experiments.get_column("experiment_id").to_list())
    problems = [
        _at_rows(
            rows,
            "experiment_id",
            f"experiment {show(experiment)} of attempt{'s' if len(ids) > 1 else ''} "
            f"{', '.join(map(show, ids[:ROWS_SHOWN]))} is not in {experiments_path.name}; no "
            "team, quality metric or threshold applies to it: add the experiment to "
            f"{experiments_path.name} or fix the experiment_id",
        )
        for experiment, rows, ids in unknown.head(PROBLEMS_SHOWN).iter_rows()
    ]
    if unknown.height > PROBLEMS_SHOWN:
        more = unknown.height - PROBLEMS_SHOWN
        problems.append(Problem((), "experiment_id", f"{more} more unknown experiment ids"))
    text = problems_text(path, SUFFIXES[path.suffix], problems)
    if text:
        log.warning("%s", text, extra={"stage": "telemetry"})


def problems_text(path: Path, fmt: str, problems: list[Problem]) -> str | None:
    """The problems found in a file as one message (None if there are none)."""
    if not problems:
        return None
    problems = sorted(problems, key=lambda problem: problem.rows[:1] or (0,))
    convention = f"({ROW_CONVENTION[fmt]})"
    if len(problems) == 1:
        return f"{path}: {problems[0].render()} {convention}"
    lines = [f"{path}: {len(problems)} problems {convention}:"]
    lines.extend(f"  {problem.render()}" for problem in problems[:PROBLEMS_SHOWN])
    if len(problems) > PROBLEMS_SHOWN:
        lines.append(f"  ... and {len(problems) - PROBLEMS_SHOWN} more")
    return "\n".join(lines)


def raise_problems(path: Path, fmt: str, problems: list[Problem]) -> None:
    """Raise one InputError listing the problems found in a file (nothing if there are none)."""
    text = problems_text(path, fmt, problems)
    if text:
        raise InputError(text)
