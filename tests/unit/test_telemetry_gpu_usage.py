"""gpu_usage without a server: how queries are cut, how answers decode, and which measured
windows a run keeps over the published ones."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from builders import attempts_table, resources_table

from pipeline.common.errors import InputError
from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.gpu_usage import Target
from pipeline.telemetry.prometheus import chunks, held_gpus, promql
from pipeline.telemetry.prometheus_api import MAX_POINTS, Settings, decode
from pipeline.telemetry.published import kept_usage

UTC = dt.UTC
T0 = 1_790_841_600  # 2026-10-01T08:00:00Z


def test_a_month_is_cut_into_queries_below_the_11000_points_limit() -> None:
    config = Settings(url="http://x", by="pod")
    cuts = list(chunks(T0 + 10, T0 + 30 * 86400, config))
    steps = [(end - start) // 60 + 1 for start, end in cuts]
    assert max(steps) == 10_000 < MAX_POINTS
    assert sum(steps) == 30 * 1440  # every step once: the first ends after the start
    assert cuts[0][0] == T0 + 60 and cuts[-1][1] == T0 + 30 * 86400
    assert all(b[0] == a[1] + 60 for a, b in itertools.pairwise(cuts))


def test_the_query_selects_the_pods_and_keeps_one_series_per_gpu() -> None:
    config = Settings(url="http://x", by="pod", step=30)
    assert promql(config, ["ml/train.0", "ml/train-1"]) == (
        "max by (namespace, pod, Hostname, gpu, UUID) (avg_over_time(DCGM_FI_DEV_GPU_UTIL"
        '{namespace=~"ml",pod=~"train\\\\-1|train\\\\.0"}[30s]))'
    )


def test_an_answer_decodes_to_arrays_with_no_number_as_nan() -> None:
    body = (
        b'{"status":"success","data":{"resultType":"matrix","result":['
        b'{"metric":{"pod":"a","UUID":"GPU-1"},"values":[[1790841660,"12.5"],[1790841720,"NaN"]]},'
        b'{"metric":{"pod":"b"},"values":[]},'
        b'{"metric":{"pod":"c","note":"]] in a label"},"values":[[1790841660.5,"100"]]}]}}'
    )
    matrix = decode(body, Settings(url="http://x", by="pod"), "src")
    assert matrix.labels == [
        {"pod": "a", "UUID": "GPU-1"},
        {"pod": "b"},
        {"pod": "c", "note": "]] in a label"},
    ]
    assert matrix.series.tolist() == [0, 0, 2]
    assert matrix.times.tolist() == [1790841660, 1790841720, 1790841660.5]
    assert matrix.values[0] == 12.5 and math.isnan(matrix.values[1]) and matrix.values[2] == 100


def test_an_error_answer_is_one_error_naming_the_source() -> None:
    body = b'{"status":"error","errorType":"execution","error":"query timed out"}'
    with pytest.raises(InputError) as error:
        decode(body, Settings(url="http://prom:9090", by="pod"), "src")
    assert str(error.value) == (
        "src: http://prom:9090: Prometheus answered an error (execution: query timed out); "
        "check options.metric and the label options"
    )


def usage(attempt: str, state: str, seconds: float) -> dict:
    return {
        "attempt_id": attempt,
        "resource_id": "i-1",
        "gpu": None if state == "unsampled" else "GPU-1",
        "state": state,
        "started_at": dt.datetime(2026, 10, 1, 10, tzinfo=UTC),
        "ended_at": dt.datetime(2026, 10, 1, 11, tzinfo=UTC),
        "sampled_gpu_seconds": seconds,
        "busy_gpu_seconds": seconds / 2,
        "samples": int(seconds // 60),
        "method": "pod",
        "metric": "DCGM_FI_DEV_GPU_UTIL",
        "idle_below": 5.0,
    }


def test_a_run_keeps_the_published_windows_of_attempts_it_found_no_sample_of(
    tmp_path: Path,
) -> None:
    schema = arrow_schema("gpu_usage")
    published = tmp_path / "gpu_usage.parquet"
    rows = [usage("old", "busy", 3600), usage("dropped", "idle", 3600), usage("gone", "busy", 60)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), published)
    # this run: Prometheus has dropped "dropped" (unsampled), measures "old" again and "new"
    measured = pa.Table.from_pylist(
        [usage("dropped", "unsampled", 0), usage("old", "busy", 1800), usage("new", "idle", 60)],
        schema=schema,
    )
    attempts = attempts_table(
        {"attempt_id": name, "experiment_id": "e"} for name in ("old", "dropped", "new")
    )
    kept = kept_usage(published, measured, attempts)
    assert sorted((row["attempt_id"], row["state"], row["sampled_gpu_seconds"])
                  for row in kept.to_pylist()) == [
        ("dropped", "idle", 3600.0),  # the published windows, not coverage 0
        ("new", "idle", 60.0),
        ("old", "busy", 1800.0),  # measured again: this run's rows
    ]  # fmt: skip
    # "gone" is no longer an attempt: its windows go with it
    assert kept_usage(tmp_path / "absent.parquet", measured, attempts) == measured


def test_held_gpus_are_the_resource_rows_with_gpus_each_pod_once() -> None:
    at = dt.datetime(2026, 10, 1, 10, tzinfo=UTC)
    hour = dt.timedelta(hours=1)
    attempts = attempts_table(
        [
            {"attempt_id": "a", "experiment_id": "e", "started_at": at, "ended_at": at + hour},
            {"attempt_id": "b", "experiment_id": "e", "gpu_count": 2, "started_at": at},
        ]
    )
    arn = "arn:aws:eks:us-east-1:1:pod/c/ml/p-b/uid"
    resources = resources_table(
        [
            # a's pod: its instance row and its ARN row (the same GPUs), and a volume
            {"attempt_id": "a", "resource_id": "i-1", "resource_kind": "ec2_instance",
             "started_at": at, "ended_at": at + hour, "gpu_count": 4, "pod": "ml/p-a"},
            {"attempt_id": "a", "resource_id": "arn-a", "resource_kind": "eks_pod",
             "started_at": at, "ended_at": at + hour, "gpu_count": 4, "pod": "ml/p-a"},
            {"attempt_id": "a", "resource_id": "vol-1", "gpu_count": 0, "pod": "ml/p-a"},
            # b's pod has only its ARN row (no nodes dump), its count and times the attempt's
            {"attempt_id": "b", "resource_id": arn, "resource_kind": "eks_pod", "pod": "ml/p-b"},
        ]
    )  # fmt: skip
    tables = {"attempts": attempts, "attempt_resources": resources}
    now = at + 3 * hour
    t = at.timestamp()
    assert held_gpus(tables, "pod", now) == [
        Target("a", "i-1", "ml/p-a", t, t + 3600, 4),
        Target("b", arn, "ml/p-b", t, t + 3 * 3600, 2),  # still running: held until now
    ]
    # by host every row with GPUs is an instance to look up in the node map
    assert [target.resource_id for target in held_gpus(tables, "host", now)] == [
        "i-1",
        "arn-a",
        arn,
    ]
