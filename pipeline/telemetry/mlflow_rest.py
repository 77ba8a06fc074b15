"""MLflow tracking server over its REST API (2.0) -> the runs of the configured experiments.

Any server that speaks the MLflow REST API works: `mlflow server` over PostgreSQL, MySQL or
SQLite, Databricks, or a managed MLflow. Uses the standard library's HTTP client.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from pipeline.common.errors import InputError

PAGE_SIZE = 1000  # runs/search max_results (the server allows up to 50,000)
RETRIES = 3  # tries per request on a connection error, HTTP 429 or 5xx
RETRY_SECONDS = 0.5  # first back-off; doubled each try
TIMEOUT_SECONDS = 60
DEFAULT_TOKEN_ENV = "MLFLOW_TRACKING_TOKEN"
HOW_TOKEN = "set options.token_env to the environment variable holding a token that can read them"


@dataclass
class Store:
    """What the reader needs of a tracking store, whichever way it was read."""

    where: str  # how messages name the store: a file path or a tracking URI
    runs: list[dict[str, Any]] = field(default_factory=list)  # columns of the runs table
    names: dict[Any, str] = field(default_factory=dict)  # experiment id -> name
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # run -> key -> value
    params: dict[str, dict[str, str]] = field(default_factory=dict)
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)  # latest values
    run_where: dict[str, str] = field(default_factory=dict)  # run -> how messages name it


def fetch(options: dict[str, Any], label: str) -> Store:
    """Every run (active and deleted) of options.experiments on the server options.tracking_uri.

    options.started_after (an ISO date or time, UTC) reads only runs started then or later: the
    published snapshot keeps the older ones (telemetry.keep_published).
    """
    uri = str(options["tracking_uri"]).rstrip("/")
    if not uri.startswith(("http://", "https://")):
        raise InputError(
            f"{label}: tracking_uri {uri!r} is not an http(s) URL; use the address the MLflow "
            "client's MLFLOW_TRACKING_URI points at, or set path to an SQLite store instead"
        )
    experiments = options.get("experiments")
    if (
        not isinstance(experiments, list)
        or not experiments
        or not all(isinstance(e, str) and e.strip() for e in experiments)
    ):
        raise InputError(
            f'{label}: a tracking server source needs options.experiments = ["name", ...], the '
            "MLflow experiments whose runs are training attempts"
        )
    page_size = options.get("page_size", PAGE_SIZE)
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 0 < page_size <= 50000:
        raise InputError(f"{label}: options.page_size must be a whole number from 1 to 50000")
    client = _Client(uri, _headers(options, label), label)
    store = Store(where=uri)
    for name in experiments:
        found = client.call("experiments/get-by-name", {"experiment_name": name}, name)
        store.names[str(found["experiment"]["experiment_id"])] = name
    payload: dict[str, Any] = {
        "experiment_ids": list(store.names),
        "max_results": page_size,
        "run_view_type": "ALL",  # deleted runs cost money too
        "order_by": ["attributes.start_time ASC", "attributes.run_id ASC"],
    }
    since = _started_after(options.get("started_after"), label)
    if since is not None:
        payload["filter"] = f"attributes.start_time >= {since}"
    seen_tokens: set[str] = set()
    while True:
        page = client.call("runs/search", payload, None)
        for run in page.get("runs") or []:
            _add_run(store, run)
        token = page.get("next_page_token")
        if not token:
            return store
        if token in seen_tokens:
            raise InputError(f"{label}: {uri}: runs/search returned page token {token!r} twice")
        seen_tokens.add(token)
        payload["page_token"] = token


def _add_run(store: Store, run: dict[str, Any]) -> None:
    info, data = run.get("info") or {}, run.get("data") or {}
    run_uuid = str(info.get("run_id") or info.get("run_uuid") or "")
    experiment = str(info.get("experiment_id"))
    store.runs.append(
        {
            "run_uuid": run_uuid,
            "status": info.get("status"),
            "start_time": _integer(info.get("start_time")),
            "end_time": _integer(info.get("end_time")),
            "artifact_uri": info.get("artifact_uri"),
            "experiment_id": experiment,
            "lifecycle_stage": info.get("lifecycle_stage"),
        }
    )
    store.run_where[run_uuid] = (
        f"{store.where}: experiment {store.names.get(experiment, experiment)}: run {run_uuid}"
    )
    store.tags[run_uuid] = {t["key"]: t.get("value") for t in data.get("tags") or []}
    store.params[run_uuid] = {p["key"]: p.get("value") for p in data.get("params") or []}
    # data.metrics holds each key's latest value (highest step, then latest timestamp)
    store.metrics[run_uuid] = {m["key"]: _metric(m.get("value")) for m in data.get("metrics") or []}


def _integer(value: object) -> object:
    """int64 fields arrive as JSON numbers, or as strings from proto-JSON encoders."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def _metric(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _started_after(value: object, label: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(
            f'{label}: options.started_after {value!r} is not a date or time; write "2026-10-01"'
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def refuse_secrets(options: dict[str, Any], label: str) -> None:
    """A token, password or key in runcost.toml is refused: it comes from the environment."""
    for secret in ("token", "password", "api_key"):
        if secret in options:
            raise InputError(
                f"{label}: options.{secret} would put a secret in runcost.toml; remove it and "
                f'set options.token_env = "NAME" with the token exported as NAME'
            )


