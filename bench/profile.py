"""Profile the SQL build on a generated dataset: seconds per model, EXPLAIN ANALYZE of one model.

python bench/profile.py DATASET [--database build.duckdb] [--scratch DIR] [--analyze MODEL]
python bench/profile.py DATASET --ingest-functions 15   (the ingest's top Python functions)

DATASET is a folder bench/run.py generated (a CUR world, or a -focus-<format> one): its
runcost.toml names the bill. The ingest is timed first, as one step, then each model. With
--scratch the build writes as a run does: the build steps and the published per-line tables
as Parquet under DIR; without it they are tables of the build database.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this file would shadow the standard library's profile (which cProfile imports)
sys.path[:] = [item for item in sys.path if Path(item or ".").resolve() != ROOT / "bench"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cProfile  # noqa: E402
import pstats  # noqa: E402

import duckdb  # noqa: E402

from bench.baselines import cpu_seconds, peak_mb, reset_peak  # noqa: E402
from pipeline.config.loader import load_config  # noqa: E402
from pipeline.dag.engines.duckdb import DuckDBEngine  # noqa: E402
from pipeline.dag.models import discover, order  # noqa: E402
from pipeline.dag.partitions import pass_sql  # noqa: E402
from pipeline.dag.pools import pool_models  # noqa: E402
from pipeline.ingest.aws.cur2 import ingest_aws_exports  # noqa: E402
from pipeline.ingest.focus.files import ingest_focus_files  # noqa: E402
from pipeline.ingest.gcp.files import ingest_gcp_files  # noqa: E402
from pipeline.run.settings import write_settings  # noqa: E402
from pipeline.run.sources import register_sources  # noqa: E402
from pipeline.telemetry.files import load_telemetry  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--database", default=":memory:", help="build database (default memory)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--memory-limit", default=None)
    parser.add_argument(
        "--partitions", type=int, default=None, help="resource-hash passes (default: by memory)"
    )
    parser.add_argument("--analyze", action="append", default=[], help="model to EXPLAIN ANALYZE")
    parser.add_argument("--scratch", type=Path, default=None, help="Parquet as a run writes it")
    parser.add_argument("--sql-root", type=Path, default=None, help="models from this folder")
    parser.add_argument(
        "--ingest-functions",
        type=int,
        default=0,
        help="profile the ingest (cProfile) and print its N functions of most own time",
    )
    args = parser.parse_args(argv)
    config = load_config(args.dataset / "runcost.toml")
    reset_peak()
    started, cpu = time.perf_counter(), cpu_seconds()
    profiler = cProfile.Profile() if args.ingest_functions else None
    if profiler:
        profiler.enable()
    deliveries = [
        *ingest_aws_exports(config.providers["aws"], config.ingest_context()),
        *ingest_gcp_files(config.providers["gcp"], config.ingest_context()),
        *ingest_focus_files(config.providers["focus"], config.ingest_context()),
    ]
    if profiler:
        profiler.disable()
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    print(f"{seconds:8.2f} s {cpu:8.2f} CPU s {peak_mb():8.0f} MB  ingest", flush=True)
    if profiler:
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(args.ingest_functions)
    con = duckdb.connect(args.database)
    con.execute("set TimeZone = 'UTC'")
    con.execute("set preserve_insertion_order = false")
    if args.threads:
        con.execute(f"set threads = {args.threads}")
    if args.memory_limit:
        con.execute(f"set memory_limit = '{args.memory_limit}'")
    write_settings(con, config)
    register_sources(con, deliveries, load_telemetry(config.telemetry))
    for schema in ("staging", "normalized", "attribution", "allocation", "marts"):
        con.execute(f"create schema if not exists {schema}")
    engine = DuckDBEngine(con, scratch=args.scratch, partitions=args.partitions)
    total = total_cpu = 0.0
    for model in order(discover(args.sql_root) + pool_models(config)):
        reset_peak()
        started, cpu = time.perf_counter(), cpu_seconds()
        if model.materialization == "check":
            con.execute(f"select count(*) from ({model.sql})").fetchall()
        else:
            engine.create(model)  # partitioned models in passes, as a run builds them
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        total += seconds
        total_cpu += cpu
        print(
            f"{seconds:8.2f} s {cpu:8.2f} CPU s {peak_mb():8.0f} MB  {model.qualified}", flush=True
        )
        if model.qualified in args.analyze:
            plan = con.execute(f"explain analyze {_select(model)}").fetchall()
            print(plan[0][1], flush=True)
    print(f"{total:8.2f} s {total_cpu:8.2f} CPU s total")
    return 0


def _select(model) -> str:
    sql = pass_sql(model.sql, 1, 0)  # one pass of a partitioned model
    return sql if model.created_as != "table" else f"select * from ({sql})"


if __name__ == "__main__":
    raise SystemExit(main())
