"""attempt_events: timestamped events of an attempt (checkpoints, restarts), a pandera model."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from schemas.attempts import NOT_BLANK, UTC

REQUIRED = ("attempt_id", "event_at", "event_type")


class AttemptEvents(pa.DataFrameModel):
    """One row per event: checkpoint_saved, checkpoint_loaded, interrupted, resumed, first_step, ...

    Field order is the canonical column order.
    """

    attempt_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    event_at: UTC = pa.Field()
    event_type: pl.String = pa.Field(str_contains=NOT_BLANK)
    step: pl.Int64 = pa.Field(nullable=True)
    duration_s: pl.Float64 = pa.Field(nullable=True)
    details: pl.String = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = True
