"""DuckDBEngine: CREATE VIEW / CREATE TABLE on the run's build database, or Parquet it reads."""

from __future__ import annotations

import logging
import re
import shutil
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from pipeline.common.duck import literal, optimizer_disabled
from pipeline.common.errors import ModelError
from pipeline.dag.engines.base import CHECK_SAMPLE_ROWS, BuildOutcome, CheckResult
from pipeline.dag.engines.duckdb import carry as carried
from pipeline.dag.models import SOURCE_SCHEMAS
from pipeline.dag.partitions import auto_partitions, is_partitioned, pass_sql
from pipeline.warehouse.parquet import (
    OutsideCandidates,
    parquet_query,
    partition_values,
    sorted_values,
    write_parquet,
)
from pipeline.warehouse.snapshots import sql_path
from pipeline.warehouse.views import (
    PARTITION_COLUMN,
    TableContent,
    layout_path,
    typed_query,
    typed_select,
)

if TYPE_CHECKING:
    from pipeline.dag.models import Model

log = logging.getLogger("runcost")

# A build step is written once and read by a few later models of the same run, then deleted.
# As snappy Parquet it costs half the CPU of a table of the build database written in full
# (8.1-8.8 against 16.0-16.7 CPU s for the 10M benchmark's 8.5M attributed slices), a fifth
# less than zstd, and it leaves the buffer pool to the models: peak RSS 0.7 GB lower at 10M
# (docs/performance.md). Row groups of 30,000 rows instead of DuckDB's 122,880: at the memory
# per line of a 100M-line bill (10M lines at memory_limit=400MB) the 4M unattributed lines took
# 10.7-11.6 CPU s to write with the default and 4.3-4.4 with these; with memory to spare they
# cost the same or less (docs/performance.md)
STEP_OPTIONS = "format parquet, compression snappy, row_group_size 30000"


