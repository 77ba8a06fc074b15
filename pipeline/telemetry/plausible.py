"""Telemetry that reads but cannot be right, checked alike in the telemetry files and in what a
source's adapter returns: times before any bill or past the run's clock, NaN or infinite
numbers, more GPUs than the instance type has, attempts of experiments no one lists."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping, Sequence

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import ROW, Problem, rows_where
from pipeline.telemetry.conversion import UTC, Check, implausible_times, not_finite, show
from pipeline.telemetry.gpus import attempt_gpu_claims, attempt_gpu_problems

log = logging.getLogger("runcost")

CHECKED = ("attempts", "attempt_resources", "attempt_events", "experiments")
_FIX = (
    'fix it where the source records it, or set telemetry.on_error = "skip" to leave the '
    "attempt out"
)


def value_checks(frame: pl.DataFrame, now: dt.datetime) -> Iterator[tuple[str, Check]]:
    """(column, check) of every canonical time and number column of a frame: a time before any
    bill or past ``now`` by more than a day, a NaN or infinite number (a NaN metric passes every
    threshold). The telemetry files run the same checks on the values they read (conversion)."""
    for column, dtype in frame.schema.items():
        if dtype == UTC:
            for check in implausible_times(now, pl.col(column)):
                yield column, check
        elif dtype == pl.Float64:
            odd = pl.col(column).is_nan() | pl.col(column).is_infinite()
            yield column, (odd, not_finite(column))


def unknown_experiments(attempts: pl.DataFrame, known: Sequence[str]) -> pl.DataFrame:
    """experiment_id, its attempts' ROW and attempt_id lists, of the attempts whose experiment is
    not in ``known``, in first-seen order."""
    listed = pl.Series("experiment_id", list(known), dtype=pl.String).to_frame()
    return (
        attempts.join(listed, on="experiment_id", how="anti")
        .group_by("experiment_id", maintain_order=True)
        .agg(pl.col(ROW), pl.col("attempt_id"))
    )


def check_source_tables(
    tables: Mapping[str, pa.Table], label: str, now: dt.datetime | None = None, skip: bool = False
) -> dict[str, pa.Table]:
    """A source's canonical tables, refused (InputError) as the telemetry files are when a time,
    a number or a GPU count cannot be right, naming the source, the attempt (and its record in
    the source) and the column. ``skip`` (telemetry.on_error = "skip"): the attempts concerned
    are left out, with their resources and events, and counted in a warning instead."""
    now = now or dt.datetime.now(dt.UTC)
    frames = {
        name: _frame(tables[name]) for name in CHECKED if name in tables and tables[name].num_rows
    }
    found: list[tuple[str, Problem]] = []
    bad: dict[str, pl.Series] = {}
    for name, frame in frames.items():
        for column, (mask, describe) in value_checks(frame, now):
            rows = frame.select(mask.fill_null(False)).to_series()
            if rows.any():
                found += [(name, problem) for problem in rows_where(frame, rows, column, describe)]
                _add(bad, name, frame.filter(rows).get_column(ROW))
    if "attempts" in frames:
        # the attempt's claim only: an adapter's resource row may stand for the whole job (a
        # SageMaker training job's instances, an MLflow run's total), not one instance as a row
        # of the telemetry files does
        attempts = frames["attempts"]
        claims = attempt_gpu_claims(attempts)
        if claims.height:
            found += [("attempts", problem) for problem in attempt_gpu_problems(attempts)]
            _add(bad, "attempts", claims.get_column(ROW))
    if not found:
        return dict(tables)
    found.sort(key=lambda item: (CHECKED.index(item[0]), item[1].rows[:1]))
    first = _where(label, frames, *found[0])
    more = sum(1 + problem.more for _, problem in found) - 1
    if not skip:
        others = f" ({more} more problem(s) in this source)" if more else ""
        raise InputError(f"{first}{others}; {_FIX}")
    return _without(tables, frames, bad, label, first)


def warn_unknown_experiments(
    batches: Sequence[tuple[str, Mapping[str, pa.Table]]],
    checked: Sequence[tuple[str, Mapping[str, pa.Table]]],
) -> None:
    """Warn about the attempts of ``checked`` sources whose experiment no batch's experiments
    list holds (when some batch lists experiments): no team, quality metric or threshold applies
    to them."""
    known = [
        experiment
        for _, tables in batches
        if "experiments" in tables
        for experiment in tables["experiments"].column("experiment_id").to_pylist()
    ]
    if not known:
        return
    for label, tables in checked:
        if "attempts" not in tables or not tables["attempts"].num_rows:
            continue
        unknown = unknown_experiments(_frame(tables["attempts"]), known)
        if unknown.height:
            experiment, _rows, attempt_ids = unknown.row(0)
            others = unknown.height - 1
            more = f" ({others} more unknown experiment(s))" if others else ""
            log.warning(
                "%s: experiment %s of attempt(s) %s is in no source's experiments%s; no team, "
                "quality metric or threshold applies to it: add the experiment where the "
                "experiments are listed, or fix the experiment id where the source records it",
                label,
                show(experiment),
                ", ".join(map(show, attempt_ids[:5])),
                more,
                extra={"stage": "telemetry"},
            )


def _frame(table: pa.Table) -> pl.DataFrame:
    """A canonical table as polars, with ROW (from 1) and the attempt's source and record (from
    tags, for messages) in place of the tags."""
    frame = pl.from_arrow(table.drop_columns([c for c in ("tags",) if c in table.schema.names]))
    assert isinstance(frame, pl.DataFrame)
    if "tags" in table.schema.names:
        tags = table.column("tags")
        frame = frame.with_columns(
            pl.Series("__source", pc.map_lookup(tags, pa.scalar("source"), "last")),
            pl.Series("__native", pc.map_lookup(tags, pa.scalar("source_native_id"), "last")),
        )
    return frame.with_row_index(ROW, offset=1).with_columns(pl.col(ROW).cast(pl.Int64))


def _add(bad: dict[str, pl.Series], name: str, rows: pl.Series) -> None:
    bad[name] = rows if name not in bad else pl.concat([bad[name], rows]).unique()


def _where(label: str, frames: Mapping[str, pl.DataFrame], name: str, problem: Problem) -> str:
    """``<label>: <table> of attempt 'a1' (its mlflow record 'r1'), column c: <text>``."""
    frame = frames[name]
    row = frame.filter(pl.col(ROW) == problem.rows[0]).row(0, named=True)
    if name == "experiments":
        owner = f"experiment {show(row['experiment_id'])}"
    else:
        attempt = row["attempt_id"]
        owner = (
            f"attempt {show(attempt)}"
            if name == "attempts"
            else f"{name} of attempt {show(attempt)}"
        )
        attempts = frames.get("attempts")
        record = None
        if attempts is not None and "__native" in attempts.columns:
            match = attempts.filter(pl.col("attempt_id") == attempt)
            if match.height:
                record = match.select("__source", "__native").row(0)
        if record is not None and record[1] is not None and record[1] != attempt:
            owner += f" (its {record[0] or 'source'} record {show(record[1])})"
    return f"{label}: {owner}, column {problem.column}: {problem.text}"


def _without(
    tables: Mapping[str, pa.Table],
    frames: Mapping[str, pl.DataFrame],
    bad: Mapping[str, pl.Series],
    label: str,
    first: str,
) -> dict[str, pa.Table]:
    """The tables without the attempts a bad row belongs to (and without bad experiments)."""
    attempt_ids: set[str] = set()
    for name, rows in bad.items():
        if name != "experiments":
            frame = frames[name].filter(pl.col(ROW).is_in(rows.to_list()))
            attempt_ids.update(frame.get_column("attempt_id").to_list())
    out = dict(tables)
    keep_ids = pa.array(sorted(attempt_ids), pa.string())
    for name in ("attempts", "attempt_resources", "attempt_events"):
        if name in out and out[name].num_rows:
            out[name] = out[name].filter(pc.invert(pc.is_in(out[name]["attempt_id"], keep_ids)))
    if "experiments" in bad:
        rows = frames["experiments"].get_column(ROW).is_in(bad["experiments"].to_list())
        out["experiments"] = out["experiments"].filter(pc.invert(rows.to_arrow()))
    log.warning(
        "%s: skipped %d attempt(s) and %d experiment(s) that cannot be right "
        '(telemetry.on_error = "skip"); first: %s',
        label,
        len(attempt_ids),
        len(bad.get("experiments", ())),
        first,
        extra={"stage": "telemetry"},
    )
    return out
