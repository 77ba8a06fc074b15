"""One export partition read through the BigQuery Storage Read API, streamed into Parquet.

Arrow record batches arrive over gRPC and go straight to a pyarrow ParquetWriter, so memory
holds a batch or two, never the partition; the stream resumes at its offset after a transient
error (the client library's ReadRowsStream). The REST path (query result pages) stays the
fallback: gcp.read_api in docs/gcp-bigquery.md.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from google.api_core import exceptions as api_errors

from pipeline.common.errors import InputError
from pipeline.ingest.gcp.bigquery_table import ExportTable


def row_restriction(day: date) -> str:
    """The partition filter: the export is ingestion-time partitioned by day."""
    return f"_PARTITIONTIME = TIMESTAMP('{day.isoformat()}')"


def stream_partition(
    read_client: Any, table: ExportTable, day: date, project: str, path: Path
) -> int:
    """Write partition ``day`` of ``table`` (its own columns) to ``path``; the rows written."""
    from google.cloud.bigquery_storage_v1 import types

    table_project, dataset, name = table.table_id.rsplit(".", 2)
    session_spec = types.ReadSession(
        table=f"projects/{table_project}/datasets/{dataset}/tables/{name}",
        data_format=types.DataFormat.ARROW,
        read_options=types.ReadSession.TableReadOptions(
            selected_fields=list(table.columns), row_restriction=row_restriction(day)
        ),
    )
    where = f"{table.table_id}: partition {day}"
    try:
        session = read_client.create_read_session(
            parent=f"projects/{project}", read_session=session_spec, max_stream_count=1
        )
        if not session.streams:  # BigQuery gives no stream when no row matches
            schema = _schema(session)
            pq.write_table(schema.empty_table() if schema else pa.table({}), path)
            return 0
        schema = _schema(session)
        rows = 0
        with pq.ParquetWriter(path, schema) as writer:
            for stream in session.streams:
                for response in read_client.read_rows(stream.name):
                    batch = pa.ipc.read_record_batch(
                        pa.py_buffer(response.arrow_record_batch.serialized_record_batch), schema
                    )
                    writer.write_batch(batch)
                    rows += batch.num_rows
        return rows
    except api_errors.PermissionDenied as error:
        raise InputError(
            f"{where}: permission denied by the BigQuery Storage Read API ({error.message}); the "
            "account runcost runs as needs BigQuery Read Session User "
            f"(roles/bigquery.readSessionUser) on project {project} and BigQuery Data Viewer "
            f'on dataset {table_project}.{dataset}, or set gcp.read_api = "rest"'
        ) from error
    except api_errors.NotFound as error:
        raise InputError(
            f"{where}: not found by the BigQuery Storage Read API ({error.message}); check "
            "gcp.tables"
        ) from error
    except api_errors.GoogleAPICallError as error:
        raise InputError(
            f"{where}: the BigQuery Storage Read API failed ({type(error).__name__}: "
            f'{error.message}); run again, or set gcp.read_api = "rest" to read it over REST'
        ) from error


def _schema(session: Any) -> pa.Schema | None:
    serialized = session.arrow_schema.serialized_schema
    return pa.ipc.read_schema(pa.py_buffer(serialized)) if serialized else None
