"""`runcost check`: are the tag keys active cost-allocation tags; how much of the bill has them."""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path
from typing import Any

import click

from pipeline.cli.common import EXIT_FAILED, EXIT_OK, config_option, console, reports_errors
from pipeline.cli.tables import Column, print_table
from pipeline.config.loader import load_config
from pipeline.ingest.provider import CheckReport, TagKeys
from pipeline.ingest.registry import PROVIDERS

COVERAGE_COLUMNS = ("period", "account", "service", "currency", "cost", "attempt", "exp.")


@click.command()
@config_option
@click.option(
    "--skip-aws", is_flag=True, help="Do not call Cost Explorer; report tag coverage only."
)
@reports_errors
def check(config_path: Path | None, skip_aws: bool) -> None:
    """Check the attempt and experiment tag keys with Cost Explorer, and report tag coverage.

    When runcost.toml has [aws] exports, asks Cost Explorer (ce:ListCostAllocationTags,
    credentials from the standard AWS chain) whether each configured key is an active
    cost-allocation tag; a GCP- or FOCUS-only configuration asks nothing of AWS. Prints the
    share of the published bill that carries each tag. Exits 1 when a key is not active or AWS
    cannot be asked, 0 otherwise.
    """
    from pipeline.warehouse.queries.coverage import overall_share, tag_coverage

    config = load_config(config_path)
    keys = TagKeys(config.attempt_tag_keys, config.experiment_tag_keys)
    rows = tag_coverage(config.warehouse)
    published = {row["source_format"] for row in rows or []}
    # each provider's own part: remote checks (--skip-aws: none) and notes on its lines
    reports = [
        provider.check(
            config.providers[provider.name], keys, not skip_aws, provider.source_format in published
        )
        for provider in PROVIDERS
        if provider.check is not None
    ]
    for report in reports:
        _print_report(report)
    failed = any(report.failed for report in reports)
    if rows is None:
        console.print("tag coverage: no published snapshot yet; run `runcost run` first")
        sys.exit(EXIT_FAILED if failed else EXIT_OK)
    _print_coverage(rows)
    for problem in (note for report in reports for note in report.notes):
        console.print(f"note: {problem}", markup=False, soft_wrap=True)
    attempt = overall_share(rows, "attempt_tagged_share")
    experiment = overall_share(rows, "experiment_tagged_share")
    console.print(
        f"overall: {_percent(attempt)} of cost carries the attempt tag, "
        f"{_percent(experiment)} the experiment tag",
        highlight=False,
    )
    sys.exit(EXIT_FAILED if failed else EXIT_OK)


def _print_report(report: CheckReport) -> None:
    """A provider's lines, its table (such as each key's Cost Explorer status) and warnings."""
    for line in report.lines:
        console.print(line, highlight=False, markup=False)
    if report.title is not None:
        print_table(
            report.title, [Column(name) for name in report.columns], [*map(list, report.rows)]
        )
    for text in report.warnings:
        console.print(f"warning: {text}", markup=False, soft_wrap=True)


def _print_coverage(rows: list[dict[str, Any]]) -> None:
    """One table per billing source; its tag keys are in the title, not on every row."""
    for (provider, source, attempt_keys, experiment_keys), group in groupby(
        rows,
        key=lambda row: (
            row["provider"],
            row["source_format"],
            tuple(row["attempt_tag_keys"]),
            tuple(row["experiment_tag_keys"]),
        ),
    ):
        keys = ", ".join([*attempt_keys, *experiment_keys])
        print_table(
            f"Tag coverage of the published bill (effective cost, rounded to the cent): "
            f"{provider} ({source}), keys {keys}",
            [Column(name, numeric=name in COVERAGE_COLUMNS[4:]) for name in COVERAGE_COLUMNS],
            [
                [
                    row["billing_period"],
                    row["sub_account_id"],
                    row["service_name"],
                    row["billing_currency"],
                    f"{row['total_cost']:,.2f}",
                    _percent(row["attempt_tagged_share"]),
                    _percent(row["experiment_tagged_share"]),
                ]
                for row in group
            ],
        )


def _percent(value: object) -> str:
    return "-" if value is None else f"{float(value) * 100:.1f}%"  # type: ignore[arg-type]
