"""`runcost status`, and what `runcost run` shows while it runs and when it ends."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column as TableColumn

from pipeline.cli.common import config_option, reports_errors
from pipeline.cli.tables import Column, print_table, terminal
from pipeline.config.loader import load_config
from pipeline.warehouse.queries import WarehouseStatus, run_outcome, warehouse_status
from pipeline.warehouse.snapshots import DATABASE_NAME

if TYPE_CHECKING:  # pipeline.run.nightly imports every stage; `runcost --help` should not wait
    from pipeline.run.nightly import RunEvent, RunResult

log = logging.getLogger("runcost")


class RunDisplay:
    """Progress bars per stage on a terminal; one structured log line per stage otherwise."""

    def __init__(self, console: Console, live: bool) -> None:
        self.console = console
        self.live = live
        self.bars: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self._handlers: list[logging.Handler] = []

    def __enter__(self) -> RunDisplay:
        if self.live:
            self.bars = Progress(*progress_columns(), console=self.console, expand=True)
            self.bars.start()
            # warnings print above the bars instead of tearing them
            self._handlers = log.handlers[:]
            log.handlers[:] = [_ConsoleHandler(self.console)]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.bars is not None:
            self.bars.stop()
            log.handlers[:] = self._handlers

    def on_event(self, event: RunEvent) -> None:
        """Receive one RunEvent from run_pipeline."""
        if self.bars is None:
            self._log(event)
            return
        if event.kind == "start":
            self.tasks[event.stage] = self.bars.add_task(
                f"{event.stage}: {event.message}", total=event.total or None
            )
        elif event.kind == "step" and event.stage in self.tasks:
            self.bars.advance(self.tasks[event.stage])
        elif event.kind == "done" and event.stage in self.tasks:
            task = self.tasks[event.stage]
            total = self.bars.tasks[task].total or 1
            self.bars.update(
                task,
                description=f"{event.stage}: {event.message}",
                total=total,
                completed=total,
            )

    def _log(self, event: RunEvent) -> None:
        extra = {"stage": event.stage}
        if event.kind == "start":
            log.info("%s: %s", event.stage, event.message, extra=extra)
        elif event.kind == "step":
            log.debug("%s: %s", event.stage, event.message, extra=extra)
        else:
            log.info(
                "%s: done in %.2f s: %s",
                event.stage,
                event.seconds or 0,
                event.message,
                extra=extra,
            )


def progress_columns() -> tuple[ProgressColumn, ...]:
    """Spinner, description, bar, done/total, time: the counts and the time keep their whole
    width; the description takes what is left and wraps (a narrow terminal cut `0:00:…`)."""
    return (
        SpinnerColumn(),
        TextColumn("{task.description}", table_column=TableColumn(ratio=1, overflow="fold")),
        BarColumn(bar_width=BAR_WIDTH),
        MofNCompleteColumn(table_column=TableColumn(no_wrap=True)),
        TimeElapsedColumn(table_column=TableColumn(no_wrap=True, min_width=len("0:00:00"))),
    )


BAR_WIDTH = 20


class _ConsoleHandler(logging.Handler):
    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        self.console.print(
            f"{record.levelname}: {record.getMessage()}", markup=False, highlight=False
        )


def run_display(console: Console) -> RunDisplay:
    """Bars when stderr is a terminal and logs are text; log lines otherwise."""
    context = click.get_current_context(silent=True)
    log_format = context.find_root().params.get("log_format", "text") if context else "text"
    return RunDisplay(console, live=console.is_terminal and log_format == "text")


def print_summary(console: Console, result: RunResult) -> None:
    """What the run did: periods touched, bill totals, checks, seconds per stage."""
    outcome = run_outcome(result.manifest)
    periods = ",".join(outcome.periods) or "none"
    new = ",".join(outcome.new_deliveries) or "none"
    seconds = sum(outcome.stage_seconds.values())
    timing = ", ".join(f"{name} {took:.2f} s" for name, took in outcome.stage_seconds.items())
    log.info(
        "run %s %s; periods %s; new deliveries %s; checks %d/%d passed; %.2f s",
        result.run_id,
        result.status,
        periods,
        new,
        outcome.checks_passed,
        len(outcome.checks),
        seconds,
        extra={"stage": "summary"},
    )
    if result.status != "published":  # a no-change run says only that
        console.print(
            f"no change: the inputs give the content of snapshot {outcome.unchanged_from}, "
            "which stays current",
            highlight=False,
            soft_wrap=True,
        )
        return
    names = ("period", "currency", "billed", "effective", "list", "net", "lines")
    print_table(
        f"Run {result.run_id}: published; the bill by period (rounded to the cent)",
        [Column(name, numeric=name not in ("period", "currency")) for name in names],
        [
            [
                row.billing_period,
                row.billing_currency,
                *(f"{amount:,.2f}" for amount in (row.billed_cost, row.effective_cost)),
                *(f"{amount:,.2f}" for amount in (row.list_cost, row.net_cost)),
                str(row.cost_lines),
            ]
            for row in outcome.totals
        ],
        console=console,
    )
    console.print(
        f"periods: {', '.join(outcome.periods) or 'none'} "
        f"(new deliveries: {', '.join(outcome.new_deliveries) or 'none'})"
    )
    console.print(f"checks: {outcome.checks_passed} of {len(outcome.checks)} passed")
    console.print(f"time: {timing} (total {seconds:.2f} s)")


@click.command()
@config_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text, or json for scripts (the same facts, amounts as exact decimal strings).",
)
@reports_errors
def status(config_path: Path | None, output_format: str) -> None:
    """Show the current snapshot, the last run and its checks, and which periods are final."""
    found = warehouse_status(load_config(config_path).warehouse)
    if output_format == "json":
        click.echo(json.dumps(found.to_json(), indent=2))
        return
    _print_status(terminal(), found)


def _print_status(console: Console, found: WarehouseStatus) -> None:
    console.print(f"warehouse: {found.warehouse}", highlight=False)
    current = found.current
    if current is None:
        console.print("current snapshot: none (nothing published yet; run `runcost run`)")
    else:
        console.print(
            f"current snapshot: {current.run_id}, published {current.published_at}, "
            f"{current.tables} tables, content {current.content_hash}",
            highlight=False,
        )
        if found.database_run_id != current.run_id:
            console.print(
                f"warning: {DATABASE_NAME} serves {found.database_run_id}; the next run "
                "repairs this",
                highlight=False,
            )
        for damaged in found.damaged_files:
            console.print(
                f"damaged: {damaged.path}: {damaged.problem}; the next `runcost run` rebuilds "
                "it from raw/ and the telemetry",
                markup=False,
                highlight=False,
            )
    running = found.running
    console.print(
        "running now: "
        + (
            f"pid {running.pid} on host {running.host}, started {running.started_at}"
            if running
            else "no"
        ),
        highlight=False,
    )
    last = found.last_run
    if last is None:
        console.print("last run: none")
    else:
        console.print(
            f"last run: {last.run_id}: {last.status}, started {last.started_at}"
            + (f", {last.seconds:.1f} s" if last.seconds else ""),
            highlight=False,
        )
        if last.error is not None:
            console.print(f"  error: {last.error}", markup=False, highlight=False)
        failed = last.failed_checks
        console.print(
            f"  checks: {len(last.checks) - len(failed)} of {len(last.checks)} passed"
            + (f"; failed: {', '.join(failed)}" if failed else ""),
            highlight=False,
        )
        if last.built_because:
            console.print(
                f"  built because: {', '.join(last.built_because)}", markup=False, highlight=False
            )
        elif last.status == "unchanged" and not last.built:
            console.print(
                "  nothing new: the inputs equal those of the current snapshot; nothing built",
                highlight=False,
            )
        for month, build in sorted(last.period_builds.items()):
            why = ", ".join(str(item) for item in build.get("why") or [])
            console.print(
                f"  {month}: {build.get('action')} ({why}); rows {build.get('rows')}",
                markup=False,
                highlight=False,
            )
    if found.periods:
        names = ("period", "provider", "account", "currency", "status", "billed", "lines")
        print_table(
            "Billing periods (final: invoiced; open, provisional: may change; rounded to the cent)",
            [Column(name, numeric=name in ("billed", "lines")) for name in names],
            [
                [
                    item.billing_period,
                    item.provider,
                    item.billing_account_id,
                    item.billing_currency,
                    item.period_status,
                    f"{item.billed_cost:,.2f}",
                    str(item.cost_lines),
                ]
                for item in found.periods
            ],
            console=console,
        )