class DuckDBEngine:
    """Builds models with CREATE VIEW / CREATE TABLE on one DuckDB connection.

    With a ``scratch`` folder, a `-- materialized: parquet` model is written once, from its
    query, as the Parquet the snapshot publishes (under scratch/published, in the snapshot's
    layout), and the build reads it through a view: publish moves the files instead of copying
    a table (``published_files``). Without one, such a model is a table, as in tests.

    With a ``scratch`` folder, a `-- materialized: intermediate` model (a build step) is written
    as Parquet under scratch/steps, one file per pass, and read through a view; without one it
    is a table.

    A model partitioned by resource (pipeline.dag.partitions) is built in ``partitions`` passes,
    or, when that is None, in as many as its largest built input needs under memory_limit
    (``partitions_used`` records how many). A step the model names in `-- pass inputs:`, written
    in as many passes, is read in each pass from that pass's file alone. A model that says
    `-- joins: as written` runs its joins as its SQL writes them (``_joins_as_written``).
    """

    errors: tuple[type[BaseException], ...] = (duckdb.Error,)
    carries_periods = True

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        scratch: Path | None = None,
        partitions: int | None = None,
    ) -> None:
        self.con = con
        self.scratch = scratch
        self.partitions = partitions
        self.published_folder = scratch / "published" if scratch is not None else None
        self.published_files: dict[str, Path] = {}
        self.partitions_used: dict[str, int] = {}
        # the steps written in passes: name -> (passes, folder, columns)
        self.step_passes: dict[str, tuple[int, Path, tuple[tuple[str, str], ...]]] = {}
        # billing periods of each published model written (candidates for the models reading it)
        self.period_values: dict[str, list] = {}

    def load_inputs(self, con: duckdb.DuckDBPyConnection) -> None:
        """The models read the inputs where they are: in the build database."""

    def prepare(self, schemas: tuple[str, ...]) -> None:
        for schema in schemas:
            self.con.execute(f"create schema if not exists {schema}")

    def create(self, model: Model) -> None:
        if model.materialization == "parquet" and self.published_folder is not None:
            self.published_files[model.qualified] = self._write(model, self.published_folder)
            return
        if model.materialization == "intermediate" and self.scratch is not None:
            self._write_step(model, self.scratch / "steps" / model.qualified)
            return
        if is_partitioned(model.sql):
            self._create_in_passes(model)
            return
        with self._joins_as_written(model):
            self.con.execute(
                f"create or replace {model.created_as} {model.qualified} as\n{model.sql}"
            )

    def _passes(self, model: Model) -> int:
        """How many resource-hash passes a model takes: 1 unless its SQL is partitioned."""
        if not is_partitioned(model.sql):
            return 1
        # the inputs the run's models built (sources and staging views are not counted)
        built = sorted(
            name for name in model.inputs if name.split(".")[0] not in (*SOURCE_SCHEMAS, "staging")
        )
        count = self.partitions or auto_partitions(self.con, built)
        self.partitions_used[model.qualified] = count
        if count > 1:
            log.info(
                "%s built in %d resource-hash partitions",
                model.qualified,
                count,
                extra={"stage": "build"},
            )
        return count

    def _pass_sql(self, model: Model, count: int, partition: int) -> str:
        """One pass's SQL. A step the model names in `-- pass inputs:` (it reads the step only
        through in_resource_partition on the step's resource) and that was written in as many
        passes is read from this pass's file alone: the filter would keep no row of the other
        files, which every pass read again (about 7 CPU s a pass at 100M lines, performance.md)."""
        sql = pass_sql(model.sql, count, partition)
        for name in self._own_file_inputs(model, count):
            _, folder, columns = self.step_passes[name]
            own = literal(str(folder / f"pass_{partition}.parquet"))
            relation = f"({typed_select(self.con, f'select * from read_parquet({own})', columns)})"
            pattern = rf"(?<![\w.\"]){re.escape(name)}(?![\w\"])"
            sql = re.sub(pattern, lambda _, text=relation: text, sql)
        return sql

    def _own_file_inputs(self, model: Model, count: int) -> list[str]:
        """The steps of `-- pass inputs:` written in the same ``count`` passes (more than one):
        each pass reads its own file of them. With one pass, or another count, every file."""
        return [
            name
            for name in sorted(model.pass_inputs)
            if count > 1 and self.step_passes.get(name, (1,))[0] == count
        ]

    def _joins_as_written(self, model: Model) -> AbstractContextManager[None]:
        """A model that says `-- joins: as written` builds each join's table on its right-hand
        side, as its SQL writes it, in every pass: DuckDB's build-side optimizer off, restored
        after the model. For attribution.line_attributions it hashed the month's lines instead of
        the windows they meet in one pass, and in a pass reading its own windows (estimated far
        too low) turned the anti join with the tag-placed lines around: either way the slices came
        out in its hash table's order, at 10M lines in one pass 133 MB of Parquet against 61 and
        about 3 CPU s more (docs/performance.md). Such a model writes its large
        relation on the left of each join."""
        if model.joins_as_written:
            return optimizer_disabled(self.con, "build_side_probe_side")
        return nullcontext()

    def _create_in_passes(self, model: Model) -> None:
        """A table built one resource-hash partition at a time: the first pass creates it."""
        count = self._passes(model)
        with self._joins_as_written(model):
            for partition in range(count):
                sql = self._pass_sql(model, count, partition)
                if partition == 0:
                    self.con.execute(f"create or replace table {model.qualified} as\n{sql}")
                else:
                    self.con.execute(f"insert into {model.qualified}\n{sql}")

    def _write_step(self, model: Model, folder: Path) -> None:
        """A build step as Parquet, one file per pass, and a view of the build reading them."""
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        count = self._passes(model)
        # binding computes nothing: the columns and their types, the same in every pass
        bound = self.con.sql(pass_sql(model.sql, count, 0))
        columns = tuple(
            (str(name), str(kind)) for name, kind in zip(bound.columns, bound.types, strict=True)
        )
        with self._joins_as_written(model):
            for partition in range(count):
                query = parquet_query(f"(\n{self._pass_sql(model, count, partition)}\n)", columns)
                target = sql_path(folder.absolute() / f"pass_{partition}.parquet")
                self.con.execute(f"copy ({query}) to '{target}' ({STEP_OPTIONS})")
        self.step_passes[model.qualified] = (count, folder.absolute(), columns)
        files = f"select * from read_parquet({literal(str(folder.absolute() / '*.parquet'))})"
        query = typed_select(self.con, files, columns)
        self.con.execute(f"create or replace view {model.qualified} as {query}")

    def _write(self, model: Model, folder: Path) -> Path:
        """Write the model's rows once as published Parquet, one pass after another; the
        build's view reads them."""
        count = self._passes(model)
        with self._joins_as_written(model):
            return self._write_passes(model, folder, count)

    def _write_passes(self, model: Model, folder: Path, count: int) -> Path:
        sources = [f"(\n{self._pass_sql(model, count, k)}\n)" for k in range(count)]
        bound = self.con.sql(sources[0])  # binding computes nothing: the columns and types
        columns = tuple(
            (str(name), str(kind)) for name, kind in zip(bound.columns, bound.types, strict=True)
        )
        partitioned = PARTITION_COLUMN in bound.columns
        if not partitioned and count > 1:
            raise ModelError(
                f"{model.qualified}: a published model built in passes needs a "
                f"{PARTITION_COLUMN} column (each pass writes its own files of each period)"
            )
        # the periods of the published models it reads, when the model has a period column. One
        # (a night's usual) is written as the candidate: a row of another stops the write
        # (OutsideCandidates), so no query computes the periods first (1.5 CPU s for the 10M
        # benchmark's attributed slices). Several are checked first by a filter the scans push
        # down to the periods' files, so that each period's copy reads its own files. A row
        # outside them costs every pass's periods, computed: the model once more (7 CPU s for
        # the attributed slices)
        known = self._known_periods(model) if partitioned else []
        if len(known) == 1:
            try:
                return self._write_files(model, folder, sources, columns, known, candidates=True)
            except OutsideCandidates:
                shutil.rmtree(
                    folder / layout_path(model.qualified, partitioned=True), ignore_errors=True
                )
        elif known and not self._outside(sources, known):
            return self._write_files(model, folder, sources, columns, known)
        values = None
        if partitioned:
            values = sorted_values(
                {
                    value
                    for source in sources
                    for value in partition_values(self.con, source, PARTITION_COLUMN)
                }
            )
        return self._write_files(model, folder, sources, columns, values)

    def _write_files(
        self,
        model: Model,
        folder: Path,
        sources: list[str],
        columns: tuple[tuple[str, str], ...],
        values: list | None,
        candidates: bool = False,
    ) -> Path:
        """Write every pass (``sources``) into the model's files, partitioned by period when
        ``values`` (the periods, or with ``candidates`` what they should be) are given."""
        partition_by = PARTITION_COLUMN if values else None
        target = folder / layout_path(model.qualified, partitioned=partition_by is not None)
        rows = sum(
            write_parquet(
                self.con,
                source,
                columns,
                target,
                partition_by,
                values,
                f"part_{k}" if k else None,
                candidates,
            )
            for k, source in enumerate(sources)
        )
        if partition_by and not rows:  # no rows in any period: one file, as a model without any
            shutil.rmtree(target, ignore_errors=True)
            partition_by = None
            target = folder / layout_path(model.qualified, partitioned=False)
            write_parquet(self.con, sources[0], columns, target, None)
        self.period_values[model.qualified] = list(values or []) if partition_by else []
        table = TableContent(model.qualified, model.qualified, columns, rows, "", target)
        location = str(folder.absolute())
        query = typed_query(self.con, location, table)
        self.con.execute(f"create or replace view {model.qualified} as {query}")
        return target

    def _outside(self, sources: list[str], known: list) -> int:
        """How many rows of the passes ``sources`` fall outside the periods ``known``."""
        listed = ", ".join(literal(value) for value in known)
        return sum(
            self.con.execute(
                f'select count(*) from {source} where "{PARTITION_COLUMN}" is null or '
                f'"{PARTITION_COLUMN}"::varchar not in ({listed})'
            ).fetchone()[0]
            for source in sources
        )

    def _known_periods(self, model: Model) -> list:
        """The billing periods of the published models ``model`` reads (written before it)."""
        return sorted_values(
            {value for name in model.inputs for value in self.period_values.get(name, ())}
        )

    def check(self, model: Model) -> CheckResult | None:
        cursor = self.con.execute(f"select * from ({model.sql}) limit {CHECK_SAMPLE_ROWS}")
        rows = cursor.fetchall()
        if not rows:
            return None
        columns = [item[0] for item in cursor.description]
        total = self.con.execute(f"select count(*) from ({model.sql})").fetchone()[0]
        return CheckResult(columns, rows, total)

    def carry(
        self,
        model: Model,
        folder: Path,
        entry: dict,
        values: list[str],
        keyed: tuple[str, dict] | None = None,
    ) -> None:
        """The snapshot's Parquet of a model written as Parquet is hard-linked into its files;
        a table of the build reads the rows in (pipeline.dag.engines.duckdb.carry)."""
        name = model.qualified
        if keyed is not None:
            key, used = keyed
            carried.insert_keyed(self.con, name, folder, entry, key, (used, values))
        elif name in self.published_files and self.published_folder is not None:
            written = self.published_files[name]
            self.published_files[name] = carried.link_partitions(
                self.con, self.published_folder, written, name, folder, entry, values
            )
            self.period_values[name] = sorted({*self.period_values.get(name, ()), *values})
        else:
            carried.insert_partitions(self.con, name, folder, entry, values)

    def finish(
        self, con: duckdb.DuckDBPyConnection, models: list[Model], publish: bool = True
    ) -> BuildOutcome:
        """The models are relations of the build database already (tables, or views over the
        Parquet written for the snapshot): nothing to write, whether the checks passed or not."""
        return BuildOutcome(in_connection=True, published_files=dict(self.published_files))

    def close(self) -> None:
        return None
