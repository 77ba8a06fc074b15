"""Benchmark `runcost run` at a given scale: per-stage time, rows/s and peak memory, with baselines.

    python bench/run.py --rows 10_000_000 [--skew] [--memory-limit 4GB] [--out bench/out/x.json]
    python bench/run.py --rows 1_000_000 --engine spark --no-pandas --no-floor
    python bench/run.py --rows 1_000_000 --skew --nightly   (a second run over the first's snapshot)
    python bench/run.py --months 4 --rows 250_000   (history: first run, re-delivery, nothing new)
    python bench/run.py --rows 1_000_000 --source focus [--focus-format csv]   (the bill as FOCUS)
    python bench/run.py --rows 1_000_000 --source gcp [--gcp-format parquet]   (a GCP export)

Every measured part runs in a child process (this file with --child) so its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/profile.py would shadow the standard library's profile (cProfile, which PySpark imports)
# if this script's folder stayed first on the path: bench modules are imported as bench.*
sys.path[:] = [item for item in sys.path if Path(item or ".").resolve() != ROOT / "bench"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import baselines, focus_world, gcp_world  # noqa: E402
from bench.history import measure_history, open_clock  # noqa: E402
from bench.history_render import render_history  # noqa: E402
from bench.run_render import machine, render, size, summarize  # noqa: E402
from bench.scale import ScaleSpec, config_text, generate  # noqa: E402
from pipeline.config.engine import ENGINES  # noqa: E402

OUT = ROOT / "bench" / "out"
# --source: (formats, writer of the world's bill in that shape, its runcost.toml)
SOURCES = {
    "aws": ((), None, None),
    "gcp": (gcp_world.FORMATS, gcp_world.write_gcp, gcp_world.gcp_config_text),
    "focus": (focus_world.FORMATS, focus_world.write_focus, focus_world.focus_config_text),
}


def _rows(text: str) -> int:
    return int(text.replace("_", ""))


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=_rows, default=1_000_000, help="line items (per month)")
    parser.add_argument(
        "--months",
        type=int,
        default=None,
        help="history of N months: the first run, a night re-delivering the newest month (and "
        "the same night on a 1-month warehouse), a night with nothing new",
    )
    parser.add_argument("--skew", action="store_true", help="long nodes, many short attempts")
    parser.add_argument(
        "--source",
        choices=tuple(SOURCES),
        default="aws",
        help="the bill's format: aws (CUR 2.0), gcp (a detailed billing export's extract) or "
        "focus (FOCUS 1.2 files), each projected from the same CUR world; the pandas baseline "
        "reads the CUR and runs for aws only",
    )
    parser.add_argument(
        "--focus-format",
        choices=focus_world.FORMATS,
        default="parquet",
        help="with --source focus",
    )
    parser.add_argument(
        "--gcp-format", choices=gcp_world.FORMATS, default="ndjson", help="with --source gcp"
    )
    parser.add_argument("--memory-limit", default=None, help="warehouse.memory_limit, e.g. 4GB")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--partitions", type=int, default=None, help="warehouse.resource_partitions (passes)"
    )
    parser.add_argument("--engine", choices=tuple(ENGINES), default="duckdb")
    parser.add_argument("--spark-master", default=None, help="spark.master, e.g. spark://h:7077")
    parser.add_argument("--spark-remote", default=None, help="spark.remote, sc://host:15002")
    parser.add_argument(
        "--spark-conf", action="append", default=[], help="KEY=VALUE for [spark.conf]"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="JSON result file")
    parser.add_argument("--data", type=Path, default=OUT / "data", help="dataset cache folder")
    parser.add_argument("--subset", type=_rows, default=1_000_000, help="pandas subset rows")
    parser.add_argument("--no-pandas", action="store_true")
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument(
        "--nightly",
        action="store_true",
        help="run the pipeline again over the first run's snapshot (the next night's run)",
    )
    parser.add_argument(
        "--clock",
        default=None,
        help="the run clock of every run, ISO 8601 (default: now; with --months, noon on the "
        "newest month's last day, so that month is open)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dataset", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", type=Path, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.child:
        result = CHILDREN[args.child](args)
        result["ru_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("BENCH-RESULT " + json.dumps(result, default=str))
        return 0
    if args.months is not None:
        return history(args)
    spec = ScaleSpec(rows=args.rows, seed=args.seed, skew=args.skew)
    cur, dataset, generation = _datasets(args, spec)
    expected = json.loads((dataset / "expected.json").read_text(encoding="utf-8"))
    result: dict = {
        "spec": expected["spec"],
        "source": args.source,
        "source_format": _format(args),
        "machine": machine(),
        "memory_limit": args.memory_limit,
        "threads": args.threads,
        "partitions": args.partitions,
        "generation_seconds": generation,
        "dataset_bytes": size(dataset / args.source),
        "expected": expected,
    }
    warehouse = args.data.parent / "runs" / dataset.name / "warehouse"
    shutil.rmtree(warehouse.parent, ignore_errors=True)
    warehouse.parent.mkdir(parents=True)
    config = warehouse.parent / "runcost.toml"
    result["engine"] = args.engine
    config.write_text(_config_text(args, dataset, warehouse, cur), encoding="utf-8")
    extra = ["--dataset", str(dataset), "--warehouse", str(config), *_child_settings(args)]
    result["pipeline"] = _child("pipeline", extra)
    if args.nightly:
        result["nightly"] = _child("pipeline", extra)
    if not args.no_floor:
        result["floor"] = _child("floor", extra)
    if not args.no_pandas and args.source == "aws":
        result["pandas"] = _child("pandas", [*extra, "--subset", str(args.subset)])
    shutil.rmtree(warehouse.parent, ignore_errors=True)
    result["repeat_identical"] = _compare_with_previous(dataset, result["pipeline"])
    summarize(result)
    engine = "" if args.engine == "duckdb" else f"-{args.engine}"
    out = args.out or OUT / f"{dataset.name}-{args.memory_limit or 'nolimit'}{engine}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(render(result))
    print(f"written: {out}")
    return 0 if result["pipeline"].get("correct") else 1


def history(args: argparse.Namespace) -> int:
    """--months N: N months of history, then the nights of bench.history, in one invocation."""
    if args.source != "aws":
        raise SystemExit(f"--months with --source {args.source}: history is generated as CUR only")
    if args.months < 1:
        raise SystemExit(f"--months {args.months}: give at least 1 month of history")
    spec = ScaleSpec(rows=args.rows, seed=args.seed, skew=args.skew)
    args.clock = args.clock or open_clock(spec.period)
    runs = args.data.parent / "runs" / f"history-{args.months}-{spec.key()}"
    shutil.rmtree(runs, ignore_errors=True)
    result: dict = {
        "mode": "history",
        "history_months": args.months,
        "rows_per_month": args.rows,
        "skew": args.skew,
        "seed": args.seed,
        "engine": args.engine,
        "memory_limit": args.memory_limit,
        "threads": args.threads,
        "clock": args.clock,
        "machine": machine(),
    }
    result |= measure_history(
        spec,
        args.months,
        args.data,
        runs,
        lambda dataset, warehouse: _config_text(args, dataset, warehouse),
        _child,
        _child_settings(args),
        threads=args.threads,
        say=lambda text: print(text, flush=True),
    )
    result["load_average_end"] = os.getloadavg()
    shutil.rmtree(runs, ignore_errors=True)
    engine = "" if args.engine == "duckdb" else f"-{args.engine}"
    name = f"history{args.months}-{spec.key()}-{args.memory_limit or 'nolimit'}{engine}.json"
    out = args.out or OUT / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(render_history(result))
    print(f"written: {out}")
    return 0 if all(night.get("correct") for night in result["nights"].values()) else 1


def _datasets(args: argparse.Namespace, spec: ScaleSpec) -> tuple[Path, Path, float | None]:
    """The CUR world (generated unless cached), the dataset of --source, seconds generating."""
    cur = args.data / spec.key()
    generation = None
    if not (cur / "expected.json").is_file():
        shutil.rmtree(cur, ignore_errors=True)
        print(f"generating {spec.key()} ...", flush=True)
        started = time.perf_counter()
        generate(spec, cur, threads=args.threads)
        generation = time.perf_counter() - started
    if args.source == "aws":
        return cur, cur, generation
    dataset = args.data / f"{spec.key()}-{args.source}-{_format(args)}"
    if not (dataset / "expected.json").is_file():
        shutil.rmtree(dataset, ignore_errors=True)
        print(f"writing {dataset.name} ...", flush=True)
        started = time.perf_counter()
        write = SOURCES[args.source][1]
        write(cur, dataset, _format(args), threads=args.threads)
        generation = (generation or 0.0) + time.perf_counter() - started
    return cur, dataset, generation


def _format(args: argparse.Namespace) -> str | None:
    """The file format of --source's bill (None for the CUR, which has one)."""
    return {"focus": args.focus_format, "gcp": args.gcp_format}.get(args.source)


