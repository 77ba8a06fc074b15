"""Prometheus HTTP API: the source's options, its credentials, and `query_range` read into arrays.

A `query_range` answer is decoded without a Python object per sample: each series' `values`
text becomes CSV lines that Arrow's reader parses, so a month of 60-s samples of 1,000 GPUs
(43M samples) costs seconds, not minutes, and one answer is held at a time.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from pipeline.common import http
from pipeline.common.errors import InputError

DEFAULT_METRIC = "DCGM_FI_DEV_GPU_UTIL"
# Prometheus refuses a query_range answer above 11,000 points per series
MAX_POINTS = 11_000
BYS = ("pod", "host")
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


@dataclass(frozen=True)
class Settings:
    """A prometheus source's options, checked."""

    url: str
    by: str
    metric: str = DEFAULT_METRIC
    step: int = 60
    idle_below: float = 5.0
    batch: int = 16  # pods (by pod) or hosts (by host) per query
    timeout: float = 60.0
    points: int = 10_000  # steps per query, below MAX_POINTS
    pod_label: str = "pod"
    namespace_label: str = "namespace"
    host_label: str = "Hostname"
    header: str | None = None  # the Authorization header
    who: str = "no credentials"


KNOWN = {
    "url", "by", "metric", "step", "idle_below", "batch", "timeout_seconds", "points_per_query",
    "pod_label", "namespace_label", "host_label", "token_env", "username_env", "password_env",
}  # fmt: skip


def settings(options: dict[str, Any], label: str) -> Settings:
    """The options of a prometheus source, or InputError naming the option and the fix."""
    for secret in ("token", "password", "bearer_token", "api_key"):
        if secret in options:
            raise InputError(
                f"{label}: options.{secret} would put a secret in runcost.toml; remove it and set "
                f'options.{"password" if secret == "password" else "token"}_env = "NAME" with the '
                "secret exported as NAME where runcost runs"
            )
    unknown = sorted(set(options) - KNOWN)
    if unknown:
        raise InputError(
            f"{label}: unknown option(s) {', '.join(unknown)}; a prometheus source takes "
            f"{', '.join(sorted(KNOWN))}"
        )
    url = str(options.get("url") or "").rstrip("/")
    if urllib.parse.urlparse(url).scheme not in ("http", "https") or "//" not in url:
        raise InputError(
            f"{label}: options.url {url!r} is not an http(s) address; set it to the Prometheus "
            "server's address, as in https://prometheus.internal:9090"
        )
    by = options.get("by")
    if by not in BYS:
        raise InputError(
            f'{label}: options.by = {by!r} is not "pod" or "host"; set by = "pod" (series '
            'labelled with the Kubernetes namespace and pod) or by = "host" (series labelled '
            "Hostname, with the node map as the source's path)"
        )
    numbers = {}
    for key, default, low, high in (
        ("step", 60, 1, 3600),
        ("idle_below", 5.0, 0, 100),
        ("batch", 16, 1, 10_000),
        ("timeout_seconds", 60.0, 1, 3600),
        ("points_per_query", 10_000, 2, MAX_POINTS),
    ):
        value = options.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise InputError(
                f"{label}: options.{key} = {value!r} is not a number from {low} to {high}; "
                f"remove it for the default {default}"
            )
        numbers[key] = value
    if int(numbers["step"]) != numbers["step"]:
        raise InputError(f"{label}: options.step must be whole seconds, as 60")
    metric = str(options.get("metric") or DEFAULT_METRIC)
    if not METRIC_NAME.fullmatch(metric):
        raise InputError(
            f"{label}: options.metric {metric!r} is not a Prometheus metric name; name the "
            f"gauge alone, as {DEFAULT_METRIC} (the source selects its series by the labels)"
        )
    header, who = _authorization(options, label)
    return Settings(
        url=url,
        by=str(by),
        metric=metric,
        step=int(numbers["step"]),
        idle_below=float(numbers["idle_below"]),
        batch=int(numbers["batch"]),
        timeout=float(numbers["timeout_seconds"]),
        points=int(numbers["points_per_query"]),
        pod_label=str(options.get("pod_label") or "pod"),
        namespace_label=str(options.get("namespace_label") or "namespace"),
        host_label=str(options.get("host_label") or "Hostname"),
        header=header,
        who=who,
    )


def _authorization(options: dict[str, Any], label: str) -> tuple[str | None, str]:
    """A bearer token (options.token_env) or basic auth (username_env and password_env): the
    variables the options name hold the secrets; runcost.toml never does."""
    token_env, user_env, password_env = (
        options.get(key) for key in ("token_env", "username_env", "password_env")
    )
    if token_env and (user_env or password_env):
        raise InputError(
            f"{label}: set options.token_env (a bearer token) or options.username_env and "
            "options.password_env (basic auth), not both"
        )
    if token_env:
        token = os.environ.get(str(token_env), "").strip()
        if not token:
            raise InputError(
                f"{label}: options.token_env names {token_env}, which is not set in the "
                f"environment; export {token_env}=<token> where runcost runs"
            )
        return f"Bearer {token}", f"the token in {token_env}"
    if user_env or password_env:
        if not (user_env and password_env):
            raise InputError(
                f"{label}: basic auth needs both options.username_env and options.password_env"
            )
        unset = [str(name) for name in (user_env, password_env) if not os.environ.get(str(name))]
        if unset:
            raise InputError(
                f"{label}: {' and '.join(unset)} not set in the environment; export "
                f"{user_env}=<user> and {password_env}=<password> where runcost runs"
            )
        user, password = os.environ[str(user_env)], os.environ[str(password_env)]
        pair = base64.b64encode(f"{user}:{password}".encode()).decode()
        return f"Basic {pair}", f"user {user!r}"
    return None, "no credentials"


