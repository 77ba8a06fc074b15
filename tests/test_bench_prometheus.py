"""bench/prometheus_read.py at a tiny scale: the source reads every generated sample, folds the
idle stretches into windows, and the run reports its CPU and memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.prometheus_read import answer, series_values
from pipeline.telemetry.prometheus import promql
from pipeline.telemetry.prometheus_api import decode, settings

ROOT = Path(__file__).resolve().parent.parent


def test_an_answer_holds_the_pods_the_source_asks_for() -> None:
    config = settings({"url": "http://127.0.0.1:9", "by": "pod"}, "bench")
    query = promql(config, ["ml/train-00000", "ml/train-00002"])
    matrix = decode(answer(query, 1_790_812_800, 1_790_813_100, 60), config, "bench")
    assert sorted({labels["pod"] for labels in matrix.labels}) == ["train-00000", "train-00002"]
    assert len(matrix.labels) == 16  # 8 GPUs a pod
    assert len(matrix.times) == 16 * 6  # 5 minutes of steps, both ends included
    # GPU 0 is idle at its minutes 0-29 of every 360: 2026-10-01 00:00 starts a stretch
    assert series_values(0, 1_790_812_800, 1_790_812_860, 60) == '[1790812800,"0"],[1790812860,"0"]'


def test_a_day_of_16_gpus_is_read_whole() -> None:
    command = [sys.executable, str(ROOT / "bench" / "prometheus_read.py"), "--gpus", "16"]
    done = subprocess.run(
        [*command, "--days", "1"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    # 16 GPUs x 1,440 steps, every one sampled; 4 idle stretches of 30 minutes a GPU: 2 h each
    assert figures["samples"] == 16 * 1440
    assert figures["sampled_gpu_hours"] == pytest.approx(16 * 24)
    assert figures["idle_gpu_hours"] == pytest.approx(16 * 2)
    # each GPU: 4 idle windows and the 5 busy ones around them
    assert figures["windows"] == 16 * 9
    assert figures["cpu_s"] >= 0 and figures["peak_rss_mb"] > 0
