"""experiments: one row per experiment with its quality bar, as a pandera model."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from schemas.attempts import NOT_BLANK

REQUIRED = ("experiment_id",)


class Experiments(pa.DataFrameModel):
    """One row per experiment (the logical trial); field order is the canonical column order."""

    experiment_id: pl.String = pa.Field(unique=True, str_contains=NOT_BLANK)
    team: pl.String = pa.Field(nullable=True)
    quality_metric: pl.String = pa.Field(nullable=True)
    quality_threshold: pl.Float64 = pa.Field(nullable=True)
    higher_is_better: pl.Boolean = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = True
