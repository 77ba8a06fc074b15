"""The tables behind the local BigQuery endpoint: DuckDB tables with a real _PARTITIONTIME,
INFORMATION_SCHEMA views, and BigQuery SQL translated with sqlglot."""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from bq_values import (
    arrow_type,
    coerce_row,
    decode_schema_type,
    normalize_schema,
    schema_field,
    timestamp,
)
from sqlglot import exp

# BigQuery's own INFORMATION_SCHEMA views, as far as an ingester reads them
_INFO_VIEWS = {
    "TABLES": "bq_info_tables",
    "COLUMNS": "bq_info_columns",
    "COLUMN_FIELD_PATHS": "bq_info_field_paths",
}
_INFO_DDL = (
    "create table bq_info_tables (table_catalog varchar, table_schema varchar, "
    "table_name varchar, table_type varchar, creation_time timestamptz)",
    "create table bq_info_columns (table_catalog varchar, table_schema varchar, "
    "table_name varchar, column_name varchar, ordinal_position bigint, is_nullable varchar, "
    "data_type varchar, is_system_defined varchar, is_partitioning_column varchar)",
    "create table bq_info_field_paths (table_catalog varchar, table_schema varchar, "
    "table_name varchar, column_name varchar, field_path varchar, data_type varchar)",
)


@dataclass
class Table:
    """One table or view the endpoint holds."""

    table_id: str
    schema: list[dict[str, Any]]
    duck_name: str
    kind: str = "TABLE"  # or "VIEW"
    partitioned: bool = True


