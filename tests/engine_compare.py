"""Run a world on DuckDB and on Spark and require every published table to be the same."""

from __future__ import annotations

import json
import math
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipeline.config.loader import load_config
from pipeline.run.nightly import run_pipeline
from pipeline.warehouse.snapshots import open_database

# DOUBLE columns (shares, hours, ratios) may differ in the last bits: Spark's double -> decimal
# cast and Java's exp() are not DuckDB's (docs/scale.md); money and everything else is exact
DOUBLE_RELATIVE = 1e-12
# a surrogate key whose values are each engine's own hash (the <source>_profile_key macros,
# pipeline.dag.profile_macros): its tables are compared without it, and the view that joins on it
# must be equal too
ENGINE_KEYS = ("profile_key",)
JOINED_VIEWS = ("normalized.cost_lines",)


def spark_twin(config_file: Path, spark_settings: str, name: str = "spark") -> Path:
    """A copy of ``config_file`` with engine = "spark", its own warehouse, the deliveries the
    DuckDB run ingested (a file without a delivery time is stamped with its ingest time, which
    would differ by seconds on a second ingest), and ``spark_settings`` ([spark] tables)."""
    text = config_file.read_text(encoding="utf-8")
    twin_text = text.replace('path = "warehouse"', f'path = "warehouse-{name}"')
    assert twin_text != text  # not the same warehouse
    twin = config_file.with_name(f"runcost-{name}.toml")
    twin.write_text('engine = "spark"\n' + twin_text + spark_settings, encoding="utf-8")
    shutil.copytree(
        config_file.with_name("warehouse") / "raw",
        config_file.with_name(f"warehouse-{name}") / "raw",
    )
    return twin


def assert_same_tables(duckdb_run: Any, spark_run: Any) -> None:
    """Every table the DuckDB run published equals the Spark run's: same columns and types, same
    rows (DOUBLE to a relative 1e-12, everything else exactly; an engine's own key left out, and
    the view joined on it compared whole), the same content hash for every table without a
    DOUBLE column or such a key, and the checks passed."""
    assert spark_run.status == duckdb_run.status == "published"
    assert spark_run.row_counts == duckdb_run.row_counts
    manifest = json.loads(spark_run.manifest.read_text(encoding="utf-8"))
    assert set(manifest["checks"].values()) == {"passed"}
    left = open_database(duckdb_run.database)
    right = open_database(spark_run.database)
    for table in [*duckdb_run.row_counts, *JOINED_VIEWS]:
        columns = left.execute(f"describe {table}").fetchall()
        assert right.execute(f"describe {table}").fetchall() == columns, table
        compared = [column for column in columns if column[0] not in ENGINE_KEYS]
        kinds = [str(column[1]) for column in compared]
        names = ", ".join(f'"{column[0]}"' for column in compared)
        expected = _sorted_rows(left, f"(select {names} from {table})")
        actual = _sorted_rows(right, f"(select {names} from {table})")
        for want, got in zip(expected, actual, strict=True):
            for name, kind, a, b in zip((c[0] for c in compared), kinds, want, got, strict=True):
                assert _same(kind, a, b), (table, name, a, b)
        if (
            table in duckdb_run.row_counts
            and len(compared) == len(columns)
            and ("DOUBLE" not in " ".join(kinds))
        ):
            # identical, not close: the same content hash as DuckDB's table
            assert spark_run.content_hashes[table] == duckdb_run.content_hashes[table], table
    money = left.execute("select sum(effective_cost) from marts.attempt_costs").fetchone()[0]
    assert right.execute("select sum(effective_cost) from marts.attempt_costs").fetchone()[0] == (
        money
    )
    assert isinstance(money, Decimal) and money > 0
    left.close()
    right.close()


def same_tables_on_both_engines(config_file: Path, spark_settings: str) -> Any:
    """Run the world on DuckDB, then on Spark; every published table equal row for row."""
    duckdb_run = run_pipeline(load_config(config_file))
    spark_run = run_pipeline(load_config(spark_twin(config_file, spark_settings)))
    assert_same_tables(duckdb_run, spark_run)
    return duckdb_run


def _sorted_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    def key(row: tuple) -> str:  # doubles that differ in the last bits sort alike
        return repr(tuple(f"{value:.9g}" if isinstance(value, float) else value for value in row))

    return sorted(con.execute(f"select * from {table}").fetchall(), key=key)


def _same(kind: str, a: object, b: object) -> bool:
    if kind == "DOUBLE" and isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=DOUBLE_RELATIVE) or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)
