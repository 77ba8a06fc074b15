"""Real Spark processes on 127.0.0.1, started from the installed PySpark and stopped by pid.

A standalone master with one worker (`bin/spark-class ...deploy.master.Master` and
`...deploy.worker.Worker`: pip's PySpark ships no start-master.sh), and a Spark Connect server
(`sbin/start-connect-server.sh`, kept in the foreground so its process id is ours to stop).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
STARTUP_SECONDS = 180
# small JVMs: the machine is shared, and the worlds are small
WORKER_CORES = 2
WORKER_MEMORY = "2g"
APP_SETTINGS = {
    "spark.executor.memory": "1g",
    "spark.driver.memory": "1g",
    "spark.executor.cores": "1",
    "spark.cores.max": "1",
    "spark.driver.host": HOST,
    "spark.driver.bindAddress": HOST,
    "spark.ui.enabled": "false",
}


def spark_home() -> Path:
    """The installed PySpark package folder, which is a Spark distribution's home."""
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class Process:
    """A process this fixture started, in its own process group."""

    name: str
    popen: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=30)

    def failed(self) -> str | None:
        if self.popen.poll() is None:
            return None
        return f"{self.name} exited with {self.popen.returncode}: {self.log.read_text()[-3000:]}"


def _environment(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=HOST,
        SPARK_LOCAL_DIRS=str(folder / "local"),
        SPARK_LOG_DIR=str(folder / "logs"),
        SPARK_PID_DIR=str(folder / "pids"),
        SPARK_WORKER_DIR=str(folder / "work"),
        SPARK_CONF_DIR=str(folder / "conf"),
        SPARK_NO_DAEMONIZE="1",
        SPARK_DAEMON_MEMORY="512m",
    )
    for name in ("local", "logs", "pids", "work", "conf"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    return env


def _start(name: str, command: list[str], folder: Path, env: dict[str, str]) -> Process:
    log = folder / "logs" / f"{name}.out"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            command,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return Process(name, popen, log)


def _wait(ready: object, processes: list[Process], what: str) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        for process in processes:
            failure = process.failed()
            if failure:
                raise RuntimeError(failure)
        try:
            if ready():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(f"{what} did not start within {STARTUP_SECONDS} s")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((HOST, port)) == 0


@contextmanager
def standalone_cluster(folder: Path) -> Iterator[str]:
    """A standalone master and one worker; yields the master URL, spark://127.0.0.1:port."""
    env = _environment(folder)
    port, ui = free_port(), free_port()
    spark_class = str(spark_home() / "bin" / "spark-class")
    processes: list[Process] = []
    try:
        processes.append(
            _start(
                "master",
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    HOST,
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                folder,
                env,
            )
        )
        _wait(lambda: _listening(port), processes, "the Spark master")
        url = f"spark://{HOST}:{port}"
        processes.append(
            _start(
                "worker",
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    HOST,
                    "--cores",
                    str(WORKER_CORES),
                    "--memory",
                    WORKER_MEMORY,
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(folder / "work"),
                    url,
                ],
                folder,
                env,
            )
        )

        def worker_alive() -> bool:
            with urllib.request.urlopen(f"http://{HOST}:{ui}/json/", timeout=5) as response:
                return json.load(response).get("aliveworkers", 0) >= 1

        _wait(worker_alive, processes, "the Spark worker")
        yield url
    finally:
        for process in reversed(processes):
            process.stop()


@contextmanager
def connect_server(folder: Path, master: str = "local[2]") -> Iterator[str]:
    """A Spark Connect server (its own driver, on ``master``); yields sc://127.0.0.1:port."""
    env = _environment(folder)
    port = free_port()
    settings = {
        **APP_SETTINGS,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(folder / "spark-warehouse"),
    }
    command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", master]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--driver-memory", settings["spark.driver.memory"]]
    process = _start("connect", command, folder, env)
    try:
        _wait(lambda: _listening(port), [process], "the Spark Connect server")
        yield f"sc://{HOST}:{port}"
    finally:
        process.stop()
