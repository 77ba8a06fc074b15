"""CPU and peak memory of the prometheus source reading a month of 60-s DCGM samples of 1,000 GPUs.

    python bench/prometheus_read.py --gpus 1000 --days 30

A server process answers `/api/v1/query_range` as Prometheus does (the series of the pods a
query names, one sample per step of the asked range, Prometheus's JSON layout), generating each
answer: every GPU is busy at 40-99 % but for 4 idle stretches (0 %) of 30 minutes a day. The
source runs in its own client process over the attempts holding those GPUs (one pod of 8 GPUs
per attempt, held the whole range, read by pod with the source's defaults: 16 pods and 10,000
steps per query) and reports its CPU (user + system, all threads) and peak RSS above what it had
before reading, with the windows it folded the samples into. The answers are generated rather
than backfilled into a real Prometheus (tests/prometheus_server.py does that for correctness):
44M samples through promtool take longer than the read they measure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.server
import json
import re
import resource
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

START = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
GPUS_PER_POD = 8
NAMESPACE = "ml"
IDLE_EVERY = 360  # minutes: an idle stretch starts every 6 hours on each GPU
IDLE_MINUTES = 30
METRIC = "DCGM_FI_DEV_GPU_UTIL"


def pod_name(index: int) -> str:
    return f"train-{index:05d}"


def series_values(gpu: int, first: int, last: int, step: int) -> str:
    """`[t,"v"],...` of one GPU from ``first`` to ``last`` (epoch seconds, on the step)."""
    cells = []
    for at in range(first, last + 1, step):
        minute = at // 60 + 97 * gpu
        value = 0 if minute % IDLE_EVERY < IDLE_MINUTES else 40 + (minute * 7 + gpu) % 60
        cells.append(f'[{at},"{value}"]')
    return ",".join(cells)


def answer(query: str, start: int, end: int, step: int) -> bytes:
    """The query_range answer for the pods the query's selector names."""
    found = re.search(r'pod=~"([^"]*)"', query)
    pods = [
        re.sub(r"\\(.)", r"\1", name) for name in found.group(1).replace("\\\\", "\\").split("|")
    ]
    first = -(-start // step) * step
    results = []
    for pod in pods:
        index = int(pod.rsplit("-", 1)[1])
        for slot in range(GPUS_PER_POD):
            gpu = index * GPUS_PER_POD + slot
            metric = {
                "Hostname": f"gpu-{index:05d}",
                "UUID": f"GPU-{gpu:08d}",
                "gpu": str(slot),
                "namespace": NAMESPACE,
                "pod": pod,
            }
            values = series_values(gpu, first, end, step)
            results.append(f'{{"metric":{json.dumps(metric)},"values":[{values}]}}')
    body = '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(results)
    return (body + "]}}").encode("ascii")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        step = int(params["step"].removesuffix("s"))
        body = answer(params["query"], int(params["start"]), int(params["end"]), step)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}"}), flush=True)
    sys.stdin.read()  # until the parent closes it
    server.shutdown()


def client(url: str, gpus: int, days: float) -> dict[str, float | int]:
    """Read the world through the prometheus source; its CPU, memory and what it measured."""
    import pyarrow as pa

    from pipeline.telemetry.prometheus import read

    pods = -(-gpus // GPUS_PER_POD)
    end = START + dt.timedelta(days=days)
    attempts = pa.table(
        {
            "attempt_id": [f"att-{n:05d}" for n in range(pods)],
            "started_at": pa.array([START] * pods, pa.timestamp("us", "UTC")),
            "ended_at": pa.array([end] * pods, pa.timestamp("us", "UTC")),
            "gpu_count": pa.array([GPUS_PER_POD] * pods, pa.int32()),
        }
    )
    resources = pa.table(
        {
            "attempt_id": attempts.column("attempt_id"),
            "resource_id": [f"i-{n:017x}" for n in range(pods)],
            "resource_kind": ["ec2_instance"] * pods,
            "started_at": attempts.column("started_at"),
            "ended_at": attempts.column("ended_at"),
            "gpu_count": attempts.column("gpu_count"),
            "pod": [f"{NAMESPACE}/{pod_name(n)}" for n in range(pods)],
        }
    )
    source = {"kind": "prometheus", "options": {"url": url, "by": "pod", "metric": METRIC}}
    tables = {"attempts": attempts, "attempt_resources": resources}
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    usage = read(source, "bench (prometheus)", tables, end)
    after = resource.getrusage(resource.RUSAGE_SELF)
    states = usage.column("state").to_pylist()
    seconds = usage.column("sampled_gpu_seconds").to_pylist()
    return {
        "gpus": pods * GPUS_PER_POD,
        "days": days,
        "samples": int(sum(usage.column("samples").to_pylist())),
        "windows": usage.num_rows,
        "sampled_gpu_hours": sum(seconds) / 3600,
        "idle_gpu_hours": sum(s for s, k in zip(seconds, states, strict=True) if k == "idle")
        / 3600,
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_above_start_mb": round((after.ru_maxrss - before.ru_maxrss) / 1024, 1),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    if args.client:
        print(json.dumps(client(args.client, args.gpus, args.days)))
        return None
    root = Path(__file__).resolve().parent.parent
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = json.loads(server.stdout.readline())["url"]  # type: ignore[union-attr]
        command = [sys.executable, __file__, "--client", url, "--gpus", str(args.gpus)]
        command += ["--days", str(args.days)]
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True, cwd=root)
        print(done.stdout.strip().splitlines()[-1])
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=60)
    return None


if __name__ == "__main__":
    main()
