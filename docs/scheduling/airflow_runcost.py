"""Airflow: the runcost nightly run as one task; a non-zero exit fails the task."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

with DAG(
    dag_id="runcost_nightly",
    schedule="30 6 * * *",
    start_date=datetime(2026, 11, 1),
    catchup=False,  # each run re-reads every current delivery: a skipped night loses nothing
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=30)},
    tags=["finops", "runcost"],
) as dag:
    BashOperator(
        task_id="runcost_run",
        # the trailing space: a command ending in .sh would be loaded as a Jinja template file
        bash_command="/srv/runcost/nightly.sh ",
        execution_timeout=timedelta(hours=4),
    )