class BigQueryError(Exception):
    """An error answered the way BigQuery answers it: HTTP status, reason, message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class Catalog:
    """BigQuery tables held in one in-memory DuckDB database."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.denied_datasets: set[str] = set()
        self._lock = threading.RLock()
        self._con = duckdb.connect()
        self._con.execute("set TimeZone = 'UTC'")
        for statement in _INFO_DDL:
            self._con.execute(statement)

    def close(self) -> None:
        self._con.close()

    def create_table(
        self, table_id: str, schema: list[dict[str, Any]] | pa.Schema, *, partitioned: bool = True
    ) -> None:
        """An empty table (ingestion-time partitioned by day unless ``partitioned`` is false).
        ``schema`` is BigQuery's JSON schema, or the Arrow schema of an export Parquet file."""
        if isinstance(schema, pa.Schema):
            schema = [schema_field(item) for item in schema]
        schema = normalize_schema(schema)
        with self._lock:
            duck = f"bq_{len(self.tables)}"
            columns = [pa.field(item["name"], arrow_type(item)) for item in schema]
            empty = pa.schema(columns).empty_table()
            self._con.register("bq_empty", empty)
            extra = ", cast(null as timestamptz) as _PARTITIONTIME" if partitioned else ""
            self._con.execute(f'create table "{duck}" as select *{extra} from bq_empty')
            self._con.unregister("bq_empty")
            self.tables[table_id] = Table(table_id, schema, duck, "TABLE", partitioned)
            self._describe(table_id, schema, "BASE TABLE", partitioned)

    def create_view(self, view_id: str, source_id: str) -> None:
        """A view selecting every column of ``source_id`` (so it has no _PARTITIONTIME)."""
        with self._lock:
            source = self.tables[source_id]
            duck = f"bq_{len(self.tables)}"
            names = ", ".join(f'"{item["name"]}"' for item in source.schema)
            self._con.execute(f'create view "{duck}" as select {names} from "{source.duck_name}"')
            self.tables[view_id] = Table(view_id, source.schema, duck, "VIEW", False)
            self._describe(view_id, source.schema, "VIEW", False)

    def insert_rows(self, table_id: str, rows: Iterable[dict[str, Any]], partition: date) -> int:
        """Append export rows (dicts, nested fields nested) to one daily partition."""
        table = self.tables[table_id]
        coerced = [coerce_row(row, table.schema) for row in rows]
        arrow_schema = pa.schema(
            [pa.field(item["name"], arrow_type(item)) for item in table.schema]
        )
        batch = pa.Table.from_pylist(coerced, schema=arrow_schema)
        names = ", ".join(f'"{item["name"]}"' for item in table.schema)
        with self._lock:
            self._con.register("bq_rows", batch)
            if table.partitioned:
                stamp = datetime.combine(partition, time(0), tzinfo=UTC)
                self._con.execute(
                    f'insert into "{table.duck_name}" ({names}, _PARTITIONTIME) '
                    f"select {names}, $stamp from bq_rows",
                    {"stamp": stamp},
                )
            else:
                self._con.execute(
                    f'insert into "{table.duck_name}" ({names}) select {names} from bq_rows'
                )
            self._con.unregister("bq_rows")
        return len(coerced)

    def insert_by_day(
        self,
        table_id: str,
        rows: Iterable[dict[str, Any]],
        day_of: Callable[[dict[str, Any]], date] | None = None,
    ) -> dict[date, int]:
        """Append rows each to its own partition: ``day_of(row)``, by default the UTC date of
        its usage_start_time (a partition's date is close to its rows' usage day)."""
        groups: dict[date, list[dict[str, Any]]] = {}
        for row in rows:
            day = day_of(row) if day_of else timestamp(row["usage_start_time"]).date()
            groups.setdefault(day, []).append(row)
        return {day: self.insert_rows(table_id, part, day) for day, part in sorted(groups.items())}

    def load_file(self, table_id: str, path: Path, partition: date | None = None) -> int:
        """Append an export file (Parquet, or newline-delimited JSON, gzipped or not) to one
        partition, or with ``partition=None`` each row to the day of its usage_start_time."""
        if path.suffix == ".parquet":
            rows = pq.read_table(path).to_pylist()
        else:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
        if partition is None:
            return sum(self.insert_by_day(table_id, rows).values())
        return self.insert_rows(table_id, rows, partition)

    def drop_partition(self, table_id: str, partition: date) -> None:
        """Delete one daily partition (as partition expiration does)."""
        table = self.tables[table_id]
        with self._lock:
            self._con.execute(
                f'delete from "{table.duck_name}" where cast(_PARTITIONTIME as date) = $day',
                {"day": partition},
            )

    def deny_dataset(self, dataset: str) -> None:
        """Queries reading ``project.dataset`` get 403 (no BigQuery Data Viewer there)."""
        self.denied_datasets.add(dataset)

    def execute(self, sql: str, params: dict[str, Any]) -> pa.Table:
        """Run one BigQuery query, translated to DuckDB, as BigQuery would answer or refuse it."""
        with self._lock:
            duck_sql = self._translate(sql)
            try:
                return self._con.sql(duck_sql, params=params).to_arrow_table()
            except duckdb.BinderException as error:
                name = re.search(r'column "?([\w.]+)"? not found', str(error), re.IGNORECASE)
                detail = name.group(1) if name else str(error)
                raise BigQueryError(400, "invalidQuery", f"Unrecognized name: {detail}") from error
            except duckdb.Error as error:
                raise BigQueryError(400, "invalidQuery", str(error)) from error

    def table_rows(self, table: Table) -> pa.Table:
        """Every row of a table, its own columns only."""
        names = ", ".join(f'"{item["name"]}"' for item in table.schema)
        with self._lock:
            return self._con.sql(f'select {names} from "{table.duck_name}"').to_arrow_table()

    def row_count(self, table: Table) -> int:
        with self._lock:
            return int(self._con.sql(f'select count(*) from "{table.duck_name}"').fetchall()[0][0])

    def _translate(self, sql: str) -> str:
        tree = sqlglot.parse_one(sql, read="bigquery")
        for node in list(tree.find_all(exp.Table)):
            replacement = self._table_sql(node)
            alias = node.alias or node.name.split(".")[-1]
            node.replace(
                exp.alias_(exp.Subquery(this=sqlglot.parse_one(replacement)), alias, quoted=True)
            )
        for node in tree.find_all(exp.DataType):
            if node.this == exp.DataType.Type.DECIMAL and not node.expressions:
                node.set(
                    "expressions", [exp.DataTypeParam(this=exp.Literal.number(n)) for n in (38, 9)]
                )
        return tree.sql("duckdb")

    def _table_sql(self, node: exp.Table) -> str:
        project, dataset, name = node.catalog, node.db, node.name
        if not project and "." in dataset:
            project, dataset = dataset.split(".", 1)
        if f"{project}.{dataset}" in self.denied_datasets:
            raise BigQueryError(
                403,
                "accessDenied",
                f"Access Denied: Table {project}:{dataset}.{name}: User does not have permission "
                f"to query table {project}:{dataset}.{name}, or perhaps it does not exist.",
            )
        if name.upper().startswith("INFORMATION_SCHEMA."):
            view = _INFO_VIEWS[name.split(".", 1)[1].upper()]
            if not any(key.startswith(f"{project}.{dataset}.") for key in self.tables):
                raise BigQueryError(
                    404, "notFound", f"Not found: Dataset {project}:{dataset} was not found"
                )
            return (
                f"select * from {view} where table_catalog = '{project}' "
                f"and table_schema = '{dataset}'"
            )
        table = self.tables.get(f"{project}.{dataset}.{name}")
        if table is None:
            raise BigQueryError(
                404,
                "notFound",
                f"Not found: Table {project}:{dataset}.{name} was not found in location US",
            )
        return f'select * from "{table.duck_name}"'

    def _describe(
        self, table_id: str, schema: list[dict[str, Any]], kind: str, partitioned: bool
    ) -> None:
        project, dataset, name = table_id.rsplit(".", 2)
        key = (project, dataset, name)
        self._con.execute(
            "insert into bq_info_tables values (?, ?, ?, ?, ?)", [*key, kind, datetime.now(UTC)]
        )
        for position, item in enumerate(schema, start=1):
            nullable = "NO" if item.get("mode") == "REQUIRED" else "YES"
            self._con.execute(
                "insert into bq_info_columns values (?, ?, ?, ?, ?, ?, ?, 'NO', 'NO')",
                [*key, item["name"], position, nullable, decode_schema_type(item)],
            )
            for path, data_type in _field_paths(item):
                self._con.execute(
                    "insert into bq_info_field_paths values (?, ?, ?, ?, ?, ?)",
                    [*key, item["name"], path, data_type],
                )
        if partitioned:
            for pseudo, data_type in (("_PARTITIONTIME", "TIMESTAMP"), ("_PARTITIONDATE", "DATE")):
                self._con.execute(
                    "insert into bq_info_columns values (?, ?, ?, ?, null, 'YES', ?, 'YES', 'YES')",
                    [*key, pseudo, data_type],
                )


def _field_paths(item: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    path = f"{prefix}{item['name']}"
    found = [(path, decode_schema_type(item))]
    for child in item.get("fields", []):
        found.extend(_field_paths(child, f"{path}."))
    return found