@dataclass
class Matrix:
    """The series of one query_range answer: labels, and every sample in three flat arrays."""

    labels: list[dict[str, str]]
    series: np.ndarray  # int64: the series index of each sample
    times: np.ndarray  # float64: epoch seconds
    values: np.ndarray  # float64: NaN where the answer held no number


def query_range(settings: Settings, label: str, query: str, start: int, end: int) -> Matrix:
    """`GET /api/v1/query_range` for [start, end] (epoch seconds) at the source's step, with
    retries and a timeout; InputError naming the source and the fix."""
    params = {"query": query, "start": str(start), "end": str(end), "step": f"{settings.step}s"}
    url = f"{settings.url}/api/v1/query_range?{urllib.parse.urlencode(params)}"
    headers = {"Accept": "application/json"}
    if settings.header:
        headers["Authorization"] = settings.header
    request = urllib.request.Request(url, headers=headers)
    try:
        body = http.read(request, settings.timeout)
    except urllib.error.HTTPError as error:
        raise InputError(_http_error(error, settings, label)) from None
    except http.Unreachable as error:
        raise InputError(
            f"{label}: {settings.url}: cannot reach Prometheus ({error.reason}) after "
            f"{http.RETRIES} tries; check options.url and that {settings.url}/-/ready answers"
        ) from None
    return decode(body, settings, label)


def _http_error(error: urllib.error.HTTPError, settings: Settings, label: str) -> str:
    body = error.read() or b""
    detail = _error_text(body)
    where = f"{label}: {settings.url}"
    if error.code in (401, 403):
        return (
            f"{where}: HTTP {error.code} reading /api/v1/query_range: the server refused "
            f"{settings.who}; export a token (options.token_env) or user and password "
            "(options.username_env, options.password_env) that may query it"
        )
    if error.code == 404:
        return (
            f"{where}/api/v1/query_range: HTTP 404 Not Found: no Prometheus API at this URL; set "
            "options.url to the address Grafana's Prometheus data source uses (without "
            "/api/v1), with the path prefix of a managed service (Amazon Managed Prometheus: "
            ".../workspaces/<id>; Google Managed Prometheus: its frontend's address)"
        )
    if error.code in (400, 422):
        return (
            f"{where}: Prometheus refused the query ({detail or error.reason}); check "
            "options.metric and the label options (pod_label, namespace_label, host_label)"
        )
    return f"{where}: HTTP {error.code} reading /api/v1/query_range: {detail or error.reason}"


def _error_text(body: bytes) -> str:
    try:
        answer = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    if isinstance(answer, dict):
        return f"{answer.get('errorType', '')}: {answer.get('error', '')}".strip(": ")
    return ""


def decode(body: bytes, settings: Settings, label: str) -> Matrix:
    """A query_range answer -> Matrix. The labels of each series are parsed as JSON; its values
    `[[t,"v"],...]` are turned into CSV lines for Arrow's reader."""
    head = body[:200].lstrip()
    if not head.startswith(b"{"):
        raise InputError(
            f"{label}: {settings.url}/api/v1/query_range did not answer JSON (it begins "
            f"{head[:40]!r}); is options.url the Prometheus API's address, not a login page?"
        )
    if b'"status":"success"' not in body[:100]:
        raise InputError(
            f"{label}: {settings.url}: Prometheus answered an error ({_error_text(body)}); "
            "check options.metric and the label options"
        )
    text = body.decode("utf-8")
    decoder = json.JSONDecoder()
    labels: list[dict[str, str]] = []
    chunks: list[bytes] = []
    counts: list[int] = []
    position = text.find('"result":[')
    if position < 0:
        raise InputError(f"{label}: {settings.url}: the answer holds no result list")
    while True:
        start = text.find('{"metric":', position)
        if start < 0:
            break
        metric, position = decoder.raw_decode(text, start + len('{"metric":'))
        opened = text.find('"values":[', position)
        if opened < 0:
            raise InputError(f"{label}: {settings.url}: a series of the answer has no values")
        if text.startswith("]", opened + len('"values":[')):  # a series without samples
            labels.append(metric)
            chunks.append(b"")
            counts.append(0)
            position = opened + len('"values":[')
            continue
        closed = text.find("]]", opened)
        if closed < 0:
            raise InputError(f"{label}: {settings.url}: a series of the answer has no values")
        values = body_slice(text, opened + len('"values":['), closed + 1)
        labels.append(metric)
        chunks.append(values)
        counts.append(values.count(b"],[") + 1 if values else 0)
        position = closed
    if not chunks or not any(counts):
        empty = np.empty(0)
        return Matrix(labels, empty.astype(np.int64), empty, empty)
    lines = b"\n".join(
        chunk.replace(b"],[", b"\n").translate(None, b'[]"') for chunk in chunks if chunk
    )
    table = pa_csv.read_csv(
        pa.py_buffer(lines),
        read_options=pa_csv.ReadOptions(column_names=["t", "v"]),
        convert_options=pa_csv.ConvertOptions(column_types={"t": pa.float64(), "v": pa.float64()}),
    )
    series = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    times = table.column("t").to_numpy()
    values = table.column("v").to_numpy(zero_copy_only=False)
    return Matrix(labels, series, times, values)


def body_slice(text: str, start: int, end: int) -> bytes:
    """The values text of one series, `[t,"v"],...,[t,"v"]` (ASCII: numbers only)."""
    return text[start:end].encode("ascii")