def _headers(options: dict[str, Any], label: str) -> dict[str, str]:
    """JSON headers, with a bearer token from the environment variable options.token_env."""
    name = str(options.get("token_env") or DEFAULT_TOKEN_ENV)
    token = os.environ.get(name, "").strip()
    if options.get("token_env") and not token:
        raise InputError(
            f"{label}: options.token_env names {name}, which is not set in the environment; "
            f"export {name}=<token> where runcost runs (a Databricks personal access token, or "
            "the server's bearer token)"
        )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class _Client:
    def __init__(self, uri: str, headers: dict[str, str], label: str) -> None:
        self.uri, self.headers, self.label = uri, headers, label

    def call(self, endpoint: str, payload: dict[str, Any], experiment: str | None) -> dict:
        """GET (experiments/...) or POST (runs/search) one API call, retrying transient errors."""
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}"
        if experiment is not None:
            request = urllib.request.Request(
                f"{url}?{urllib.parse.urlencode(payload)}", headers=self.headers
            )
        else:
            body = json.dumps(payload).encode()
            request = urllib.request.Request(url, body, self.headers, method="POST")
        for attempt in range(RETRIES):
            last = attempt == RETRIES - 1
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                if error.code in (429, 500, 502, 503, 504) and not last:
                    time.sleep(RETRY_SECONDS * 2**attempt)
                    continue
                raise InputError(self._http_error(error, endpoint, experiment)) from None
            except (urllib.error.URLError, OSError) as error:
                if not last:
                    time.sleep(RETRY_SECONDS * 2**attempt)
                    continue
                reason = getattr(error, "reason", error)
                raise InputError(
                    f"{self.label}: {self.uri}: cannot reach the MLflow tracking server "
                    f"({reason}) after {RETRIES} tries; check options.tracking_uri and that "
                    f"the server answers {self.uri}/health"
                ) from None
            except json.JSONDecodeError:
                raise InputError(
                    f"{self.label}: {url} did not answer JSON; is options.tracking_uri the "
                    "tracking server's address (not the UI behind a login page)?"
                ) from None
        raise AssertionError("unreachable")

    def _http_error(self, error: urllib.error.HTTPError, endpoint: str, name: str | None) -> str:
        try:
            detail = json.loads(error.read() or b"{}")
        except (json.JSONDecodeError, OSError):
            detail = {}
        code = detail.get("error_code", "") if isinstance(detail, dict) else ""
        text = detail.get("message", "") if isinstance(detail, dict) else ""
        where = f"{self.label}: {self.uri}"
        if error.code == 404 and name is not None and code == "RESOURCE_DOES_NOT_EXIST":
            return (
                f"{where}: experiment {name!r} not found ({code}); check options.experiments "
                "against the experiment names in the MLflow UI"
            )
        if error.code in (401, 403):
            what = f"experiment {name!r}" if name else "the runs"
            return f"{where}: HTTP {error.code} reading {what} ({code or text}); {HOW_TOKEN}"
        return f"{where}: {endpoint}: HTTP {error.code} {code}: {text or error.reason}".rstrip()
