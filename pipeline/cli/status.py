"""`runcost status`, and what `runcost run` shows while it runs and when it ends."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click
import duckdb
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from pipeline.cli.common import config_option, reports_errors
from pipeline.cli.tables import Column, print_table, terminal
from pipeline.common.duck import connect, literal
from pipeline.config.loader import load_config
from pipeline.warehouse.lock import running_holder
from pipeline.warehouse.snapshots import (
    DATABASE_NAME,
    current_snapshot,
    database_snapshot,
    reader_settings,
    snapshot_record,
)

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
            self.bars = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
            )
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
    manifest = json.loads(result.manifest.read_text(encoding="utf-8"))
    new = sorted(
        {item["billing_period"] for item in manifest["inputs"]["deliveries"] if item["new"]}
    )
    periods = sorted({item["billing_period"] for item in manifest.get("totals", [])})
    checks = manifest.get("checks", {})
    passed = sum(value == "passed" for value in checks.values())
    stages = manifest.get("stage_seconds", {})
    timing = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in stages.items())
    log.info(
        "run %s %s; periods %s; new deliveries %s; checks %d/%d passed; %.2f s",
        result.run_id,
        result.status,
        ",".join(periods) or "none",
        ",".join(new) or "none",
        passed,
        len(checks),
        sum(stages.values()),
        extra={"stage": "summary"},
    )
    if result.status != "published":  # a no-change run says only that
        console.print(
            f"no change: the inputs give the content of snapshot {manifest.get('unchanged_from')}, "
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
                row["billing_period"],
                row["billing_currency"],
                *(f"{Decimal(row[key]):,.2f}" for key in ("billed_cost", "effective_cost")),
                *(f"{Decimal(row[key]):,.2f}" for key in ("list_cost", "net_cost")),
                str(row["cost_lines"]),
            ]
            for row in manifest.get("totals", [])
        ],
        console=console,
    )
    console.print(
        f"periods: {', '.join(periods) or 'none'} (new deliveries: {', '.join(new) or 'none'})"
    )
    console.print(f"checks: {passed} of {len(checks)} passed")
    console.print(f"time: {timing} (total {sum(stages.values()):.2f} s)")


def collect_status(warehouse: Path) -> dict[str, Any]:
    """The warehouse's state from its files alone: snapshot, last run, lock, periods."""
    current = current_snapshot(warehouse)
    status: dict[str, Any] = {"warehouse": str(warehouse), "current": None}
    if current is not None:
        record = snapshot_record(Path(current["snapshot"])) or {}
        status["current"] = {
            "run_id": current["run_id"],
            "snapshot": current["snapshot"],
            "published_at": record.get("published_at"),
            "content_hash": record.get("content_hash"),
            "tables": len(record.get("tables", {})),
        }
        served = database_snapshot(warehouse)
        status["database_run_id"] = served[0] if served else None
    holder = running_holder(warehouse) if warehouse.is_dir() else None
    status["running"] = holder.__dict__ if holder else None
    runs = sorted(warehouse.glob("runs/*/manifest.json"))
    status["last_run"] = _last_run(runs[-1]) if runs else None
    status["periods"] = _periods(warehouse) if current is not None else []
    return status


def _last_run(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {"run_id": path.parent.name, "status": f"unreadable manifest: {error}"}
    keys = ("run_id", "status", "started_at", "finished_at", "error", "unchanged_from")
    found = {key: manifest[key] for key in keys if key in manifest}
    found["checks"] = manifest.get("checks", {})
    found["stage_seconds"] = manifest.get("stage_seconds", {})
    return found


def _periods(warehouse: Path) -> list[dict[str, Any]]:
    database = warehouse / DATABASE_NAME
    if not database.is_file():
        return []
    # attach: see snapshots.database_snapshot for why not connect(path)
    con = connect(settings=reader_settings(database))
    try:
        con.execute(f"attach {literal(database)} as served (read_only)")
        con.execute("use served")
        query = (
            "select billing_period, provider, billing_account_id, billing_currency, "
            "bool_and(invoiced), sum(bill_total), sum(cost_lines), {status} "
            "from marts.reconciliation "
            "where cost_basis = 'billed_cost' and allocation_model = 'marginal' "
            "group by all order by all"
        )
        try:
            rows = con.execute(query.format(status="min(period_status)")).fetchall()
        except duckdb.Error:  # a snapshot published before billing period statuses
            rows = con.execute(query.format(status="null")).fetchall()
    except duckdb.Error:
        return []
    finally:
        con.close()
    return [
        {
            "billing_period": period,
            "provider": provider,
            "billing_account_id": account,
            "billing_currency": currency,
            "final": bool(invoiced),
            "period_status": status or ("final" if invoiced else "open"),
            "billed_cost": str(total),
            "cost_lines": lines,
        }
        for period, provider, account, currency, invoiced, total, lines, status in rows
    ]


@click.command()
@config_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@reports_errors
def status(config_path: Path | None, output_format: str) -> None:
    """Show the current snapshot, the last run and its checks, and which periods are final."""
    found = collect_status(load_config(config_path).warehouse)
    if output_format == "json":
        click.echo(json.dumps(found, indent=2))
        return
    _print_status(terminal(), found)


def _print_status(console: Console, found: dict[str, Any]) -> None:
    console.print(f"warehouse: {found['warehouse']}", highlight=False)
    current = found["current"]
    if current is None:
        console.print("current snapshot: none (nothing published yet; run `runcost run`)")
    else:
        console.print(
            f"current snapshot: {current['run_id']}, published {current['published_at']}, "
            f"{current['tables']} tables, content {current['content_hash']}",
            highlight=False,
        )
        if found.get("database_run_id") != current["run_id"]:
            console.print(
                f"warning: {DATABASE_NAME} serves {found.get('database_run_id')}; the next run "
                "repairs this",
                highlight=False,
            )
    running = found["running"]
    console.print(
        "running now: "
        + (
            f"pid {running['pid']} on host {running['host']}, started {running['started_at']}"
            if running
            else "no"
        ),
        highlight=False,
    )
    last = found["last_run"]
    if last is None:
        console.print("last run: none")
    else:
        took = sum(last["stage_seconds"].values())
        console.print(
            f"last run: {last['run_id']}: {last['status']}, started {last.get('started_at')}"
            + (f", {took:.1f} s" if took else ""),
            highlight=False,
        )
        if "error" in last:
            console.print(f"  error: {last['error']}", markup=False, highlight=False)
        failed = sorted(name for name, value in last["checks"].items() if value != "passed")
        console.print(
            f"  checks: {len(last['checks']) - len(failed)} of {len(last['checks'])} passed"
            + (f"; failed: {', '.join(failed)}" if failed else ""),
            highlight=False,
        )
    if found["periods"]:
        names = ("period", "provider", "account", "currency", "status", "billed", "lines")
        print_table(
            "Billing periods (final: invoiced; open, provisional: may change; rounded to the cent)",
            [Column(name, numeric=name in ("billed", "lines")) for name in names],
            [
                [
                    item["billing_period"],
                    item["provider"],
                    item["billing_account_id"],
                    item["billing_currency"],
                    item["period_status"],
                    f"{Decimal(item['billed_cost']):,.2f}",
                    str(item["cost_lines"]),
                ]
                for item in found["periods"]
            ],
            console=console,
        )
