"""The benchmark's measured parts, each run in its own process: pipeline, floor scan, pandas."""

from __future__ import annotations

import contextlib
import json
import re
import resource
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from bench.disk import DiskSampler
from bench.plan import check_plan
from pipeline.common.duck import connect, literal
from pipeline.dag.models import LAYERS, parse_model, sql_root
from pipeline.dag.partitions import pass_sql
from pipeline.warehouse.snapshots import open_database, reader_settings

BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
STAGES = ("ingest", "telemetry", "staging", "normalized", "attribution", "allocation", "marts")
STAGES += ("checks", "publish")
# what the run record says of a night: how it ended, and each billing period's status
RECORDED = ("status", "unchanged_from", "periods", "stage_seconds")


def peak_mb() -> float:
    """Peak RSS of this process since the last reset_peak(), in MB (Linux VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reset_peak() -> None:
    """Start a new peak-RSS window (writing 5 to clear_refs resets VmHWM to the current RSS)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def cpu_seconds() -> float:
    """User plus system CPU seconds of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stage_of(message: str) -> str:
    head, _, rest = message.partition(": ")
    return rest.split(".", 1)[0] if head == "build" else head


def pipeline_child(args) -> dict:
    """Run the real pipeline once; per-stage seconds and peak RSS; check it against expected."""
    from pipeline.config.loader import load_config
    from pipeline.run.nightly import run_pipeline

    config = load_config(args.warehouse)
    peaks: dict[str, float] = {}
    cpu: dict[str, float] = {}
    current = ["ingest", cpu_seconds()]

    def close_segment() -> None:
        stage, since = current
        peaks[stage] = max(peaks.get(stage, 0.0), peak_mb())
        cpu[stage] = cpu.get(stage, 0.0) + cpu_seconds() - since

    def progress(message: str) -> None:
        close_segment()
        current[:] = [_stage_of(message), cpu_seconds()]
        reset_peak()

    now = datetime.fromisoformat(args.clock) if getattr(args, "clock", None) else None
    reset_peak()
    started = time.perf_counter()
    cpu_started = cpu_seconds()
    with DiskSampler(config.warehouse, lambda: str(current[0])) as disk:
        result = run_pipeline(config, progress, now=now)
    total = time.perf_counter() - started
    close_segment()
    run_cpu = cpu_seconds() - cpu_started  # the run alone: the checks below are the benchmark's
    stages = {name: result.stage_seconds.get(name, 0.0) for name in ("ingest", "telemetry")}
    for layer in LAYERS:
        stages[layer] = sum(
            seconds for name, seconds in result.report.seconds.items() if name.startswith(layer)
        )
    stages["publish"] = result.stage_seconds.get("publish", 0.0)
    expected = json.loads((args.dataset / "expected.json").read_text(encoding="utf-8"))
    problems, skipped, published = _verify(result.database, expected)
    plan = check_plan(_snapshot_plan(result.database))
    record = json.loads(result.manifest.read_text(encoding="utf-8"))
    return {
        "total_seconds": total,
        "status": result.status,
        "record": {name: record.get(name) for name in RECORDED},
        "stage_seconds": result.stage_seconds,
        "model_seconds": result.report.seconds,
        "partitions": result.report.partitions,
        "stages": {
            name: {
                "seconds": seconds,
                "cpu_seconds": cpu.get(name, 0.0),
                "peak_rss_mb": peaks.get(name, 0.0),
            }
            for name, seconds in stages.items()
        },
        "cpu_seconds": cpu_seconds() - cpu_started,
        "run_cpu_seconds": run_cpu,
        "peak_rss_mb": max(peaks.values()),
        "published": published,
        "row_counts": result.row_counts,
        "snapshot_bytes": sum(p.stat().st_size for p in result.snapshot.rglob("*.parquet")),
        "disk_peaks": disk.result(),
        "correct": not problems and plan["ok"],
        "problems": problems,
        "skipped": skipped,
        "plan": plan,
    }


def _verify(database: Path, expected: dict) -> tuple[list[str], list[str], dict]:
    """Reconciliation differences are 0 and bill totals equal the generator's, per model.

    A basis expected.json does not name (net_cost of a FOCUS bill, which has no net column) is
    not compared; it is listed in the second list, once per basis."""
    con = open_database(database)
    problems: list[str] = []
    try:
        rows = con.execute(
            "select allocation_model, cost_basis, sum(bill_total), sum(difference), "
            "sum(cost_lines) from marts.reconciliation group by all order by all"
        ).fetchall()
        tagged = con.execute(
            "select coalesce(sum(billed_cost), 0), count(*) from allocation.cost_allocations "
            "where allocation_model = 'marginal' and attribution_method = 'tag'"
        ).fetchall()[0]
        digest = con.execute(
            "select count(*), sum(effective_cost), bit_xor(hash(attempt_id, allocation_model, "
            "billed_cost, effective_cost, list_cost, net_cost)) from marts.attempt_costs"
        ).fetchall()[0]
    finally:
        con.close()
    published = {"reconciliation": [[str(v) for v in row] for row in rows]}
    published["attempt_costs_digest"] = [str(v) for v in digest]
    skipped = [
        f"{basis}: not in expected.json (the source has no such column)"
        for basis in BASES
        if basis not in expected
    ]
    for model, basis, total, difference, lines in rows:
        if difference != 0:
            problems.append(f"{model} {basis}: reconciliation difference {difference}")
        if basis in expected and Decimal(total) != Decimal(expected[basis]):
            problems.append(f"{model} {basis}: bill {total} != generated {expected[basis]}")
        if lines != expected["cost_lines"]:
            problems.append(f"{model} {basis}: {lines} lines != {expected['cost_lines']}")
    if Decimal(tagged[0]) != Decimal(expected["tagged_billed_cost"]):
        problems.append(f"tag-attributed {tagged[0]} != {expected['tagged_billed_cost']}")
    if len(rows) != 2 * len(BASES):
        problems.append(f"reconciliation has {len(rows)} model x basis rows, expected 8")
    return problems, skipped, published


def _snapshot_plan(database: Path) -> list[dict]:
    """EXPLAIN the resource+time join model over the published tables (views over Parquet)."""
    path = sql_root() / "attribution" / "resource_time_overlaps.sql"
    model = parse_model("attribution", path.stem, path.read_text(encoding="utf-8"), path)
    sql = pass_sql(model.sql, 1, 0)  # the plan of one pass (pipeline.dag.partitions)
    # staging telemetry views are published as telemetry.<name>; the rest under their own name
    sources = {name: name.replace("staging.", "telemetry.", 1) for name in model.inputs}
    con = connect(settings=reader_settings(database))  # the views' paths: see reader_settings
    try:
        con.execute(f"attach {literal(database)} as published (read_only)")
        for name, published in sources.items():
            con.execute(f"create schema if not exists {name.split('.')[0]}")
            con.execute(f"create view {name} as select * from published.{published}")
        return json.loads(con.execute(f"explain (format json) {sql}").fetchall()[0][1])
    finally:
        con.close()


def _connect(args) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set preserve_insertion_order = false")
    if args.threads:
        con.execute(f"set threads = {int(args.threads)}")
    if args.memory_limit:
        con.execute(f"set memory_limit = '{args.memory_limit}'")
    return con


def data_files(dataset: Path) -> list[str]:
    """The generated export's data files."""
    return sorted(str(path) for path in (dataset / "aws").rglob("*.parquet"))


