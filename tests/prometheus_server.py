"""A real Prometheus on 127.0.0.1 holding backfilled samples: Debian's prometheus and promtool.

The samples are written as OpenMetrics, turned into TSDB blocks by `promtool tsdb
create-blocks-from openmetrics`, and served by `prometheus` started on a free port with a
retention long enough for historic samples; it is stopped by its process id.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def require_prometheus() -> None:
    """Skip (fail on CI, which installs it) when Debian's prometheus package is missing."""
    if Path(PROMETHEUS).is_file() and Path(PROMTOOL).is_file():
        return
    message = "Debian's prometheus package (prometheus, promtool) is not installed"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class Sample:
    """One sample of one series: its labels, epoch seconds and value."""

    labels: dict[str, str]
    at: float
    value: float


def openmetrics(metric: str, samples: Iterable[Sample]) -> str:
    """The samples as an OpenMetrics text of one gauge family, each series' samples in order."""
    series: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    for sample in samples:
        series.setdefault(tuple(sorted(sample.labels.items())), []).append(sample)
    lines = [f"# TYPE {metric} gauge"]
    for key, items in series.items():
        labels = ",".join(f'{name}="{value}"' for name, value in key)
        lines += [
            f"{metric}{{{labels}}} {s.value} {s.at:.3f}" for s in sorted(items, key=lambda s: s.at)
        ]
    return "\n".join([*lines, "# EOF", ""])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def prometheus_server(folder: Path, metric: str, samples: Iterable[Sample] | Path) -> Iterator[str]:
    """A Prometheus serving the samples (or an OpenMetrics file's); its URL. Stopped by its pid
    on exit."""
    require_prometheus()
    data = folder / "data"
    data.mkdir(parents=True)
    if isinstance(samples, Path):
        source = samples
    else:
        source = folder / "samples.om"
        source.write_text(openmetrics(metric, samples), encoding="utf-8")
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        check=True,
        capture_output=True,
    )
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n", encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"prometheus did not start: {(folder / 'prometheus.log').read_text()}"
                )
            time.sleep(0.2)
        yield url
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
