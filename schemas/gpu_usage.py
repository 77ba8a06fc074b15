"""gpu_usage: measured GPU utilisation of the attempts' held GPUs, in windows (a pandera model)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from schemas.attempts import NOT_BLANK, UTC

STATES = ("idle", "busy", "unsampled")
METHODS = ("pod", "host")


class GpuUsage(pa.DataFrameModel):
    """One row per window of one GPU an attempt held: a run of consecutive samples all below
    (idle) or all at or above (busy) the idle threshold; a held resource interval with no sample
    at all is one `unsampled` row without a GPU. Field order is the column order."""

    attempt_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    resource_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    gpu: pl.String = pa.Field(nullable=True)
    state: pl.String = pa.Field(isin=STATES)
    started_at: UTC = pa.Field()
    ended_at: UTC = pa.Field()
    # GPU-seconds the samples cover inside the held interval (times the attempt's share of the
    # node's GPUs when series are matched by host)
    sampled_gpu_seconds: pl.Float64 = pa.Field(ge=0)
    # the same seconds weighted by utilisation / 100
    busy_gpu_seconds: pl.Float64 = pa.Field(ge=0)
    samples: pl.Int64 = pa.Field(ge=0)
    method: pl.String = pa.Field(isin=METHODS)
    metric: pl.String = pa.Field()
    idle_below: pl.Float64 = pa.Field()

    class Config:
        strict = True
        ordered = True