def _config_text(
    args: argparse.Namespace, dataset: Path, warehouse: Path, cur: Path | None = None
) -> str:
    """runcost.toml for a generated world in `dataset` (its CUR world `cur`), warehouse at
    `warehouse`."""
    written = SOURCES[args.source][2]
    if written:
        telemetry = (cur or dataset) / "telemetry"
        text = written(warehouse, dataset / args.source, telemetry, args.memory_limit)
    else:
        text = config_text(str(warehouse), args.memory_limit)
        text = text.replace('"aws/', f'"{dataset}/aws/').replace(
            '"telemetry"', f'"{dataset}/telemetry"'
        )
    if args.threads:
        text = text.replace("[warehouse]\n", f"[warehouse]\nthreads = {args.threads}\n")
    if args.partitions:
        text = text.replace(
            "[warehouse]\n", f"[warehouse]\nresource_partitions = {args.partitions}\n"
        )
    if args.engine != "duckdb":
        text = f'engine = "{args.engine}"\n' + text + _spark_section(args)
    return text


def _child_settings(args: argparse.Namespace) -> list[str]:
    """The settings every child is given: memory limit, threads, the run clock."""
    extra = []
    if args.memory_limit:
        extra += ["--memory-limit", args.memory_limit]
    if args.threads:
        extra += ["--threads", str(args.threads)]
    if args.clock:
        extra += ["--clock", args.clock]
    return extra


