"""A local BigQuery Storage Read API (gRPC, plaintext) on 127.0.0.1 over a BigQueryEndpoint's
tables, built from the service's messages shipped in google-cloud-bigquery-storage."""

from __future__ import annotations

import re
import threading
import uuid
from concurrent import futures
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import grpc
import pyarrow as pa
from bq_catalog import BigQueryError
from bq_endpoint import BigQueryEndpoint
from google.cloud import bigquery
from google.cloud.bigquery import _pandas_helpers
from google.cloud.bigquery_storage_v1 import types

SERVICE = "google.cloud.bigquery.storage.v1.BigQueryRead"
_TABLE = re.compile(r"projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)")
_PARTITION = re.compile(r"_PARTITIONTIME\s*=\s*TIMESTAMP\s*\(\s*'(\d{4}-\d{2}-\d{2})'\s*\)")


@dataclass
class SessionRecord:
    """One CreateReadSession: the table, the partition, the columns, the billed project."""

    table: str
    partition: str
    columns: list[str]
    parent: str
    rows_sent: int = 0


@dataclass
class BigQueryStorageEndpoint:
    """CreateReadSession and ReadRows (Arrow record batches of `batch_rows` rows)."""

    rest: BigQueryEndpoint
    batch_rows: int = 1000
    sessions: list[SessionRecord] = field(default_factory=list)
    denied_parents: set[str] = field(default_factory=set)
    _streams: dict[str, tuple[pa.Table, SessionRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> BigQueryStorageEndpoint:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handlers = {
            "CreateReadSession": grpc.unary_unary_rpc_method_handler(
                self._create,
                request_deserializer=types.CreateReadSessionRequest.deserialize,
                response_serializer=types.ReadSession.serialize,
            ),
            "ReadRows": grpc.unary_stream_rpc_method_handler(
                self._read,
                request_deserializer=types.ReadRowsRequest.deserialize,
                response_serializer=types.ReadRowsResponse.serialize,
            ),
        }
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.stop(grace=None)

    def _create(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.read_session
        match = _TABLE.fullmatch(spec.table)
        partition = _PARTITION.fullmatch(spec.read_options.row_restriction or "")
        if match is None or partition is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unsupported session {spec}")
        if request.parent in self.denied_parents:
            context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"Permission denied on resource {request.parent} (bigquery.readsessions.create)",
            )
        table_id = ".".join(match.groups())
        columns = list(spec.read_options.selected_fields)
        selected = ", ".join(f"`{name}`" for name in columns)
        try:
            rows = self.rest.execute(
                f"select {selected} from `{table_id}` where date(_PARTITIONTIME) = @partition",
                {"partition": date.fromisoformat(partition.group(1))},
            )
        except BigQueryError as error:
            code = grpc.StatusCode.NOT_FOUND if "not found" in error.message.lower() else None
            context.abort(code or grpc.StatusCode.INVALID_ARGUMENT, error.message)
        rows = rows.cast(self._arrow_schema(table_id, columns))
        record = SessionRecord(table_id, partition.group(1), columns, request.parent)
        name = f"projects/{match.group(1)}/locations/us/sessions/{uuid.uuid4().hex}"
        streams = []
        with self._lock:
            self.sessions.append(record)
            if rows.num_rows:
                streams.append(types.ReadStream(name=f"{name}/streams/0"))
                self._streams[streams[0].name] = (rows, record)
        return types.ReadSession(
            name=name,
            table=spec.table,
            data_format=types.DataFormat.ARROW,
            arrow_schema=types.ArrowSchema(serialized_schema=rows.schema.serialize().to_pybytes()),
            streams=streams,
        )

    def _arrow_schema(self, table_id: str, columns: list[str]) -> pa.Schema:
        """The Arrow types BigQuery itself sends for these columns (as the REST client makes)."""
        fields = {item["name"]: item for item in self.rest.tables[table_id].schema}
        return _pandas_helpers.bq_to_arrow_schema(
            [bigquery.SchemaField.from_api_repr(fields[name]) for name in columns]
        )

    def _read(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            found = self._streams.get(request.read_stream)
        if found is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no stream {request.read_stream}")
        rows, record = found
        for batch in rows.slice(request.offset).to_batches(max_chunksize=self.batch_rows):
            record.rows_sent += batch.num_rows
            yield types.ReadRowsResponse(
                arrow_record_batch=types.ArrowRecordBatch(
                    serialized_record_batch=batch.serialize().to_pybytes(),
                    row_count=batch.num_rows,
                ),
                row_count=batch.num_rows,
            )
