"""Money beyond 10 decimal places is counted and logged, with the largest difference, on the
AWS, Google Cloud and FOCUS ingest paths."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from builders import ingest_with
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gcp_files import config, row, write_ndjson
from test_ingest_aws import EXPORT, config_for, cur_table, write_export

from pipeline.ingest.aws.cur2 import ingest_aws_exports
from pipeline.ingest.gcp.files import ingest_gcp_files
from pipeline.ingest.precision import may_round, rounding


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


def test_decimal_money_is_counted_by_its_digits_beyond_the_tenth() -> None:
    """FOCUS money is typed DECIMAL(38, 18): compared with itself rounded, not read as text."""
    con = duckdb.connect()
    con.execute(
        "create table t as select d::decimal(38, 18) as d, d::decimal(18, 4) as narrow from "
        "(values ('0.1'), ('-1.00000000005'), ('0.123456789012345678'), ('12.3400000000'), "
        "(null)) as v(d)"
    )
    assert may_round("d", "DECIMAL(38,18)") == "(d is not null and d <> round(d, 10))"
    assert may_round("narrow", "DECIMAL(18,4)") == "false"
    assert rounding(con, "t", ["d"]) == (2, Decimal("0.000000000050"))
    assert rounding(con, "t", ["narrow"]) == (0, None)
    texts = "(select d::varchar as d from t)"
    assert rounding(con, "t", ["d"]) == rounding(con, texts, ["d"])


@pytest.mark.parametrize(
    "kind",
    [
        pa.float64(),
        # text money is not flagged by the bad-value scan: the note reads all of it
        pa.string(),
    ],
)
def test_aws_money_beyond_10_decimals_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: pa.DataType
) -> None:
    table = cur_table(rows=3)
    costs = pa.array([0.5, 0.123456789012, 1.00000000004], pa.float64()).cast(kind)
    table = table.set_column(
        table.schema.get_field_index("line_item_unblended_cost"), "line_item_unblended_cost", costs
    )
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": table})
    with caplog.at_level(logging.INFO, logger="runcost"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert (
        "2 money values carry more than 10 decimal places (largest rounding difference "
        "0.00000000004)" in caplog.text  # 1.00000000004 (0.123456789012 is off by 1.2e-11)
    )


def test_aws_money_of_10_decimals_or_fewer_is_not_noted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bad-value scan flags no value of this delivery, so the note reads nothing."""
    from pipeline.ingest.aws import validate as cur_validate

    table = cur_table(rows=3)
    costs = pa.array([0.5, 0.1234567891, 12345678.25], pa.float64())
    table = table.set_column(
        table.schema.get_field_index("line_item_unblended_cost"), "line_item_unblended_cost", costs
    )
    root = write_export(tmp_path / "exports" / EXPORT, {"a.parquet": table})
    noted: list[str] = []
    monkeypatch.setattr(cur_validate, "note_rounding", lambda *args: noted.append(args[-1]))
    with caplog.at_level(logging.INFO, logger="runcost"):
        ingest_with(ingest_aws_exports, config_for(tmp_path, root))
    assert noted == [] and "decimal places" not in caplog.text


def test_gcp_money_and_credits_beyond_10_decimals_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    credits = [{"name": "Promo", "amount": "-0.12345678901234", "type": "PROMOTION"}]
    write_ndjson(tmp_path / "gcp" / "a.json", [row(), row(cost=0.350000000001, credits=credits)])
    with caplog.at_level(logging.INFO, logger="runcost"):
        ingest_with(ingest_gcp_files, config(tmp_path, "gcp/*.json"))
    assert (
        "a.json: 2 money values carry more than 10 decimal places (largest rounding "
        "difference 0.00000000001234)" in caplog.text
    )


# DOUBLEs a bill carries: cents and fractions of them, long decimals, large amounts, values
# next to the 2^18 bound of decimal_of_double and the 1e8 bound of the filter's DECIMAL(18, 10),
# and any finite DOUBLE of a plausible size
MONEY_DOUBLES = st.one_of(
    st.decimals(min_value=-(10**9), max_value=10**9, places=10).map(float),
    st.decimals(min_value=-(10**6), max_value=10**6, places=4).map(float),
    st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False),
    st.floats(min_value=262143.0, max_value=262145.0),
    st.floats(min_value=99999999.0, max_value=100000001.0),
    st.decimals(min_value=99999999, max_value=100000001, places=10).map(float),
    st.floats(min_value=-1e-6, max_value=1e-6),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(MONEY_DOUBLES, min_size=1, max_size=200))
def test_the_cheap_filter_counts_what_the_text_counts(amounts: list[float]) -> None:
    con = duckdb.connect()
    con.execute("create table t (d double)")
    con.executemany("insert into t values (?)", [[amount] for amount in amounts])
    # the same value as VARCHAR takes no filter: every row is read through its text
    texts = "(select cast(d as varchar) as d from t)"
    assert rounding(con, "t", ["d"]) == rounding(con, texts, ["d"])
