"""Months of history for the benchmark: N billing periods delivered, and the nights that follow.

A world is a folder a run reads: one CUR 2.0 export holding each month as its own billing period
(its own manifest and data files), one telemetry folder holding every month's attempts, the
expected bill, a runcost.toml and the warehouse. Each month is generated once into the dataset
cache by bench.scale and linked into the world, never copied.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.scale import ScaleSpec, execution_id, generate
from bench.scale_sql import EXPORT_DIR, EXPORT_NAME, PERIOD
from pipeline.ingest.aws.manifest import write_manifest
from schemas.aws_cur2 import COLUMNS

NEWEST = PERIOD  # the newest month: open, no invoice id; it is the single-month world's month
REDELIVERY = 1  # the revision the next night re-delivers (its tax lines 1 USD more each)
TELEMETRY = ("attempts", "attempt_resources")
INTEGERS = ("cost_lines", "tagged_lines", "attempts", "attempt_resources", "data_files")
AMOUNTS = ("billed_cost", "list_cost", "effective_cost", "net_cost", "tagged_billed_cost")
# (name in the result, world, what the night delivers); one world holds N months, one the newest
NIGHTS = (
    ("first", "history", "every month, first run"),
    ("one_month_first", "one_month", "the newest month alone, first run"),
    ("redelivery", "history", "the newest month re-delivered"),
    ("one_month_redelivery", "one_month", "the newest month re-delivered"),
    ("nothing_new", "history", "nothing new"),
)
REDELIVERED = (
    "a new manifest executionId listing renamed files; the content slightly changed: each of "
    "the month's 20 tax lines is 1 USD more, every other file holds the same bytes"
)


def open_clock(period: str) -> str:
    """The run clock of every night: noon on the period's last day, so the period is open.

    One clock for every night: only the deliveries differ from night to night, and no period
    changes status by the clock alone (a day later the newest month would have ended).
    """
    year, month = (int(part) for part in period.split("-"))
    last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    return f"{last.isoformat()}T12:00:00+00:00"


def periods(months: int, newest: str = NEWEST) -> list[str]:
    """The `months` consecutive billing periods ending with `newest`, oldest first."""
    year, month = (int(part) for part in newest.split("-"))
    ordinal = year * 12 + month - 1
    return [f"{n // 12}-{n % 12 + 1:02d}" for n in range(ordinal - months + 1, ordinal + 1)]


def month_specs(base: ScaleSpec, months: int) -> list[ScaleSpec]:
    """One spec per month, oldest first: closed months carry an invoice id and attempt prefix.

    The newest month is `base` itself (open, no prefix), so the single-month benchmark's
    dataset is reused; older months prefix their attempt ids with m<YYYYMM>- so no id repeats.
    """
    specs = []
    for period in periods(months, base.period):
        if period == base.period:
            specs.append(base)
            continue
        compact = period.replace("-", "")
        specs.append(
            replace(base, period=period, attempt_prefix=f"m{compact}-", invoice_id=f"INV-{compact}")
        )
    return specs


@dataclass(frozen=True)
class Month:
    """A month generated into the dataset cache: its spec, folder and expected bill."""

    spec: ScaleSpec
    dataset: Path
    expected: dict
    generation_seconds: float | None


def cached_month(spec: ScaleSpec, data: Path, threads: int | None) -> Month:
    """The month from the dataset cache, generated first when the cache does not hold it."""
    dataset = data / spec.key()
    seconds = None
    if not (dataset / "expected.json").is_file():
        shutil.rmtree(dataset, ignore_errors=True)
        started = time.perf_counter()
        generate(spec, dataset, threads=threads)
        seconds = time.perf_counter() - started
    expected = json.loads((dataset / "expected.json").read_text(encoding="utf-8"))
    return Month(spec, dataset, expected, seconds)


def _link(source: Path, target: Path) -> None:
    """A hard link (the cache and the world share one file system), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


