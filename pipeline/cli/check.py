"""`runcost check`: are the tag keys active cost-allocation tags; how much of the bill has them."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from pipeline.cli.common import EXIT_FAILED, EXIT_OK, config_option, console, errors
from pipeline.common.errors import RuncostError
from pipeline.config.loader import Config, load_config
from pipeline.config.tags import gcp_label_problem


@click.command()
@config_option
@click.option(
    "--skip-aws", is_flag=True, help="Do not call Cost Explorer; report tag coverage only."
)
def check(config_path: Path | None, skip_aws: bool) -> None:
    """Check the attempt and experiment tag keys with Cost Explorer, and report tag coverage.

    Asks Cost Explorer (ce:ListCostAllocationTags, credentials from the standard AWS chain)
    whether each configured key is an active cost-allocation tag, and prints the share of the
    published bill that carries each tag. Exits 1 when a key is not active or AWS cannot be
    asked, 0 otherwise.
    """
    from pipeline.ingest.aws_tags import check_tag_keys, overall_share, tag_coverage

    try:
        config = load_config(config_path)
        failed = False
        if not skip_aws:
            import boto3

            client = boto3.client("ce", region_name="us-east-1")
            statuses = check_tag_keys(client, config.attempt_tag_keys, config.experiment_tag_keys)
            table = Table(title="Cost-allocation tags (Cost Explorer)")
            for name in ("role", "key in runcost.toml", "CUR key", "status", "AWS keys"):
                table.add_column(name)
            for item in statuses:
                table.add_row(
                    item.role, item.configured, item.cur_key, item.status, ", ".join(item.aws_keys)
                )
            console.print(table)
            for item in statuses:
                if item.advice:
                    failed = True
                    console.print(f"warning: {item.advice}", markup=False, soft_wrap=True)
        rows = tag_coverage(config.warehouse)
        if rows is None:
            console.print("tag coverage: no published snapshot yet; run `runcost run` first")
        else:
            table = Table(title="Tag coverage of the published bill (effective cost)")
            columns = ("provider", "keys", "period", "account", "service", "currency", "cost")
            for name in (*columns, "attempt", "exp."):
                table.add_column(
                    name, justify="right" if name in ("cost", "attempt", "exp.") else "left"
                )
            for row in rows:
                keys = [*row["attempt_tag_keys"], *row["experiment_tag_keys"]]
                table.add_row(
                    f"{row['provider']} ({row['source_format']})",
                    ", ".join(keys),
                    row["billing_period"],
                    row["sub_account_id"],
                    row["service_name"],
                    row["billing_currency"],
                    f"{row['total_cost']:.2f}",
                    _percent(row["attempt_tagged_share"]),
                    _percent(row["experiment_tagged_share"]),
                )
            console.print(table)
            for problem in _gcp_key_problems(rows, config):
                console.print(f"note: {problem}", markup=False, soft_wrap=True)
            attempt = overall_share(rows, "attempt_tagged_share")
            experiment = overall_share(rows, "experiment_tagged_share")
            console.print(
                f"overall: {_percent(attempt)} of cost carries the attempt tag, "
                f"{_percent(experiment)} the experiment tag"
            )
    except RuncostError as error:
        errors.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(error.exit_code)
    sys.exit(EXIT_FAILED if failed else EXIT_OK)


def _gcp_key_problems(rows: list[dict], config: Config) -> list[str]:
    """Why a configured key can never match a Google Cloud label, when GCP lines are published."""
    if not any(row["source_format"] == "gcp_billing_export" for row in rows):
        return []
    keys = (*config.attempt_tag_keys, *config.experiment_tag_keys)
    return [problem for problem in map(gcp_label_problem, keys) if problem]


def _percent(value: object) -> str:
    return "-" if value is None else f"{float(value) * 100:.1f}%"  # type: ignore[arg-type]
