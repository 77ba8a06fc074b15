"""attempts: one row per execution of an experiment (DESIGN.md section 5), as a pandera model."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

STATUSES = ("succeeded", "failed", "interrupted", "cancelled", "timeout", "running", "unknown")
CAPACITY_TYPES = ("on_demand", "spot", "reserved", "capacity_block")
# Columns a file must have; every other column may be absent (then NULL).
REQUIRED = ("attempt_id", "experiment_id", "status")

# A value with at least one non-blank character; required text columns must match it.
NOT_BLANK = r"\S"
UTC = pl.Datetime("us", "UTC")
# In polars tags are a list of key/value structs; the Arrow table holds map<string, string>.
TAGS = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))


class Attempts(pa.DataFrameModel):
    """One row per attempt; a retry is a new attempt with its own attempt_id.

    Field order is the canonical column order.
    """

    attempt_id: pl.String = pa.Field(unique=True, str_contains=NOT_BLANK)
    experiment_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    parent_attempt_id: pl.String = pa.Field(nullable=True)
    model_version: pl.String = pa.Field(nullable=True)
    config_version: pl.String = pa.Field(nullable=True)
    dataset_snapshot: pl.String = pa.Field(nullable=True)
    provider: pl.String = pa.Field(nullable=True)
    account_id: pl.String = pa.Field(nullable=True)
    region: pl.String = pa.Field(nullable=True)
    cluster: pl.String = pa.Field(nullable=True)
    namespace: pl.String = pa.Field(nullable=True)
    instance_type: pl.String = pa.Field(nullable=True)
    gpu_type: pl.String = pa.Field(nullable=True)
    gpu_count: pl.Int64 = pa.Field(nullable=True, ge=0)
    node_count: pl.Int64 = pa.Field(nullable=True, ge=0)
    capacity_type: pl.String = pa.Field(nullable=True, isin=CAPACITY_TYPES)
    submitted_at: UTC = pa.Field(nullable=True)
    started_at: UTC = pa.Field(nullable=True)
    ended_at: UTC = pa.Field(nullable=True)
    status: pl.String = pa.Field(isin=STATUSES)
    failure_reason: pl.String = pa.Field(nullable=True)
    metric_name: pl.String = pa.Field(nullable=True)
    metric_value: pl.Float64 = pa.Field(nullable=True)
    artifact_uri: pl.String = pa.Field(nullable=True)
    tags: TAGS = pa.Field()

    class Config:
        strict = True
        ordered = True

    @pa.dataframe_check
    def ended_at_not_before_started_at(cls, data: pa.PolarsData) -> pl.LazyFrame:
        """An attempt cannot end before it starts (either may be NULL)."""
        return data.lazyframe.select(~(pl.col("ended_at") < pl.col("started_at")).fill_null(False))
