"""Airflow: the runcost nightly run as one task; a non-zero exit fails the task.

Runs as: the user of the Airflow worker that takes the task, which must be `runcost`, the owner of
/srv/runcost (nightly.sh refuses any other user). With the LocalExecutor on the runcost machine,
run the scheduler as runcost; with the CeleryExecutor, start a worker as runcost on that machine
for the task's queue: `sudo -u runcost airflow celery worker --queues runcost`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, CronTriggerTimetable

with DAG(
    dag_id="runcost_nightly",
    # 06:30 UTC whatever the installation's core.default_timezone (a bare cron string would use it)
    schedule=CronTriggerTimetable("30 6 * * *", timezone="UTC"),
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
        queue="runcost",  # a worker running as runcost on the runcost machine (Celery)
    )
