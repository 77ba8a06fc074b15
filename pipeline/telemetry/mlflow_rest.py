"""MLflow tracking server over its REST API (2.0) -> the runs of the configured experiments.

Any server that speaks the MLflow REST API works: `mlflow server` over PostgreSQL, MySQL or
SQLite (with or without MLflow's basic-auth app), Databricks, or a managed MLflow. Uses the
standard library's HTTP client.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from pipeline.common import http
from pipeline.common.errors import InputError

PAGE_SIZE = 1000  # runs/search max_results (the server allows up to 50,000)
TIMEOUT_SECONDS = 60
# the environment variables the MLflow client itself reads; options.*_env name others
DEFAULT_TOKEN_ENV = "MLFLOW_TRACKING_TOKEN"
DEFAULT_USERNAME_ENV = "MLFLOW_TRACKING_USERNAME"
DEFAULT_PASSWORD_ENV = "MLFLOW_TRACKING_PASSWORD"


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
    # parent runs (mlflow.parentRunId) not among `runs`: read for their times and tags only
    outside: dict[str, dict[str, Any]] = field(default_factory=dict)


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
    client = _Client(uri, credentials(options, label), label)
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
            _add_parents(store, client)
            return store
        if token in seen_tokens:
            raise InputError(f"{label}: {uri}: runs/search returned page token {token!r} twice")
        seen_tokens.add(token)
        payload["page_token"] = token


def _add_parents(store: Store, client: _Client) -> None:
    """Look up the parents of nested runs that the search did not return (runs/get)."""
    read = {run["run_uuid"] for run in store.runs}
    wanted = {
        tags["mlflow.parentRunId"].strip()
        for tags in store.tags.values()
        if (tags.get("mlflow.parentRunId") or "").strip()
    } - read
    for run_uuid in sorted(wanted):
        found = client.call("runs/get", {"run_id": run_uuid}, None, get=True, missing_ok=True)
        if found.get("run"):
            _add_run(store, found["run"], into=store.outside)


def _add_run(store: Store, run: dict[str, Any], into: dict[str, Any] | None = None) -> None:
    info, data = run.get("info") or {}, run.get("data") or {}
    run_uuid = str(info.get("run_id") or info.get("run_uuid") or "")
    experiment = str(info.get("experiment_id"))
    row = {
        "run_uuid": run_uuid,
        "status": info.get("status"),
        "start_time": _integer(info.get("start_time")),
        "end_time": _integer(info.get("end_time")),
        "artifact_uri": info.get("artifact_uri"),
        "experiment_id": experiment,
        "lifecycle_stage": info.get("lifecycle_stage"),
    }
    if into is None:
        store.runs.append(row)
    else:
        into[run_uuid] = row
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
    for secret, setting in (("token", "token_env"), ("password", "password_env")):
        if secret in options:
            raise InputError(
                f"{label}: options.{secret} would put a secret in runcost.toml; remove it and "
                f'set options.{setting} = "NAME" with the {secret} exported as NAME'
            )
    if "api_key" in options:
        raise InputError(
            f"{label}: options.api_key would put a secret in runcost.toml; remove it and "
            'set options.token_env = "NAME" with the token exported as NAME'
        )


@dataclass(frozen=True)
class Credentials:
    """What runcost sends the server, and how messages name it (never the secret itself)."""

    kind: str  # "basic", "bearer" or "none"
    header: str | None  # the Authorization header
    who: str  # "user 'runcost'", "the token in MLFLOW_TRACKING_TOKEN", "no credentials"
    fix: str  # how to send the right ones
    secret_env: str = ""  # the variable holding the password or token


def credentials(options: dict[str, Any], label: str) -> Credentials:
    """MLflow basic auth (user and password) or a bearer token, from the environment.

    As the MLflow client does: a user and password when both are set (MLflow's basic-auth app),
    else a bearer token (Databricks, a proxy). options.username_env / password_env / token_env
    name other variables; a named variable that is not set stops the run.
    """
    named_basic = "username_env" in options or "password_env" in options
    if named_basic and options.get("token_env"):
        raise InputError(
            f"{label}: set options.token_env (a bearer token) or options.username_env and "
            "options.password_env (MLflow basic auth), not both"
        )
    user_env = str(options.get("username_env") or DEFAULT_USERNAME_ENV)
    password_env = str(options.get("password_env") or DEFAULT_PASSWORD_ENV)
    user = os.environ.get(user_env, "").strip()
    password = os.environ.get(password_env, "")
    basic_fix = (
        f"export {user_env}=<user> and {password_env}=<password> where runcost runs (a user "
        "with READ on the experiments)"
    )
    if not named_basic:
        basic_fix += (
            ", or set options.username_env and options.password_env to the variables that hold them"
        )
    unset = [name for name, value in ((user_env, user), (password_env, password)) if not value]
    if named_basic and unset:
        raise InputError(
            f"{label}: options.username_env / password_env name {' and '.join(unset)}, not set "
            f"in the environment; {basic_fix}"
        )
    token_env = str(options.get("token_env") or DEFAULT_TOKEN_ENV)
    token = os.environ.get(token_env, "").strip()
    # half a user and password is a mistake, unless a token is there to send (as MLflow does)
    if len(unset) == 1 and not options.get("token_env") and not token:
        raise InputError(
            f"{label}: {user_env if user else password_env} is set but {unset[0]} is not; "
            f"MLflow basic auth needs both: {basic_fix}"
        )
    if user and password and not options.get("token_env"):
        pair = base64.b64encode(f"{user}:{password}".encode()).decode()
        return Credentials("basic", f"Basic {pair}", f"user {user!r}", basic_fix, password_env)
    if options.get("token_env") and not token:
        raise InputError(
            f"{label}: options.token_env names {token_env}, which is not set in the environment; "
            f"export {token_env}=<token> where runcost runs (a Databricks personal access token, "
            "or the server's bearer token)"
        )
    token_fix = (
        f"export a token that can read the experiments as {token_env} (or set options.token_env "
        "to the variable holding one)"
    )
    if token:
        return Credentials(
            "bearer", f"Bearer {token}", f"the token in {token_env}", token_fix, token_env
        )
    return Credentials(
        "none",
        None,
        "no credentials",
        f"export {user_env}=<user> and {password_env}=<password> (MLflow basic auth), or "
        f"{DEFAULT_TOKEN_ENV}=<token>, where runcost runs",
    )


def _headers(auth: Credentials) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if auth.header:
        headers["Authorization"] = auth.header
    return headers


class _Client:
    def __init__(self, uri: str, auth: Credentials, label: str) -> None:
        self.uri, self.auth, self.label = uri, auth, label
        self.headers = _headers(auth)

    def call(
        self,
        endpoint: str,
        payload: dict[str, Any],
        experiment: str | None,
        get: bool = False,
        missing_ok: bool = False,
    ) -> dict:
        """GET (experiments/..., runs/get) or POST (runs/search) one API call, retrying transient
        errors; missing_ok: {} for a resource that does not exist or may not be read."""
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}"
        if experiment is not None or get:
            request = urllib.request.Request(
                f"{url}?{urllib.parse.urlencode(payload)}", headers=self.headers
            )
        else:
            body = json.dumps(payload).encode()
            request = urllib.request.Request(url, body, self.headers, method="POST")
        try:
            return json.loads(http.read(request, TIMEOUT_SECONDS))
        except urllib.error.HTTPError as error:
            body = error.read() or b""
            if missing_ok and (error.code == 403 or b"RESOURCE_DOES_NOT_EXIST" in body):
                return {}
            raise InputError(self._http_error(error, body, url, endpoint, experiment)) from None
        except http.Unreachable as error:
            raise InputError(
                f"{self.label}: {self.uri}: cannot reach the MLflow tracking server "
                f"({error.reason}) after {http.RETRIES} tries; check options.tracking_uri and "
                f"that the server answers {self.uri}/health"
            ) from None
        except json.JSONDecodeError:
            raise InputError(
                f"{self.label}: {url} did not answer JSON; is options.tracking_uri the "
                "tracking server's address (not the UI behind a login page)?"
            ) from None

    def _http_error(
        self, error: urllib.error.HTTPError, body: bytes, url: str, endpoint: str, name: str | None
    ) -> str:
        try:
            detail = json.loads(body or b"{}")
        except (json.JSONDecodeError, OSError, UnicodeDecodeError):
            detail = {}
        code = detail.get("error_code", "") if isinstance(detail, dict) else ""
        text = detail.get("message", "") if isinstance(detail, dict) else ""
        where = f"{self.label}: {self.uri}"
        what = f"experiment {name!r}" if name else "the runs"
        if error.code == 404 and name is not None and code == "RESOURCE_DOES_NOT_EXIST":
            return (
                f"{where}: experiment {name!r} not found ({code}); check options.experiments "
                "against the experiment names in the MLflow UI"
            )
        if error.code == 404 and not code:
            return (
                f"{self.label}: {url}: HTTP 404 Not Found: no MLflow REST API at this URL, so "
                f"the path of options.tracking_uri {self.uri!r} is wrong; set it to the address "
                "the MLflow client uses as MLFLOW_TRACKING_URI (scheme, host, port, and the "
                "server's --static-prefix if it has one), without /api/2.0/mlflow or a UI page"
            )
        if error.code == 401:
            wants_basic = "basic" in (error.headers.get("WWW-Authenticate") or "").lower()
            if self.auth.kind == "basic":
                problem = f"the server refused {self.auth.who} with the password in " + (
                    self.auth.secret_env
                )
            elif wants_basic:
                sent = "none was sent" if self.auth.kind == "none" else f"not {self.auth.who}"
                return (
                    f"{where}: HTTP 401 reading {what}: the server asks for a user and password "
                    f"(MLflow basic auth), {sent}; export {DEFAULT_USERNAME_ENV} and "
                    f"{DEFAULT_PASSWORD_ENV} where runcost runs (a user with READ on the "
                    "experiments), or set options.username_env and options.password_env to the "
                    "variables that hold them"
                )
            elif self.auth.kind == "bearer":
                problem = f"the server refused {self.auth.who}"
            else:
                problem = "the server needs credentials and none were sent"
            return f"{where}: HTTP 401 reading {what}: {problem}; {self.auth.fix}"
        if error.code == 403:
            return (
                f"{where}: HTTP 403 reading {what}: {self.auth.who} may not read it; grant "
                f"{self.auth.who} READ on the experiment (MLflow basic auth; CAN_READ on "
                "Databricks), or use an identity that has it"
            )
        return f"{where}: {endpoint}: HTTP {error.code} {code}: {text or error.reason}".rstrip()
