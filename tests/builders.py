"""Builders for model tests: hand-made CUR lines and telemetry, and the whole DAG in DuckDB."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config.loader import Config, parse_config
from pipeline.dag.build import BuildReport, build
from pipeline.dag.models import Model, discover
from pipeline.dag.pools import pool_models
from pipeline.ingest.provider import FILE_ROWS, KEY_EPOCH, PERIOD_FILES
from pipeline.run.settings import write_period_settings, write_pool_settings
from pipeline.run.sources import register_sources
from pipeline.telemetry import canonical
from pipeline.warehouse.raw_store import Delivery
from schemas import aws_cur2

try:  # the [economics] constants table, while it is written apart from the pool settings
    from pipeline.run.settings import write_economics_settings
except ImportError:  # pragma: no cover
    write_economics_settings = None

PERIOD = "2026-10"
PERIOD_START = datetime(2026, 10, 1, tzinfo=UTC)
PERIOD_END = datetime(2026, 11, 1, tzinfo=UTC)
BASES = ("billed_cost", "effective_cost", "list_cost", "net_cost")
MODELS = ("marginal", "fully_loaded")
_CUR_COLUMNS = tuple(name for name, _ in aws_cur2.COLUMNS)
_CREATE_TABLE = re.compile(r"^create table (\w+)\.", re.IGNORECASE)


def at(hour: int, minute: int = 0, second: int = 0, day: int = 1) -> datetime:
    """A UTC instant in the test billing period (October 2026)."""
    return datetime(2026, 10, day, hour, minute, second, tzinfo=UTC)


def cur_line(**overrides: Any) -> dict[str, Any]:
    """One CUR 2.0 row with all 125 columns: an hour of EC2 usage on 2026-10-01 10:00, cost 0.

    ``resource_tags`` may be given as a dict; money and usage amounts are floats, as in the
    export.
    """
    line: dict[str, Any] = dict.fromkeys(_CUR_COLUMNS)
    line.update(
        bill_billing_period_start_date=PERIOD_START,
        bill_billing_period_end_date=PERIOD_END,
        bill_payer_account_id="111111111111",
        line_item_usage_account_id="222222222222",
        line_item_currency_code="USD",
        line_item_line_item_type="Usage",
        line_item_product_code="AmazonEC2",
        line_item_usage_start_date=at(10),
        line_item_usage_end_date=at(11),
        line_item_usage_amount=1.0,
        line_item_unblended_cost=0.0,
        pricing_unit="Hrs",
        resource_tags=[],
        product=[],
        cost_category=[],
        discount=[],
    )
    unknown = set(overrides) - set(_CUR_COLUMNS)
    if unknown:
        raise KeyError(f"not CUR 2.0 columns: {sorted(unknown)}")
    line.update(overrides)
    if isinstance(line["resource_tags"], Mapping):
        line["resource_tags"] = list(line["resource_tags"].items())
    return line


def write_cur(tmp_path: Path, lines: Sequence[Mapping[str, Any]]) -> list[Delivery]:
    """Write the lines as AWS delivers them: one delivery per billing period (the month of
    bill_billing_period_start_date, 2026-10 without one), each one Parquet file. Lines of one
    period keep their order: line i of a period is row i of its file (``line_id``)."""
    periods: dict[str, list[Mapping[str, Any]]] = {}
    for line in lines:
        start = line.get("bill_billing_period_start_date")
        periods.setdefault(start.strftime("%Y-%m") if start else PERIOD, []).append(line)
    deliveries = []
    for period, rows in sorted(periods.items()) or [(PERIOD, [])]:
        folder = tmp_path / "cur" if len(periods) <= 1 else tmp_path / "cur" / period
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "part-0.parquet"
        table = pa.Table.from_pylist([dict(row) for row in rows], schema=aws_cur2.arrow_schema())
        pq.write_table(table, path)
        deliveries.append(
            Delivery(
                provider="aws",
                export="ml-cur",
                billing_period=period,
                delivery_id="delivery-1" if len(periods) <= 1 else f"delivery-{period}",
                folder=folder,
                files=(path,),
                new=True,
            )
        )
    return deliveries


def line_id(row: int, period: str = PERIOD, source_range: int = 0, place: int = 0) -> int:
    """The line id of row ``row`` (from 0) of the file at ``place`` among the files of billing
    period ``period`` (YYYY-MM, or a GCP partition day YYYY-MM-DD) of source range
    ``source_range`` (0 AWS, 1 GCP, 2 FOCUS): the range times 2^56, plus the file index (the
    period's days from KEY_EPOCH times PERIOD_FILES, plus the place) times FILE_ROWS, plus the
    row."""
    day = int(period[8:10]) if len(period) == 10 else 1
    first = date(int(period[:4]), int(period[5:7]), day)
    file_index = (first - KEY_EPOCH).days * PERIOD_FILES + place
    return source_range * 2**56 + file_index * FILE_ROWS + row


def telemetry_table(name: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """A canonical telemetry table; columns a row leaves out are NULL (tags an empty map)."""
    schema = canonical.arrow_schema(name)
    filled = []
    for row in rows:
        unknown = set(row) - set(schema.names)
        if unknown:
            raise KeyError(f"not columns of {name}: {sorted(unknown)}")
        record = dict.fromkeys(schema.names)
        if "tags" in record:
            record["tags"] = []
        record.update(row)
        if isinstance(record.get("tags"), Mapping):
            record["tags"] = list(record["tags"].items())
        filled.append(record)
    return pa.Table.from_pylist(filled, schema=schema)


def attempts_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Canonical attempts; status defaults to succeeded."""
    return telemetry_table("attempts", [{"status": "succeeded", **row} for row in rows])


def resources_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Canonical attempt_resources."""
    return telemetry_table("attempt_resources", rows)


def experiments_table(rows: Iterable[Mapping[str, Any]] = ()) -> pa.Table:
    """Canonical experiments (empty by default)."""
    return telemetry_table("experiments", rows)


def events_table(rows: Iterable[Mapping[str, Any]] = ()) -> pa.Table:
    """Canonical attempt_events (empty by default)."""
    return telemetry_table("attempt_events", rows)


def make_config(tmp_path: Path, config: Config | Mapping[str, Any] | None = None) -> Config:
    """A Config from a runcost.toml-shaped dict (or the defaults)."""
    if isinstance(config, Config):
        return config
    return parse_config(dict(config or {}), base=tmp_path)


@cache
def sql_models() -> tuple[Model, ...]:
    """The SQL models of sql/, parsed once per test session."""
    return tuple(discover())


def model(qualified: str) -> Model:
    """One model of sql/ by its qualified name, such as checks.conservation."""
    for item in sql_models():
        if item.qualified == qualified:
            return item
    raise KeyError(qualified)


def build_models(
    tmp_path: Path,
    lines: Sequence[Mapping[str, Any]],
    attempts: pa.Table | Iterable[Mapping[str, Any]] = (),
    resources: pa.Table | Iterable[Mapping[str, Any]] = (),
    experiments: pa.Table | Iterable[Mapping[str, Any]] | None = None,
    config: Config | Mapping[str, Any] | None = None,
    deliveries: Sequence[Delivery] = (),
) -> tuple[duckdb.DuckDBPyConnection, BuildReport]:
    """Build every model (pools included) in an in-memory DuckDB, as a run does; ``deliveries``
    are registered beside the CUR lines (other providers' raw data)."""
    settings = make_config(tmp_path, config)
    telemetry = {
        "attempts": attempts if isinstance(attempts, pa.Table) else attempts_table(attempts),
        "attempt_resources": (
            resources if isinstance(resources, pa.Table) else resources_table(resources)
        ),
        "attempt_events": events_table(),
        "experiments": (
            experiments
            if isinstance(experiments, pa.Table)
            else experiments_table(experiments or ())
        ),
    }
    cur_deliveries = write_cur(tmp_path, lines)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    write_pool_settings(con, settings)
    if write_economics_settings is not None:
        write_economics_settings(con, settings)
    write_period_settings(con, settings)
    register_sources(con, [*cur_deliveries, *deliveries], telemetry)
    report = build(con, [*sql_models(), *pool_models(settings)])
    return con, report


def input_tables(statements: Iterable[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB in UTC with one model's inputs made by ``statements`` (`create table
    schema.name ...`), their schemas created first: a model's SQL runs on it alone."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    statements = list(statements)
    for schema in sorted({_CREATE_TABLE.match(text).group(1) for text in statements}):
        con.execute(f"create schema if not exists {schema}")
    for statement in statements:
        con.execute(statement)
    return con


def records(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[dict[str, Any]]:
    """Rows of a query as dicts."""
    cursor = con.execute(sql, list(params))
    columns = [item[0] for item in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def rebuild(con: duckdb.DuckDBPyConnection, qualified: str) -> None:
    """Re-create one model's table from its SQL (after a test changed its inputs)."""
    item = model(qualified)
    con.execute(f"create or replace {item.created_as} {item.qualified} as\n{item.sql}")


def lines_as_table(con: duckdb.DuckDBPyConnection) -> None:
    """Store normalized.cost_lines (a view of facts joined to profiles) as a table of whole lines,
    so a test can insert, update or delete lines; the models after it read the table."""
    con.execute("create or replace temp table whole_lines as select * from normalized.cost_lines")
    con.execute("drop view normalized.cost_lines")
    con.execute("create table normalized.cost_lines as select * from whole_lines")


def run_check(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    """The rows a check returns now (zero rows = pass)."""
    return records(con, f"select * from ({model('checks.' + name).sql})")


def hours(count: float) -> timedelta:
    """A timedelta of this many hours."""
    return timedelta(hours=count)


def dec(value: str | int) -> Decimal:
    """A Decimal at the scale SQL money has (10 decimals)."""
    return Decimal(value).quantize(Decimal("1e-10"))


def without_comments(sql: str) -> str:
    """The SQL with every `--` comment taken out, line by line."""
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def callers(call: str) -> list[str]:
    """The shipped models whose SQL, outside comments, holds ``call``, by name."""
    return sorted(
        model.qualified
        for model in discover()
        if model.path and call in without_comments(model.path.read_text("utf-8"))
    )


def ingest_with(entry: Any, config: Config, *args: Any, **kwargs: Any) -> Any:
    """Call a provider's ingest function (pipeline.ingest.<provider>.*) as a run does: with the
    provider's own settings and the run's ingest context, both from ``config``."""
    provider = entry.__module__.split(".")[2]
    return entry(config.providers[provider], config.ingest_context(), *args, **kwargs)
