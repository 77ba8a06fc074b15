"""The BigQuery client for the billing export: credentials, queries, and errors that say the fix."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

from google.api_core import exceptions as api_errors
from google.api_core.client_options import ClientOptions
from google.auth import exceptions as auth_errors
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

from pipeline.common.errors import ConfigError, InputError
from pipeline.ingest.gcp.settings import GcpSettings

log = logging.getLogger("runcost")

_PARAMETER_TYPES = {date: "DATE", str: "STRING", int: "INT64"}


def make_client(settings: GcpSettings, project: str) -> bigquery.Client:
    """A client whose jobs run in ``project``: Application Default Credentials, or anonymous
    ones against gcp.api_endpoint. Credentials are never read from runcost.toml or logged."""
    if settings.api_endpoint is not None:
        return bigquery.Client(
            project=project,
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=settings.api_endpoint),
        )
    try:
        return bigquery.Client(project=project)
    except auth_errors.DefaultCredentialsError as error:
        raise ConfigError(
            "gcp.tables: no Google credentials found (Application Default Credentials); run "
            "`gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a "
            "service account key file, or run on Google Cloud as a service account that has "
            "BigQuery Data Viewer on the export's dataset and BigQuery Job User on "
            f"{project}; runcost never reads credentials from runcost.toml"
        ) from error


def job_project(settings: GcpSettings, table_id: str) -> str:
    """The project that runs (and pays for) the queries: gcp.billing_project, else the table's."""
    return settings.billing_project or table_id.rsplit(".", 2)[0]


def query(
    client: bigquery.Client, sql: str, parameters: dict[str, Any], table_id: str
) -> bigquery.table.RowIterator:
    """Run one query with named parameters and wait for its first page of results."""
    config = bigquery.QueryJobConfig(
        query_parameters=[
            bigquery.ScalarQueryParameter(name, _PARAMETER_TYPES[type(value)], value)
            for name, value in parameters.items()
        ]
    )
    with translated(client, table_id):
        return client.query(sql, job_config=config).result()


@contextmanager
def translated(client: bigquery.Client, table_id: str) -> Iterator[None]:
    """Turn BigQuery's permission and authentication errors into ones that name the fix."""
    project, dataset, _name = table_id.rsplit(".", 2)
    roles = (
        f"the account runcost runs as needs BigQuery Data Viewer (roles/bigquery.dataViewer) on "
        f"dataset {project}.{dataset} and BigQuery Job User (roles/bigquery.jobUser) on project "
        f"{client.project} (set gcp.billing_project to run the queries in another project)"
    )
    try:
        yield
    except api_errors.Forbidden as error:
        raise InputError(
            f"{table_id}: permission denied by BigQuery ({message(error)}); {roles}"
        ) from error
    except (api_errors.Unauthorized, auth_errors.RefreshError) as error:
        # the message of an auth error may describe the credentials: name only its kind
        raise InputError(
            f"{table_id}: BigQuery refused the credentials ({type(error).__name__}); renew "
            "Application Default Credentials (`gcloud auth application-default login`, or the "
            f"service account key in GOOGLE_APPLICATION_CREDENTIALS); {roles}"
        ) from error


def message(error: api_errors.GoogleAPICallError) -> str:
    """BigQuery's own message for a failed call (the first detailed error, else the summary)."""
    details = [item.get("message", "") for item in error.errors or [] if isinstance(item, dict)]
    return next((item for item in details if item), error.message)


def make_read_client(settings: GcpSettings) -> Any | None:
    """A BigQuery Storage Read API client, or None for the REST path.

    gcp.read_api = "rest" never uses it; "storage" requires it; "auto" uses it when
    google-cloud-bigquery-storage is installed and the endpoint is Google's, or
    gcp.storage_api_endpoint names a local one (plaintext gRPC, anonymous).
    """
    if settings.read_api == "rest":
        return None
    try:
        from google.cloud import bigquery_storage_v1
    except ImportError:
        if settings.read_api == "storage":
            raise ConfigError(
                'gcp.read_api = "storage" needs google-cloud-bigquery-storage: '
                "pip install 'runcost[bigquery-storage]', or set gcp.read_api = \"rest\""
            ) from None
        return None
    if settings.storage_api_endpoint is not None:
        import grpc
        from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
            BigQueryReadGrpcTransport,
        )

        # as the library's own channel: a ReadRows response may be up to about 10 MB
        channel = grpc.insecure_channel(
            settings.storage_api_endpoint,
            options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)],
        )
        return bigquery_storage_v1.BigQueryReadClient(
            transport=BigQueryReadGrpcTransport(channel=channel)
        )
    if settings.api_endpoint is not None:  # a local REST endpoint and no local Storage one
        if settings.read_api == "storage":
            raise ConfigError(
                'gcp.read_api = "storage" with gcp.api_endpoint needs gcp.storage_api_endpoint'
            )
        return None
    try:
        return bigquery_storage_v1.BigQueryReadClient()
    except auth_errors.DefaultCredentialsError as error:
        raise ConfigError(
            "gcp.tables: no Google credentials found for the BigQuery Storage Read API; run "
            "`gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from error
