"""A real `mlflow server` on 127.0.0.1 (SQLite backend in a temporary folder), for tests; with
`admin`, MLflow's basic-auth app (`--app-name basic-auth`) in front of it.

Needs the mlflow extra (pip install -e '.[mlflow]'); .ci/run installs it. The basic-auth app
also needs Flask-WTF (MLflow's own `auth` extra).
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
    admin: tuple[str, str] | None = None  # basic-auth app: the admin's user and password


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def mlflow_server(folder: Path, admin: tuple[str, str] | None = None) -> Iterator[MlflowServer]:
    """Start `mlflow server`, wait for /health, yield it; stop its process group by pid.

    admin: (user, password) starts MLflow's basic-auth app, its user store in `folder`, with
    that admin and default permission READ for other users.
    """
    executable = shutil.which("mlflow") or str(Path(sys.executable).parent / "mlflow")
    port = free_port()
    store = folder / "mlflow.db"
    log = (folder / "server.log").open("wb")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    auth: list[str] = []
    if admin is not None:
        config = folder / "basic_auth.ini"
        config.write_text(
            "[mlflow]\n"
            "default_permission = READ\n"
            f"database_uri = sqlite:///{folder / 'basic_auth.db'}\n"
            f"admin_username = {admin[0]}\n"
            f"admin_password = {admin[1]}\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        )
        env |= {
            "MLFLOW_AUTH_CONFIG_PATH": str(config),
            "MLFLOW_FLASK_SERVER_SECRET_KEY": "runcost-test-only",
        }
        for name in ("MLFLOW_AUTH_ADMIN_USERNAME", "MLFLOW_AUTH_ADMIN_PASSWORD"):
            env.pop(name, None)
        auth = ["--app-name", "basic-auth"]
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
            *auth,
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
        yield MlflowServer(url, store, admin)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()