class World:
    """A folder one run reads, holding a warehouse that persists from night to night."""

    def __init__(self, folder: Path, config_text: Callable[[Path, Path], str]):
        self.folder = folder
        self.export = folder / EXPORT_DIR
        self.months: dict[str, Month] = {}
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        self.config = folder / "runcost.toml"
        self.config.write_text(config_text(folder, folder / "warehouse"), encoding="utf-8")

    def deliver(self, month: Month, tag: str = "") -> None:
        """Deliver `month` as its billing period's current delivery: files named with `tag`.

        A period delivered before is replaced as AWS's overwrite mode does it: the old data files
        and manifest go, the new manifest (its own executionId) lists the new names.
        """
        period = month.spec.period
        data = self.export / "data" / f"BILLING_PERIOD={period}"
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(self.export / "metadata" / f"BILLING_PERIOD={period}", ignore_errors=True)
        source = month.dataset / EXPORT_DIR / "data" / f"BILLING_PERIOD={period}"
        keys = []
        for path in sorted(source.glob("*.parquet")):
            name = path.name.replace(EXPORT_NAME, f"{EXPORT_NAME}{tag}", 1)
            _link(path, data / name)
            keys.append(f"data/BILLING_PERIOD={period}/{name}")
        write_manifest(
            self.export / "metadata" / f"BILLING_PERIOD={period}" / f"{EXPORT_NAME}-Manifest.json",
            export_name=EXPORT_NAME,
            bucket="runcost-bench-billing",
            prefix=f"exports/{EXPORT_NAME}",
            billing_period=period,
            execution_id=execution_id(month.spec),
            data_keys=keys,
            columns=list(COLUMNS),
        )
        self.months[period] = month
        (self.folder / "expected.json").write_text(
            json.dumps(combined([item.expected for item in self.months.values()]), indent=2) + "\n",
            encoding="utf-8",
        )

    def write_telemetry(self) -> None:
        """One canonical telemetry set covering every month (the pipeline reads one folder).

        A re-delivery changes the bill alone, so the telemetry is written once, before night one.
        """
        folder = self.folder / "telemetry"
        for name in TELEMETRY:
            sources = [
                month.dataset / "telemetry" / f"{name}.parquet"
                for _period, month in sorted(self.months.items())
            ]
            target = folder / f"{name}.parquet"
            target.unlink(missing_ok=True)
            if len(sources) == 1:
                _link(sources[0], target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            # months cached by an older generator may lack a column a newer one writes (pod):
            # every month is written with every column, NULL where its file has none
            schema = pa.unify_schemas([pq.read_schema(path) for path in sources])
            with pq.ParquetWriter(target, schema, compression="snappy") as out:
                for path in sources:
                    for batch in pq.ParquetFile(path).iter_batches(batch_size=262_144):
                        columns = [
                            batch.column(field.name)
                            if field.name in batch.schema.names
                            else pa.nulls(batch.num_rows, field.type)
                            for field in schema
                        ]
                        out.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))


def combined(expected: list[dict]) -> dict:
    """The expected bill of several months: line and attempt counts and DECIMAL totals summed."""
    total: dict = {name: sum(int(item[name]) for item in expected) for name in INTEGERS}
    for name in AMOUNTS:
        total[name] = str(sum((Decimal(item[name]) for item in expected), Decimal(0)))
    total["billing_periods"] = sorted(item["billing_period"] for item in expected)
    return total


Child = Callable[[str, list[str]], dict]


def measure_history(
    base: ScaleSpec,
    months: int,
    data: Path,
    runs: Path,
    config_text: Callable[[Path, Path], str],
    child: Child,
    extra: list[str],
    threads: int | None = None,
    say: Callable[[str], None] = lambda _text: None,
) -> dict:
    """Generate the months, then run the nights of NIGHTS in child processes; their numbers.

    ``child(name, arguments)`` runs one measured child; ``extra`` is passed to every child.
    """
    specs = month_specs(base, months)
    history = []
    for spec in specs:
        say(f"month {spec.period}: {spec.key()}")
        history.append(cached_month(spec, data, threads))
    newest = history[-1]
    say(f"re-delivery of {newest.spec.period}: revision {REDELIVERY}")
    revised = cached_month(replace(newest.spec, revision=REDELIVERY), data, threads)
    worlds = {
        "history": World(runs / "history", config_text),
        "one_month": World(runs / "one_month", config_text),
    }
    for month in history:
        worlds["history"].deliver(month)
    worlds["one_month"].deliver(newest)
    for world in worlds.values():
        world.write_telemetry()
    nights: dict[str, dict] = {}
    for name, world_name, _what in NIGHTS:
        world = worlds[world_name]
        if name.endswith("redelivery"):
            world.deliver(revised, tag=f"-r{REDELIVERY}")
        say(f"night {name}: {world_name}")
        arguments = ["--dataset", str(world.folder), "--warehouse", str(world.config), *extra]
        nights[name] = child("pipeline", arguments)
        nights[name]["expected"] = json.loads(
            (world.folder / "expected.json").read_text(encoding="utf-8")
        )
    return {
        "months": [
            {
                "period": month.spec.period,
                "key": month.spec.key(),
                "invoice_id": month.spec.invoice_id or None,
                "attempt_prefix": month.spec.attempt_prefix,
                "cost_lines": month.expected["cost_lines"],
                "attempts": month.expected["attempts"],
                "generation_seconds": month.generation_seconds,
            }
            for month in [*history, revised]
        ],
        "nights": nights,
        "ratios": ratios(nights),
    }


def ratios(nights: dict[str, dict]) -> dict[str, float]:
    """The issue's ratios on the run's CPU seconds, and on the whole child process's."""
    found: dict[str, float] = {}
    pairs = {
        "redelivery_over_one_month": ("redelivery", "one_month_redelivery"),
        "nothing_new_over_first": ("nothing_new", "first"),
    }
    for name, (top, bottom) in pairs.items():
        for basis, suffix in (("run_cpu_seconds", "cpu"), ("process_cpu_seconds", "process_cpu")):
            if nights[bottom].get(basis):
                found[f"{name}_{suffix}"] = nights[top][basis] / nights[bottom][basis]
    return found
