"""Money beyond 10 decimal places is counted and logged, with the largest difference, on the
AWS, Google Cloud and FOCUS ingest paths."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from test_gcp_files import config, row, write_ndjson
from test_ingest_aws import EXPORT, config_for, cur_table, write_export

from pipeline.ingest.aws_cur2 import ingest_aws_exports
from pipeline.ingest.gcp_files import ingest_gcp_files
from pipeline.ingest.precision import rounding


def test_rounding_counts_values_by_their_text_and_finds_the_largest_difference() -> None:
    con = duckdb.connect()
    con.execute(
        "create table t as select * from (values (0.1::double, '0.12345678901234'), "
        "(0.30000000000000004::double, '1.00000000005'), (2.5::double, null)) as v(d, s)"
    )
    assert rounding(con, "t", ["d"]) == (1, Decimal("0.00000000000000004"))
    assert rounding(con, "t", ["s"]) == (2, Decimal("0.00000000005"))
    assert rounding(con, "t", ["d", "s"])[0] == 3
    assert rounding(con, "t", []) == (0, None)


def test_aws_money_beyond_10_decimals_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table = cur_table(rows=3)
    costs = pa.array([0.5, 0.123456789012, 1.00000000004], pa.float64())
    table = table.set_column(
        table.schema.get_field_index("line_item_unblended_cost"), "line_item_unblended_cost", costs
    )
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": table})
    with caplog.at_level(logging.INFO, logger="runcost"):
        ingest_aws_exports(config_for(tmp_path, root))
    assert (
        "2 money values carry more than 10 decimal places (largest rounding difference "
        "0.00000000004)" in caplog.text  # 1.00000000004 (0.123456789012 is off by 1.2e-11)
    )


def test_gcp_money_and_credits_beyond_10_decimals_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    credits = [{"name": "Promo", "amount": "-0.12345678901234", "type": "PROMOTION"}]
    write_ndjson(tmp_path / "gcp" / "a.json", [row(), row(cost=0.350000000001, credits=credits)])
    with caplog.at_level(logging.INFO, logger="runcost"):
        ingest_gcp_files(config(tmp_path, "gcp/*.json"))
    assert (
        "a.json: 2 money values carry more than 10 decimal places (largest rounding "
        "difference 0.00000000001234)" in caplog.text
    )
