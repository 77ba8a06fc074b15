"""A real `mlflow server` on 127.0.0.1 (SQLite backend in a temporary folder), for tests.

Needs the mlflow extra (pip install -e '.[mlflow]'); .ci/run installs it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 240  # the first start migrates a new SQLite store: slow on a loaded machine


@dataclass
class MlflowServer:
    url: str
    store: Path  # the SQLite file behind it


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def mlflow_server(folder: Path) -> Iterator[MlflowServer]:
    """Start `mlflow server`, wait for /health, yield it; stop its process group by pid."""
    executable = shutil.which("mlflow") or str(Path(sys.executable).parent / "mlflow")
    port = free_port()
    store = folder / "mlflow.db"
    log = (folder / "server.log").open("wb")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    process = subprocess.Popen(
        [
            executable,
            "server",
            "--backend-store-uri",
            f"sqlite:///{store}",
            "--default-artifact-root",
            str(folder / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the uvicorn workers stop with it
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (folder / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"mlflow server did not start on {url}:\n{tail}")
            time.sleep(1)
        yield MlflowServer(url, store)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()
