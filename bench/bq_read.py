"""CPU and peak memory of reading one BigQuery export partition: REST pages vs Storage Read API.

    PYTHONPATH=.:tests python bench/bq_read.py --rows 250000

A server process holds the partition (tests/bq_endpoint.py over REST, tests/bq_storage_endpoint.py
over gRPC); each read runs in its own client process, which reports its CPU (user + system, all
threads) and peak RSS above what it had before reading. Figures are scaled to a million rows.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

DAY = date(2026, 5, 1)


def serve(rows: int) -> None:
    from bq_endpoint import BigQueryEndpoint
    from bq_storage_endpoint import BigQueryStorageEndpoint
    from gcp_export import DETAILED_SCHEMA, DETAILED_TABLE, export_row

    rest = BigQueryEndpoint(page_size=20_000).start()  # BigQuery pages are about 10 MB
    rest.create_table(DETAILED_TABLE, DETAILED_SCHEMA)
    template = [
        export_row(DAY, hour, f"{hour}.{hour:02d}0001", labels={"user_attempt_id": f"a{hour}"})
        for hour in range(24)
    ]
    for start in range(0, rows, 50_000):
        chunk = [
            {**template[n % 24], "cost": f"{n % 977}.{n % 1000:03d}001"}
            for n in range(start, min(rows, start + 50_000))
        ]
        rest.insert_rows(DETAILED_TABLE, chunk, DAY)
    storage = BigQueryStorageEndpoint(rest, batch_rows=10_000).start()
    print(json.dumps({"rest": rest.url, "storage": storage.address}), flush=True)
    sys.stdin.read()  # until the parent closes it


def client(path: str, rest_url: str, storage: str, out: Path) -> None:
    import pyarrow.parquet as pq
    from gcp_export import DETAILED_TABLE

    from pipeline.ingest.gcp.bigquery_client import make_client, make_read_client, query
    from pipeline.ingest.gcp.bigquery_storage import stream_partition
    from pipeline.ingest.gcp.bigquery_table import inspect_table
    from pipeline.ingest.gcp.partitions import fetch_sql
    from pipeline.ingest.gcp.settings import GcpSettings

    settings = GcpSettings(
        tables=(DETAILED_TABLE,),
        api_endpoint=rest_url,
        read_api=path,
        storage_api_endpoint=storage if path == "storage" else None,
    )
    bq = make_client(settings, "billing-proj")
    table = inspect_table(bq, DETAILED_TABLE)
    reader = make_read_client(settings)
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    if reader is not None:
        rows = stream_partition(reader, table, DAY, "billing-proj", out)
    else:
        result = query(
            bq, fetch_sql(table.table_id, table.columns), {"partition": DAY}, table.table_id
        )
        arrow = result.to_arrow(create_bqstorage_client=False)
        pq.write_table(arrow, out)
        rows = arrow.num_rows
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "path": path,
                "rows": rows,
                "wall_s": time.perf_counter() - wall,
                "cpu_s": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                "peak_rss_above_start_mb": (after.ru_maxrss - before.ru_maxrss) / 1024,
                "parquet_mb": out.stat().st_size / 2**20,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--serve", type=int)
    parser.add_argument("--client", nargs=4)
    parser.add_argument("--paths", default="rest,storage", help="rest,storage or one of them")
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    if args.client:
        return client(*args.client[:3], Path(args.client[3]))
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(args.rows)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        urls = json.loads(server.stdout.readline())  # type: ignore[union-attr]
        with tempfile.TemporaryDirectory() as folder:
            for path in args.paths.split(","):
                out = Path(folder) / f"{path}.parquet"
                done = subprocess.run(
                    [sys.executable, __file__, "--client", path, urls["rest"], urls["storage"],
                     str(out)],
                    stdout=subprocess.PIPE, text=True, check=True,
                )  # fmt: skip
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                scale = 1_000_000 / figures["rows"]
                figures["cpu_s_per_million_rows"] = round(figures["cpu_s"] * scale, 1)
                print(json.dumps(figures))
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
