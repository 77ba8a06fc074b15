"""GPU samples -> telemetry gpu_usage windows, aggregated as each query's answer arrives.

A sample of the query at time t stands for the step before it, (t - step, t]: the seconds of that
step inside the held interval are the GPU-seconds it covers. Consecutive samples on one side of
the idle threshold make one window; a step with no sample ends a window (no sample is not
zero: those seconds are left out of the sampled GPU-seconds, so coverage shows them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.telemetry.canonical import arrow_schema


@dataclass(frozen=True)
class Target:
    """One held GPU interval of an attempt: the attempt_resources row a series is matched to."""

    attempt_id: str
    resource_id: str
    key: str  # the pod (namespace/name) or the instance id the series reach it by
    start: float  # epoch seconds
    end: float
    gpus: int


@dataclass
class Windows:
    """The windows found so far, as arrays per (target, GPU) stretch; merged at the end."""

    step: int
    idle_below: float
    method: str
    metric: str
    ids: list[tuple[str, str, str]] = field(default_factory=list)  # attempt, resource, gpu
    counts: list[int] = field(default_factory=list)
    parts: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    sampled_targets: set[Target] = field(default_factory=set)

    def add(
        self, target: Target, gpu: str, times: np.ndarray, values: np.ndarray, weight: float
    ) -> None:
        """The windows of one GPU's samples (sorted by time) inside one target's interval."""
        low = np.maximum(times - self.step, target.start)
        high = np.minimum(times, target.end)
        inside = (high > low) & ~np.isnan(values)
        if not inside.any():
            return
        times, values, low, high = times[inside], values[inside], low[inside], high[inside]
        idle = values < self.idle_below
        breaks = np.flatnonzero((np.diff(times) > self.step * 1.5) | (idle[1:] != idle[:-1])) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks, [len(times)])) - 1
        seconds = high - low
        busy = seconds * np.clip(values, 0, 100) / 100
        self.ids.append((target.attempt_id, target.resource_id, gpu))
        self.counts.append(len(first))
        self.parts.append(
            (
                low[first],
                high[last],
                idle[first],
                np.add.reduceat(seconds, first) * weight,
                np.add.reduceat(busy, first) * weight,
                last - first + 1,
            )
        )
        self.sampled_targets.add(target)

    def table(self, targets: list[Target]) -> pa.Table:
        """gpu_usage rows: the windows, adjacent ones of one state merged (a long interval is
        read in several queries), and one `unsampled` row per target without any sample."""
        schema = arrow_schema("gpu_usage")
        frames = []
        if self.parts:
            columns = [np.concatenate([part[i] for part in self.parts]) for i in range(6)]
            ids = [np.repeat(np.array([i[n] for i in self.ids], dtype=object), self.counts)
                   for n in range(3)]  # fmt: skip
            frame = pl.DataFrame(
                {
                    "attempt_id": ids[0].tolist(),
                    "resource_id": ids[1].tolist(),
                    "gpu": ids[2].tolist(),
                    "start": columns[0],
                    "end": columns[1],
                    "idle": columns[2],
                    "sampled": columns[3],
                    "busy": columns[4],
                    "samples": columns[5].astype(np.int64),
                }
            )
            frames.append(_merged(frame))
        missing = [target for target in targets if target not in self.sampled_targets]
        if missing:
            frames.append(
                pl.DataFrame(
                    {
                        "attempt_id": [target.attempt_id for target in missing],
                        "resource_id": [target.resource_id for target in missing],
                        "gpu": pl.Series([None] * len(missing), dtype=pl.String),
                        "state": ["unsampled"] * len(missing),
                        "start": [target.start for target in missing],
                        "end": [target.end for target in missing],
                        "sampled": [0.0] * len(missing),
                        "busy": [0.0] * len(missing),
                        "samples": pl.Series([0] * len(missing), dtype=pl.Int64),
                    }
                )
            )
        if not frames:
            return schema.empty_table()
        frame = pl.concat(frames).sort(["attempt_id", "resource_id", "gpu", "start"])
        out = frame.select(
            "attempt_id",
            "resource_id",
            "gpu",
            "state",
            _time("start").alias("started_at"),
            _time("end").alias("ended_at"),
            pl.col("sampled").alias("sampled_gpu_seconds"),
            pl.col("busy").alias("busy_gpu_seconds"),
            "samples",
            pl.lit(self.method).alias("method"),
            pl.lit(self.metric).alias("metric"),
            pl.lit(self.idle_below, pl.Float64).alias("idle_below"),
        )
        return out.to_arrow().cast(schema)


def _merged(frame: pl.DataFrame) -> pl.DataFrame:
    """Windows of one GPU that touch (one ends where the next starts) and share a state, as one."""
    key = ["attempt_id", "resource_id", "gpu"]
    frame = frame.sort([*key, "start"])
    same = (
        (pl.col("attempt_id") == pl.col("attempt_id").shift())
        & (pl.col("resource_id") == pl.col("resource_id").shift())
        & (pl.col("gpu") == pl.col("gpu").shift())
        & (pl.col("idle") == pl.col("idle").shift())
        & (pl.col("start") == pl.col("end").shift())
    ).fill_null(False)
    grouped = frame.with_columns((~same).cum_sum().alias("window"))
    return (
        grouped.group_by("window", maintain_order=True)
        .agg(
            pl.col("attempt_id").first(),
            pl.col("resource_id").first(),
            pl.col("gpu").first(),
            pl.when(pl.col("idle").first())
            .then(pl.lit("idle"))
            .otherwise(pl.lit("busy"))
            .alias("state"),
            pl.col("start").first(),
            pl.col("end").last(),
            pl.col("sampled").sum(),
            pl.col("busy").sum(),
            pl.col("samples").sum(),
        )
        .drop("window")
    )


def _time(column: str) -> pl.Expr:
    return (pl.col(column) * 1_000_000).round().cast(pl.Int64).cast(pl.Datetime("us", "UTC"))


def epoch(value: dt.datetime) -> float:
    """A timezone-aware time as epoch seconds."""
    return value.timestamp()