def _listed(files: list[Path]) -> str:
    return "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"


def gcp_floor_sql(dataset: Path) -> str | None:
    """One scan of a GCP export dataset's files summing what a cost line needs, or None."""
    files = sorted((dataset / "gcp").glob("billing-*"))
    if not files:
        return None
    parquet = files[0].name.endswith(".parquet")
    source = f"read_{'parquet' if parquet else 'json'}({_listed(files)})"
    return (
        "select count(*), sum(cost), sum(coalesce(cost_at_list, 0)), sum(len(credits)), "
        "sum(list_sum(list_transform(credits, lambda credit: credit.amount))), "
        "sum(len(labels)), sum(length(resource.name)), sum(length(sku.description)), "
        "sum(usage.amount), sum(length(usage_start_time::varchar)), "
        f"sum(length(usage_end_time::varchar)) from {source}"
    )


def focus_floor_sql(dataset: Path) -> str | None:
    """One scan of a FOCUS dataset's files summing every column, or None for a CUR dataset."""
    from schemas.focus import KINDS

    files = sorted((dataset / "focus").glob("focus-*"))
    if not files:
        return gcp_floor_sql(dataset)
    listed = _listed(files)
    parquet = files[0].name.endswith(".parquet")
    source = f"read_parquet({listed})" if parquet else f"read_csv({listed}, all_varchar = true)"
    names = [row[0] for row in duckdb.sql(f"describe select * from {source}").fetchall()]
    sums = []
    for name in names:
        kind, value = KINDS.get(name, "string"), f'"{name}"'
        # CSV is text, as runcost reads it: each value parsed by its FOCUS kind
        if kind == "decimal":
            sums.append(f"sum({value}::decimal(38, 10))")
        elif kind == "datetime":
            sums.append(f"sum(epoch({value}::timestamptz))")
        else:
            sums.append(f"sum(length({value}))")
    return f"select count(*), {', '.join(sums)} from {source}"


