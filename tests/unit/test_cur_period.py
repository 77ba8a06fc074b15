"""A CUR file's lines belong to the period it is delivered under: staging reads their billing
period from the delivery, so ingest refuses a file whose bill_billing_period_start_date is of
another month, whether the footer's statistics or only the column itself say so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.common.errors import InputError
from pipeline.ingest.aws.validate import check_period

COLUMN = "bill_billing_period_start_date"
OCTOBER = datetime(2026, 10, 1, tzinfo=UTC)
SEPTEMBER = datetime(2026, 9, 1, tzinfo=UTC)


def _file(tmp_path: Path, starts: list, statistics: bool) -> Path:
    path = tmp_path / "part-0.parquet"
    table = pa.table({COLUMN: pa.array(starts, pa.timestamp("ms", tz="UTC"))})
    pq.write_table(table, path, write_statistics=statistics, row_group_size=2)
    return path


def _check(path: Path) -> None:
    check_period(path, pq.read_metadata(path), "cur/part-0.parquet", "2026-10")


@pytest.mark.parametrize("statistics", [True, False], ids=["footer", "no-statistics"])
def test_lines_of_the_delivered_period_pass(tmp_path, statistics):
    _check(_file(tmp_path, [OCTOBER, OCTOBER, None, OCTOBER], statistics))


@pytest.mark.parametrize("statistics", [True, False], ids=["footer", "no-statistics"])
def test_lines_of_another_period_are_refused(tmp_path, statistics):
    path = _file(tmp_path, [SEPTEMBER, SEPTEMBER, SEPTEMBER], statistics)
    assert pq.read_metadata(path).row_group(0).column(0).is_stats_set is statistics

    with pytest.raises(InputError) as error:
        _check(path)

    message = str(error.value)
    assert message.startswith("cur/part-0.parquet: its rows are for billing period 2026-09")
    assert "delivered under BILLING_PERIOD=2026-10" in message


@pytest.mark.parametrize("statistics", [True, False], ids=["footer", "no-statistics"])
def test_a_file_of_two_periods_is_refused(tmp_path, statistics):
    """The September line is in the second row group: every group is read."""
    with pytest.raises(InputError, match=r"several billing periods \(2026-09, 2026-10\)"):
        _check(_file(tmp_path, [OCTOBER, OCTOBER, SEPTEMBER], statistics))


def test_a_file_whose_periods_are_all_null_passes(tmp_path):
    """No period to compare: its lines take the delivery's."""
    _check(_file(tmp_path, [None, None], statistics=False))