def _spark_section(args: argparse.Namespace) -> str:
    """[spark] and [spark.conf] from --spark-master, --spark-remote and --spark-conf."""
    lines = ["[spark]"]
    if args.spark_master:
        lines.append(f'master = "{args.spark_master}"')
    if args.spark_remote:
        lines.append(f'remote = "{args.spark_remote}"')
    lines.append("[spark.conf]")
    for item in args.spark_conf:
        key, _, value = item.partition("=")
        lines.append(f'"{key}" = "{value}"')
    return "\n" + "\n".join(lines) + "\n"


def _compare_with_previous(dataset: Path, pipeline: dict) -> bool | None:
    """Whether the published DECIMAL totals equal those of the previous run on this dataset."""
    record = dataset / "published.json"
    now = pipeline["published"]
    if not record.is_file():
        record.write_text(json.dumps(now, indent=2) + "\n", encoding="utf-8")
        return None
    return json.loads(record.read_text(encoding="utf-8")) == now


def _child(name: str, extra: list[str]) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name, *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            result = json.loads(line.removeprefix("BENCH-RESULT "))
            result["process_seconds"] = wall
            # user + system of this child alone (imports and the benchmark's checks included)
            result["process_cpu_seconds"] = (usage.ru_utime + usage.ru_stime) - (
                before.ru_utime + before.ru_stime
            )
            result["children_max_rss_mb"] = usage.ru_maxrss / 1024
            return result
    raise SystemExit(f"bench child {name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")


CHILDREN = {
    "pipeline": baselines.pipeline_child,
    "floor": baselines.floor_child,
    "pandas": baselines.pandas_child,
}

if __name__ == "__main__":
    raise SystemExit(main())
