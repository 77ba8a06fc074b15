"""Resource-hash partitions: a model built in passes, one slice of the resources at a time.

A model whose SQL calls `in_resource_partition(resource_id)` (pipeline.dag.macros) keeps, in each
pass, only the rows whose resource hashes into that pass's partition; the engine builds it in
`partitions` passes one after another (the first creates the table, the others insert), so the
model's joins and aggregates hold one partition's resources in memory instead of the month's.
Every resource is in exactly one partition, and a model partitioned this way must keep every
row of one resource together (its joins and groups include the resource), so the passes'
union is the model. The SQL keeps two placeholders the engine fills in per pass; an engine
that forgot them fails to bind, it never builds a wrong table.
"""

from __future__ import annotations

import math
import re

import duckdb

PARTITIONS = "__runcost_partitions__"
PARTITION = "__runcost_partition__"
# bytes of memory_limit one cost line of a pass needs for a partitioned model to run without
# spilling. Measured on the 50M benchmark at 4GB: the peak RSS
# of attribution.resource_time_overlaps, the larger of the two, grows about 135 bytes per line of
# a pass (1.8 GB in 4 passes, 3.5 GB in 2), so at 150 a pass stays under the limit. Each pass reads
# every line of the month again, so fewer passes cost less: the 50M run took 386.5 CPU s in 2
# passes against 418.4 in 4 (at 300 bytes a line, measured when the overlaps needed more memory).
BYTES_PER_LINE = 150
MAX_PARTITIONS = 64
_SIZE = re.compile(r"^\s*([0-9.]+)\s*(bytes|[KMGTP]i?B)\s*$", re.IGNORECASE)
_UNITS = {"b": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def is_partitioned(sql: str) -> bool:
    return PARTITION in sql


def pass_sql(sql: str, partitions: int, partition: int) -> str:
    """The model's SQL for one pass: the placeholders replaced by numbers."""
    return sql.replace(PARTITIONS, str(partitions)).replace(PARTITION, str(partition))


def memory_bytes(setting: str) -> int | None:
    """DuckDB's memory_limit as it reports it ("1.4 GiB", "762.9 MiB"), in bytes."""
    found = _SIZE.match(setting)
    if not found:
        return None
    unit = found.group(2).lower()
    base = 1024 if "i" in unit else 1000
    return int(float(found.group(1)) * base ** _UNITS[unit[0]])  # "bytes" starts with b too


def partitions_for(lines: int, memory: int | None) -> int:
    """How many passes a partitioned model over ``lines`` cost lines takes in ``memory`` bytes."""
    if memory is None or memory <= 0:
        return 1
    return max(1, min(MAX_PARTITIONS, math.ceil(lines * BYTES_PER_LINE / memory)))


def auto_partitions(con: duckdb.DuckDBPyConnection, inputs: list[str]) -> int:
    """Passes for a model on ``con``: its largest built input's rows against memory_limit."""
    setting = con.execute("select current_setting('memory_limit')").fetchone()[0]
    lines = max(
        (con.execute(f"select count(*) from {name}").fetchone()[0] for name in inputs),
        default=0,
    )
    return partitions_for(lines, memory_bytes(str(setting)))
