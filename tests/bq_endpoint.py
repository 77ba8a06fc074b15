"""A local BigQuery REST endpoint over DuckDB, with real _PARTITIONTIME partitions, for tests."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from bq_catalog import BigQueryError, Catalog, Table
from bq_values import encode_value, schema_field

_BASE = "/bigquery/v2/projects/"


@dataclass
class QueryRecord:
    """One query the endpoint ran: its BigQuery SQL, parameters and job project."""

    sql: str
    params: dict[str, Any]
    project: str


@dataclass
class _Result:
    schema: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    job: dict[str, Any] = field(default_factory=dict)


class BigQueryEndpoint(Catalog):
    """The BigQuery v2 REST shapes google-cloud-bigquery uses, on 127.0.0.1, over DuckDB.

    Tables are ingestion-time partitioned like the billing export: every row has a
    ``_PARTITIONTIME`` chosen when it is inserted, so tests can build realistic partitions and add
    late rows to one of them later.
    """

    def __init__(self, page_size: int = 500) -> None:
        super().__init__()
        self.page_size = page_size
        self.queries: list[QueryRecord] = []
        self.after_query: Callable[[QueryRecord], None] | None = None
        self.denied_job_projects: set[str] = set()
        self._results: dict[str, _Result] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> BigQueryEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.close()

    def deny_jobs(self, project: str) -> None:
        """Jobs in ``project`` get 403 (no BigQuery Job User there)."""
        self.denied_job_projects.add(project)

    def fetches(self) -> list[tuple[str, str]]:
        """(table, partition) of each whole-partition read, in order (the parameter convention
        of runcost's ingester: a query with a ``partition`` parameter and no aggregate)."""
        found = []
        for record in self.queries:
            if "partition" in record.params and "count(" not in record.sql.lower():
                tables = re.findall(r"`([^`]+)`", record.sql)
                found.append((tables[-1], str(record.params["partition"])))
        return found

    # --- queries -------------------------------------------------------------------------

    def run_query(self, project: str, sql: str, parameters: list[dict[str, Any]]) -> _Result:
        """Run one BigQuery query (translated to DuckDB) and keep its result under a job id."""
        if project in self.denied_job_projects:
            raise BigQueryError(
                403,
                "accessDenied",
                f"Access Denied: Project {project}: User does not have bigquery.jobs.create "
                f"permission in project {project}.",
            )
        params = {item["name"]: _parameter(item) for item in parameters}
        record = QueryRecord(sql, params, project)
        table = self.execute(sql, params)
        self.queries.append(record)
        if self.after_query is not None:
            self.after_query(record)
        schema = [schema_field(item) for item in table.schema]
        return _Result(schema, table.to_pylist())

    # --- REST ----------------------------------------------------------------------------

    def handle(self, method: str, url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer one REST call: (HTTP status, JSON body)."""
        parsed = urlparse(url)
        query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        parts = parsed.path.removeprefix(_BASE).split("/")
        try:
            try:
                return 200, self._route(method, parts, query, body)
            except (KeyError, ValueError, TypeError) as error:  # a request this endpoint can't use
                raise BigQueryError(400, "invalid", f"{type(error).__name__}: {error}") from error
        except BigQueryError as error:
            status = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
            return error.status, {
                "error": {
                    "code": error.status,
                    "message": error.message,
                    "errors": [
                        {"message": error.message, "domain": "global", "reason": error.reason}
                    ],
                    "status": status.get(error.status, "UNKNOWN"),
                }
            }

    def _route(
        self, method: str, parts: list[str], query: dict[str, str], body: dict[str, Any]
    ) -> dict[str, Any]:
        project = parts[0]
        if method == "POST" and parts[1:] == ["jobs"]:
            return self._jobs_insert(project, body)
        if method == "POST" and parts[1:] == ["queries"]:
            job_id = f"job_{uuid.uuid4().hex}"
            result = self.run_query(project, body["query"], body.get("queryParameters", []))
            self._results[job_id] = result
            return {**self._page(project, job_id, query), "kind": "bigquery#queryResponse"}
        if method == "GET" and len(parts) == 3 and parts[1] == "queries":
            return self._page(project, parts[2], query)
        if method == "GET" and len(parts) == 3 and parts[1] == "jobs":
            return self._results[parts[2]].job
        if method == "GET" and len(parts) >= 5 and parts[1] == "datasets" and parts[3] == "tables":
            table_id = f"{project}.{parts[2]}.{parts[4]}"
            if parts[2] and f"{project}.{parts[2]}" in self.denied_datasets:
                raise BigQueryError(403, "accessDenied", f"Access Denied: Table {table_id}")
            table = self.tables.get(table_id)
            if table is None:
                raise BigQueryError(404, "notFound", f"Not found: Table {table_id}")
            if parts[5:] == ["data"]:
                return self._table_data(table, query)
            return self._table_resource(table)
        raise BigQueryError(404, "notFound", f"{method} {'/'.join(parts)} is not served here")

    def _jobs_insert(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        configuration = body.get("configuration", {})
        settings = configuration.get("query", {})
        reference = {**body.get("jobReference", {}), "projectId": project}
        reference.setdefault("jobId", f"job_{uuid.uuid4().hex}")
        reference.setdefault("location", "US")
        result = self.run_query(project, settings["query"], settings.get("queryParameters", []))
        now = str(int(datetime.now(UTC).timestamp() * 1000))
        result.job = {
            "kind": "bigquery#job",
            "id": f"{project}:US.{reference['jobId']}",
            "jobReference": reference,
            "configuration": configuration,
            "status": {"state": "DONE"},
            "statistics": {
                "creationTime": now,
                "startTime": now,
                "endTime": now,
                "query": {"statementType": "SELECT", "totalBytesProcessed": "0"},
            },
        }
        self._results[reference["jobId"]] = result
        return result.job

    def _page(self, project: str, job_id: str, query: dict[str, str]) -> dict[str, Any]:
        result = self._results[job_id]
        answer: dict[str, Any] = {
            "kind": "bigquery#getQueryResultsResponse",
            "jobReference": {"projectId": project, "jobId": job_id, "location": "US"},
            "jobComplete": True,
            "schema": {"fields": result.schema},
            "totalRows": str(len(result.rows)),
        }
        answer.update(self._rows(result.schema, result.rows, query))
        return answer

    def _rows(
        self, schema: list[dict[str, Any]], rows: list[dict[str, Any]], query: dict[str, str]
    ) -> dict[str, Any]:
        size = int(query.get("maxResults", self.page_size))
        if size == 0:
            return {}
        start = int(query.get("pageToken") or query.get("startIndex") or 0)
        end = min(start + min(size, self.page_size), len(rows))
        page: dict[str, Any] = {
            "rows": [
                {"f": [{"v": encode_value(row[item["name"]], item)} for item in schema]}
                for row in rows[start:end]
            ]
        }
        if end < len(rows):
            page["pageToken"] = str(end)
        return page

    def _table_resource(self, table: Table) -> dict[str, Any]:
        project, dataset, name = table.table_id.rsplit(".", 2)
        resource: dict[str, Any] = {
            "kind": "bigquery#table",
            "id": f"{project}:{dataset}.{name}",
            "tableReference": {"projectId": project, "datasetId": dataset, "tableId": name},
            "schema": {"fields": table.schema},
            "numRows": str(self.row_count(table)),
            "type": table.kind,
            "location": "US",
        }
        if table.partitioned:
            resource["timePartitioning"] = {"type": "DAY"}
        return resource

    def _table_data(self, table: Table, query: dict[str, str]) -> dict[str, Any]:
        rows = self.table_rows(table)
        answer = {"kind": "bigquery#tableDataList", "totalRows": str(rows.num_rows)}
        answer.update(self._rows(table.schema, rows.to_pylist(), query))
        return answer


def _parameter(item: dict[str, Any]) -> Any:
    kind = item["parameterType"]["type"]
    value = item.get("parameterValue", {}).get("value")
    if value is None:
        return None
    converters: dict[str, Callable[[str], Any]] = {
        "DATE": date.fromisoformat,
        "INT64": int,
        "FLOAT64": float,
        "NUMERIC": Decimal,
        "BOOL": lambda text: text.lower() == "true",
        "TIMESTAMP": lambda text: datetime.fromisoformat(text.replace(" UTC", "+00:00")),
    }
    return converters.get(kind, str)(value)


def _handler(endpoint: BigQueryEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw.strip() else {}
                status, answer = endpoint.handle(method, self.path, body)
            except Exception as error:  # answer, never drop the connection (the client retries)
                status, answer = 400, {"error": {"code": 400, "message": repr(error)}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read records
            return

    return Handler
