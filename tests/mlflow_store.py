"""MLflow's documented SQL tracking-store schema, for tests that write a store without mlflow."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pipeline.telemetry.mlflow import SUPPORTED_VERSIONS

# The tables and columns of MLflow's SQL store that the reader uses.
DDL = """
create table alembic_version (version_num varchar(32) not null primary key);
create table experiments (experiment_id integer primary key, name varchar(256) not null,
    artifact_location varchar(256), lifecycle_stage varchar(32), creation_time bigint,
    last_update_time bigint);
create table runs (run_uuid varchar(32) primary key, name varchar(250), source_type varchar(20),
    user_id varchar(256), status varchar(9), start_time bigint, end_time bigint,
    lifecycle_stage varchar(20), artifact_uri varchar(200), experiment_id integer,
    deleted_time bigint);
create table tags (key varchar(250) not null, value varchar(8000), run_uuid varchar(32) not null,
    primary key (key, run_uuid));
create table params (key varchar(250) not null, value varchar(8000) not null,
    run_uuid varchar(32) not null, primary key (key, run_uuid));
create table metrics (key varchar(250) not null, value float not null, timestamp bigint not null,
    run_uuid varchar(32) not null, step bigint default 0 not null,
    is_nan boolean default 0 not null);
"""
VERSION = SUPPORTED_VERSIONS[0]


def empty_store(path: Path, version: str | None = VERSION) -> sqlite3.Connection:
    """An empty store at `path` stamped with `version` (None: no version row); commit, close."""
    con = sqlite3.connect(path)
    con.executescript(DDL)
    if version:
        con.execute("insert into alembic_version values (?)", (version,))
    return con
