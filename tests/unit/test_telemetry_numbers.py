"""Resource counts and sizes in telemetry: NaN, Infinity, negative or non-numeric values are
refused at load naming file, row and column (not far away in allocation.pool_driver_weights)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_telemetry_files import CONVENTION, FORMATS, attempt, load_error, write

from pipeline.telemetry import load_telemetry

CASES = [
    (
        "vcpu_count",
        "NaN",
        "'NaN' is not a finite number (NaN and Infinity are not counts or sizes)",
    ),
    ("vcpu_count", "inf", "'inf' is not a finite number"),
    ("memory_gib", "-Infinity", "'-Infinity' is not a finite number"),
    ("vcpu_count", "-2", "-2.0 is negative; write 0 or more"),
    ("vcpu_count", "four", "'four' is not a number; write a value such as 0.93"),
    ("gpu_count", "NaN", "'NaN' is not a whole number; write a value such as 8"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("column", "value", "expected"), CASES)
def test_a_bad_resource_number_is_refused_at_load(
    tmp_path: Path, fmt: str, column: str, value: str, expected: str
) -> None:
    write(tmp_path, "attempts", fmt, [attempt()])
    rows = [{"attempt_id": "a1", "resource_id": "i-0", column: "1"}]
    rows.append({"attempt_id": "a1", "resource_id": "i-1", column: value})
    path = write(tmp_path, "attempt_resources", fmt, rows)
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: row 2, column {column}: ")
    assert expected in message
    assert message.endswith(CONVENTION[fmt])


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_parquet_double_is_refused(tmp_path: Path, value: float) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    rows = [{"attempt_id": "a1", "resource_id": "i-1", "vcpu_count": value}]
    path = write(tmp_path, "attempt_resources", "parquet", rows)
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: row 1, column vcpu_count: {value} is not a finite number")


NAN_METRIC = (
    "is not a number a result can be judged by (NaN compares above every threshold); leave "
    "metric_value empty for a run with no valid metric, such as a diverged one"
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_nan_metric_is_refused(tmp_path: Path, fmt: str) -> None:
    """NaN sorts above every threshold: a diverged run would count as an accepted result."""
    rows = [attempt("a1", metric_value="0.9"), attempt("a2", metric_value="NaN")]
    path = write(tmp_path, "attempts", fmt, rows)
    assert load_error(tmp_path) == (
        f"{path}: row 2, column metric_value: 'NaN' {NAN_METRIC} {CONVENTION[fmt]}"
    )


def test_a_nan_parquet_metric_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "attempts", "parquet", [attempt(metric_value=math.nan)])
    assert load_error(tmp_path) == (
        f"{path}: row 1, column metric_value: nan {NAN_METRIC} {CONVENTION['parquet']}"
    )


def test_an_empty_metric_is_null(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt(metric_value="")])
    tables = load_telemetry(tmp_path)
    assert tables["attempts"].column("metric_value").to_pylist() == [None]


def test_typed_parquet_numbers_are_read_as_stored(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    resources = {
        "attempt_id": ["a1", "a1"],
        "resource_id": ["i-0", "i-1"],
        "gpu_count": pa.array([8, None], pa.int32()),
        "vcpu_count": pa.array([96, 4], pa.uint16()),
        "memory_gib": pa.array([0.1 + 0.2, 1e-300], pa.float64()),
    }
    pq.write_table(pa.table(resources), tmp_path / "attempt_resources.parquet")

    table = load_telemetry(tmp_path)["attempt_resources"]

    assert table.column("gpu_count").to_pylist() == [8, None]
    assert table.column("vcpu_count").to_pylist() == [96.0, 4.0]
    assert table.column("memory_gib").to_pylist() == [0.1 + 0.2, 1e-300]


def test_a_parquet_uint64_beyond_int64_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "attempts", "csv", [attempt()])
    resources = {
        "attempt_id": ["a1", "a1"],
        "resource_id": ["i-0", "i-1"],
        "gpu_count": pa.array([8, 2**63], pa.uint64()),
    }
    pq.write_table(pa.table(resources), tmp_path / "attempt_resources.parquet")
    path = tmp_path / "attempt_resources.parquet"

    message = load_error(tmp_path)

    assert message.startswith(
        f"{path}: row 2, column gpu_count: {2**63} is not a whole number; write a value such as 8"
    )
