"""attempt_resources: which billable resources an attempt held, and when (a pandera model)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from schemas.attempts import NOT_BLANK, UTC

REQUIRED = ("attempt_id", "resource_id")


class AttemptResources(pa.DataFrameModel):
    """One row per interval an attempt held a resource (EC2 instance, volume, pod, bucket, ...).

    The key of the resource+time join; field order is the canonical column order.
    """

    attempt_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    resource_id: pl.String = pa.Field(str_contains=NOT_BLANK)
    resource_kind: pl.String = pa.Field(nullable=True)
    started_at: UTC = pa.Field(nullable=True)
    ended_at: UTC = pa.Field(nullable=True)
    gpu_count: pl.Int64 = pa.Field(nullable=True, ge=0)
    # requested on this resource (a pod's requests, or the instance's size); the
    # cpu_memory_requested pool driver weighs attempts by them
    vcpu_count: pl.Float64 = pa.Field(nullable=True, ge=0)
    memory_gib: pl.Float64 = pa.Field(nullable=True, ge=0)
    # the Kubernetes pod the resource was held through, as namespace/name: the labels a DCGM
    # exporter puts on the GPU series of the pod (the Prometheus source's by = "pod")
    pod: pl.String = pa.Field(nullable=True)

    class Config:
        strict = True
        ordered = True

    @pa.dataframe_check
    def ended_at_not_before_started_at(cls, data: pa.PolarsData) -> pl.LazyFrame:
        """A resource interval cannot end before it starts (either may be NULL)."""
        return data.lazyframe.select(~(pl.col("ended_at") < pl.col("started_at")).fill_null(False))