def used_columns() -> list[str]:
    """The CUR columns the staging model reads."""
    text = (sql_root() / "staging" / "aws_cur2_line_items.sql").read_text(encoding="utf-8")
    return sorted(set(re.findall(r"\bsource\.([a-z_]+)", text)))


def floor_child(args) -> dict:
    """The floor: one DuckDB scan of the input files reading the used columns and summing them."""
    from schemas.aws_cur2 import ALL_COLUMNS

    focus_sql = focus_floor_sql(args.dataset)  # or a GCP export's
    kinds = dict(ALL_COLUMNS)
    sums = []
    for column in used_columns():
        kind = kinds.get(column)
        if kind == "double":
            sums.append(f"sum({column})")
        elif kind == "timestamp":
            sums.append(f"sum(epoch({column}))")
        elif kind == "string":
            sums.append(f"sum(length({column}))")
        elif kind and kind.startswith("map"):
            sums.append(f"sum(cardinality({column}))")
    files = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in data_files(args.dataset))
    con = _connect(args)
    reset_peak()
    started, cpu_started = time.perf_counter(), cpu_seconds()
    sql = focus_sql or f"select count(*), {', '.join(sums)} from read_parquet({files}])"
    row = con.execute(sql).fetchall()
    seconds = time.perf_counter() - started
    con.close()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds() - cpu_started,
        "rows": row[0][0],
        "columns": len(sums) if focus_sql is None else focus_sql.count("sum("),
        "peak_rss_mb": peak_mb(),
    }


def pandas_child(args) -> dict:
    """Naive pandas resource+time attribution: merge on resource id, filter overlaps, pro rata."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    reset_peak()
    started, cpu_started = time.perf_counter(), cpu_seconds()
    wanted = [
        "line_item_resource_id", "line_item_usage_start_date", "line_item_usage_end_date",
        "line_item_unblended_cost", "line_item_usage_amount", "pricing_unit",
    ]  # fmt: skip
    batches, taken = [], 0
    for path in data_files(args.dataset):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536, columns=wanted):
            batches.append(batch.slice(0, args.subset - taken))
            taken += batches[-1].num_rows
            if taken >= args.subset:
                break
        if taken >= args.subset:
            break
    lines = pa.Table.from_batches(batches).to_pandas()
    lines.columns = ["resource_id", "start", "end", "cost", "usage", "unit"]
    lines["line"] = range(len(lines))
    telemetry = args.dataset / "telemetry"
    attempts = pd.read_parquet(
        telemetry / "attempts.parquet", columns=["attempt_id", "started_at", "ended_at"]
    )
    held = pd.read_parquet(telemetry / "attempt_resources.parquet").merge(
        attempts, on="attempt_id", suffixes=("", "_attempt")
    )
    held["held_from"] = held["started_at"].fillna(held["started_at_attempt"])
    held["held_until"] = held["ended_at"].fillna(held["ended_at_attempt"])
    held = held[["attempt_id", "resource_id", "held_from", "held_until"]]
    read = time.perf_counter() - started
    pairs = lines.merge(held, on="resource_id")
    candidates = len(pairs)
    latest = pairs[["end", "held_until"]].min(axis=1)
    earliest = pairs[["start", "held_from"]].max(axis=1)
    pairs["overlap"] = (latest - earliest).dt.total_seconds().clip(lower=0)
    pairs = pairs[pairs["overlap"] > 0].copy()
    window = (pairs["end"] - pairs["start"]).dt.total_seconds()
    hourly = pairs["unit"].str.lower().isin(["hrs", "hours", "hour", "hr"])
    active = window.where(~hourly, (pairs["usage"].clip(lower=0) * 3600).clip(upper=window))
    held_total = pairs.groupby("line")["overlap"].transform("sum")
    pairs["amount"] = (
        pairs["cost"] * pairs["overlap"] / pd.concat([active, held_total], axis=1).max(axis=1)
    )
    per_attempt = pairs.groupby("attempt_id")["amount"].sum()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds() - cpu_started,
        "read_seconds": read,
        "lines": len(lines),
        "candidate_pairs": candidates,
        "overlap_pairs": len(pairs),
        "attempts": len(per_attempt),
        "allocated_float": float(per_attempt.sum()),
        "peak_rss_mb": peak_mb(),
    }
